// Sweeps: size ranges and their errors, the knee finder, byte/FLOP accounting, the runner, and the
// plausibility checks on synthetic bandwidth records.
#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/sweep.hpp"
#include "usage_message.hpp"

using namespace ridge;
using Sizes = std::vector<std::int64_t>;

namespace {

// The UsageError message for `spec`, or a failure when it parses.
std::string size_error(const std::string& spec) {
  try {
    parse_sizes(spec);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << spec << "' should not parse";
  return "";
}

Record synthetic(double bytes, double median_ms, double working_set, std::vector<double> samples = {}) {
  Record r;
  r.name = "bandwidth.add";
  r.method = Method::graph_replay;
  r.dtype = DType::fp32;
  r.bytes = bytes;
  r.flops = bytes / 12;
  r.params = {{"n", bytes / 12}, {"working_set_bytes", working_set}};
  r.samples_ms = samples.empty() ? std::vector<double>(20, median_ms) : samples;
  finalize(r);
  return r;
}

bool has_warning(const std::vector<std::string>& warnings, const std::string& prefix) {
  for (const auto& w : warnings)
    if (w.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST(SizeRanges, ListsAndPowers) {
  EXPECT_EQ(parse_sizes("256,512,1024"), (Sizes{256, 512, 1024}));
  EXPECT_EQ(parse_sizes(" 2^20 , 3^2 "), (Sizes{1 << 20, 9}));
  EXPECT_EQ(parse_sizes("1024,1024,4096"), (Sizes{1024, 4096})) << "duplicates are dropped";
  // Found reading the parser for its fuzz target: 1^E multiplied E times (a hang for E near 2^63). Now 1 at once.
  EXPECT_EQ(parse_sizes("1^9223372036854775807"), (Sizes{1}));
  EXPECT_EQ(parse_sizes("1^0,1^5:2^2"), (Sizes{1, 2, 4}));
}

TEST(SizeRanges, PowerRangeWithBareFactor) {
  const Sizes s = parse_sizes("2^10:2^28:2");
  ASSERT_EQ(s.size(), 19u);
  EXPECT_EQ(s.front(), 1 << 10);
  EXPECT_EQ(s[1], 1 << 11);
  EXPECT_EQ(s.back(), 1 << 28);
  EXPECT_EQ(parse_sizes("2^10:2^28:4").size(), 10u);
}

TEST(SizeRanges, ExplicitFactorAdditiveAndDefaultStep) {
  EXPECT_EQ(parse_sizes("256:8192:x2"), (Sizes{256, 512, 1024, 2048, 4096, 8192}));
  EXPECT_EQ(parse_sizes("1024:4096:+1024"), (Sizes{1024, 2048, 3072, 4096}));
  EXPECT_EQ(parse_sizes("256:1024"), (Sizes{256, 512, 1024}));
  EXPECT_EQ(parse_sizes("256:1000:x2"), (Sizes{256, 512})) << "never past the end";
  EXPECT_EQ(parse_sizes("100:100:+5"), (Sizes{100}));
  EXPECT_EQ(parse_sizes("64,256:1024:x4"), (Sizes{64, 256, 1024}));
}

TEST(SizeRanges, ClearErrors) {
  EXPECT_NE(size_error("").find("empty"), std::string::npos);
  EXPECT_NE(size_error("abc").find("'abc'"), std::string::npos);
  EXPECT_NE(size_error("0").find("> 0"), std::string::npos);
  EXPECT_NE(size_error("-5").find("> 0"), std::string::npos);
  EXPECT_NE(size_error("0:1024").find("> 0"), std::string::npos);
  EXPECT_NE(size_error("2^28:2^10").find("before it starts"), std::string::npos);
  EXPECT_NE(size_error("1:10:0").find("must be > 0"), std::string::npos);
  EXPECT_NE(size_error("1:10:+0").find("must be > 0"), std::string::npos);
  EXPECT_NE(size_error("1:10:x1").find(">= 2"), std::string::npos);
  EXPECT_NE(size_error("1:10:xx").find("not a number"), std::string::npos);
  EXPECT_NE(size_error("1:2:3:4").find("START:END"), std::string::npos);
  EXPECT_NE(size_error("2^").find("power"), std::string::npos);
  EXPECT_NE(size_error("2^x").find("power"), std::string::npos);
  EXPECT_NE(size_error("1,,2").find("empty item"), std::string::npos);
  EXPECT_NE(size_error("2^70").find("too large"), std::string::npos);
  EXPECT_NE(size_error("1:100000:+1").find("more than"), std::string::npos);
  EXPECT_NE(size_error("12abc").find("not a size"), std::string::npos);
}

TEST(SizeRanges, ListsAndShapes) {
  EXPECT_EQ(parse_list("add, copy,add", "ops"), (std::vector<std::string>{"add", "copy"}));
  EXPECT_THROW(parse_list("", "ops"), UsageError);
  EXPECT_THROW(parse_list("add,,copy", "ops"), UsageError);
  const auto shapes = parse_shapes("128,4096,4096; 2^12");
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].m, 128);
  EXPECT_EQ(shapes[0].n, 4096);
  EXPECT_EQ(shapes[1].k, 4096);
  EXPECT_THROW(parse_shapes("1,2"), UsageError);
  EXPECT_THROW(parse_shapes("1,0,3"), UsageError);
  EXPECT_THROW(parse_shapes(";"), UsageError);
}

TEST(Knee, InterpolatesInLogSize) {
  // 30% of 100 lies halfway (in rate) between 10 at 1024 and 50 at 4096: halfway in log size = 2048.
  const std::vector<RatePoint> pts{{1024, 10}, {4096, 50}, {16384, 95}};
  ASSERT_TRUE(find_knee(pts, 100, 0.3).has_value());
  EXPECT_NEAR(*find_knee(pts, 100, 0.3), 2048, 1e-6);
  // 70%: between 50 at 4096 and 95 at 16384, t = 20/45.
  EXPECT_NEAR(*find_knee(pts, 100, 0.7), std::exp(std::log(4096.0) + 20.0 / 45 * std::log(4.0)), 1e-6);
  // Exactly on a measured point.
  EXPECT_NEAR(*find_knee(pts, 100, 0.5), 4096, 1e-9);
}

TEST(Knee, EdgesAndOrder) {
  const std::vector<RatePoint> unsorted{{16384, 95}, {1024, 10}, {4096, 50}};
  EXPECT_NEAR(*find_knee(unsorted, 100, 0.3), 2048, 1e-6) << "points are sorted by size first";
  EXPECT_EQ(*find_knee(unsorted, 100, 0.05), 1024) << "already reached at the first size";
  EXPECT_FALSE(find_knee(unsorted, 100, 0.96).has_value()) << "never reached";
  EXPECT_FALSE(find_knee({}, 100, 0.7).has_value());
  // The first crossing counts, even when a later point dips below again.
  const std::vector<RatePoint> dip{{1, 10}, {2, 80}, {4, 60}, {8, 90}};
  EXPECT_NEAR(*find_knee(dip, 100, 0.7), std::exp(std::log(1.0) + 60.0 / 70 * std::log(2.0)), 1e-9);
  EXPECT_THROW(find_knee(dip, 0, 0.7), UsageError);
  EXPECT_THROW(find_knee(dip, 100, 0), UsageError);
  const auto knees = find_knees(dip, 100);
  ASSERT_EQ(knees.size(), 2u);
  EXPECT_DOUBLE_EQ(knees[0].fraction, 0.7);
  EXPECT_DOUBLE_EQ(knees[1].fraction, 0.9);
  EXPECT_NEAR(*knees[1].size, 8, 1e-9);
}

TEST(Accounting, BytesAndFlopsPerOpFp32) {
  EXPECT_EQ(stream_bytes_per_element(StreamOp::add), 12);  // read 8, write 4
  EXPECT_EQ(stream_bytes_per_element(StreamOp::copy), 8);
  EXPECT_EQ(stream_bytes_per_element(StreamOp::scale), 8);
  EXPECT_EQ(stream_bytes_per_element(StreamOp::triad), 12);
  EXPECT_EQ(stream_bytes_per_element(StreamOp::read), 4);
  EXPECT_EQ(stream_flops_per_element(StreamOp::add), 1);
  EXPECT_EQ(stream_flops_per_element(StreamOp::copy), 0);
  EXPECT_EQ(stream_flops_per_element(StreamOp::scale), 1);
  EXPECT_EQ(stream_flops_per_element(StreamOp::triad), 2);
  EXPECT_EQ(stream_flops_per_element(StreamOp::read), 1);
  EXPECT_DOUBLE_EQ(stream_bytes(StreamOp::add, 1 << 28), 12.0 * (1 << 28));
  EXPECT_DOUBLE_EQ(stream_flops(StreamOp::triad, 1000), 2000);
  // The intensity of x + y: 1/12 FLOP per byte.
  EXPECT_DOUBLE_EQ(stream_flops(StreamOp::add, 4096) / stream_bytes(StreamOp::add, 4096), 1.0 / 12);
  EXPECT_THROW(stream_bytes(StreamOp::add, 0), UsageError);
}

TEST(Accounting, PerDtypeAndWorkingSet) {
  EXPECT_EQ(stream_bytes_per_element(StreamOp::add, DType::bf16), 6);
  EXPECT_EQ(stream_bytes_per_element(StreamOp::add, DType::fp64), 24);
  EXPECT_EQ(stream_bytes_per_element(StreamOp::copy, DType::fp8_e4m3), 2);
  EXPECT_EQ(stream_bytes_per_element(StreamOp::read, DType::fp16), 2);
  EXPECT_DOUBLE_EQ(stream_working_set_bytes(StreamOp::add, 1 << 20), 12.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(stream_working_set_bytes(StreamOp::read, 1 << 20, DType::bf16), 2.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(matmul_working_set_bytes(4096, 4096, 4096, 2, 2), 3.0 * 4096 * 4096 * 2);
  EXPECT_DOUBLE_EQ(matmul_working_set_bytes(128, 4096, 4096, 1, 2), (128.0 * 4096 + 4096.0 * 4096) + 128.0 * 4096 * 2);
  EXPECT_EQ(stream_op_from_string("sum"), StreamOp::read);
  EXPECT_THROW(stream_op_from_string("fma"), UsageError);
  for (StreamOp op : all_stream_ops()) EXPECT_EQ(stream_op_from_string(to_string(op)), op);
}

TEST(Plausibility, BandwidthAboveTheDatasheetIsImpossible) {
  const DeviceCeilings h200{.source_text = "datasheet H200", .memory_bytes_per_s = 4.8e12, .peak_flops_per_s = {{"fp32", 67e12}}};
  const double bytes = 12.0 * (1 << 28);  // x + y at 2^28: 3.2 GB
  Record fast = synthetic(bytes, 0.5, bytes);  // 6.4 TB/s
  EXPECT_TRUE(has_warning(add_plausibility_warnings(fast, h200, 50e6), "impossible"));
  Record honest = synthetic(bytes, 0.77, bytes);  // 4.18 TB/s
  EXPECT_FALSE(has_warning(add_plausibility_warnings(honest, h200, 50e6), "impossible"));
}

TEST(Plausibility, CacheResidentAndSpreadAreFlagged) {
  const double bytes = 12.0 * (1 << 20);  // 12.6 MB: inside a 50 MB L2
  Record hot = synthetic(bytes, 0.002, bytes);
  EXPECT_TRUE(has_warning(add_plausibility_warnings(hot, std::nullopt, 50e6), "cache-resident"));
  Record cold = synthetic(bytes, 0.004, bytes);
  cold.l2_flushed = true;
  EXPECT_FALSE(has_warning(add_plausibility_warnings(cold, std::nullopt, 50e6), "cache-resident"));
  Record noisy = synthetic(bytes, 0, bytes * 10, {1, 1, 1, 2, 1, 3, 1, 1, 1, 1});
  EXPECT_TRUE(has_warning(add_plausibility_warnings(noisy, std::nullopt, 50e6), "high spread"));
  Record moved = synthetic(bytes, 0.01, bytes * 10);
  moved.clocks_start.sm_mhz = 1980;
  moved.clocks_end.sm_mhz = 1400;
  EXPECT_TRUE(has_warning(add_plausibility_warnings(moved, std::nullopt, 0), "clocks moved"));
}

TEST(Methods, AutoPicksLaunchFreeForShortOps) {
  EXPECT_EQ(auto_method(0.002), Method::graph_replay);
  EXPECT_EQ(auto_method(0.9), Method::graph_replay);
  EXPECT_EQ(auto_method(1.5), Method::cuda_events);
  EXPECT_EQ(auto_method(0.5, 0.1), Method::cuda_events);
  EXPECT_FALSE(parse_method_option("auto").has_value());
  EXPECT_EQ(parse_method_option("graph"), Method::graph_replay);
  EXPECT_EQ(parse_method_option("spin"), Method::spin_hold);
  EXPECT_THROW(parse_method_option("fast"), UsageError);
}

TEST(Methods, OptionTextIsTheInverseOfParsing) {
  EXPECT_EQ(method_option_text(std::nullopt), "auto");
  for (Method m : {Method::graph_replay, Method::cuda_events, Method::spin_hold, Method::wall_sync})
    EXPECT_EQ(parse_method_option(method_option_text(m)), m);
}

// The CLI shows an option struct's default sizes as sizes_text; parse_sizes must read it back.
TEST(SizeRanges, TextReadsBackToTheSameSizes) {
  EXPECT_EQ(sizes_text(parse_sizes("2^10:2^28:2")), "2^10:2^28:x2");
  EXPECT_EQ(sizes_text(parse_sizes("256:8192:x2")), "256:8192:x2");
  EXPECT_EQ(sizes_text(parse_sizes("1024:4096:+1024")), "1024:4096:+1024");
  EXPECT_EQ(sizes_text({512, 2048}), "512,2048");
  EXPECT_EQ(sizes_text({8, 4096, 1000000, 1 << 26}), "8,4096,1000000,67108864");
  EXPECT_EQ(sizes_text(parse_sizes("2^3:2^29:4")), "2^3:2^29:x4");
  for (const Sizes& s : {Sizes{8, 32, 128}, Sizes{3, 5, 9}, Sizes{1, 2, 3, 4}, Sizes{7}, Sizes{1 << 20, 1 << 10}})
    EXPECT_EQ(parse_sizes(sizes_text(s)), s) << sizes_text(s);
  EXPECT_EQ(geometric_sizes(256, 8192, 2), parse_sizes("256:8192:x2"));
  EXPECT_EQ(geometric_sizes(256, 1000, 2), (Sizes{256, 512})) << "never past the end";
  EXPECT_EQ(geometric_sizes(1, std::int64_t{1} << 62, 2).size(), 63u) << "no overflow at the top";
  EXPECT_THROW(geometric_sizes(0, 8, 2), UsageError);
  EXPECT_THROW(geometric_sizes(8, 4, 2), UsageError);
  EXPECT_THROW(geometric_sizes(1, 8, 1), UsageError);
}

TEST(SizeRanges, ValidateNamesTheField) {
  EXPECT_NO_THROW(validate_sizes({1, 2}, "sizes"));
  for (const Sizes& bad : {Sizes{}, Sizes{4, 0}, Sizes{-3}})
    EXPECT_TRUE(test_support::starts_with(test_support::usage_message([&] { validate_sizes(bad, "sizes"); }), "sizes: "));
  EXPECT_EQ(without_repeats(Sizes{4, 1, 4, 2, 1}), (Sizes{4, 1, 2}));
}

TEST(Runner, PointsAreTheProductWithSizesInnermost) {
  const auto pts = sweep_points({"add", "copy"}, {"scalar", "vec4"}, {"fp32"}, {1024, 4096, 16384});
  ASSERT_EQ(pts.size(), 12u);
  EXPECT_EQ(pts[0].op, "add");
  EXPECT_EQ(pts[0].variant, "scalar");
  EXPECT_EQ(pts[2].size, 16384);
  EXPECT_EQ(pts[3].variant, "vec4");
  EXPECT_EQ(pts[6].op, "copy");
  for (std::size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i].index, i);
  const auto square = sweep_points({}, {}, {"bf16"}, {256, 512});
  ASSERT_EQ(square.size(), 2u);
  EXPECT_EQ(square[1].shape.m, 512);
  EXPECT_EQ(square[1].shape.k, 512);
}

TEST(Runner, StreamsEachRecordAsItCompletes) {
  const auto pts = sweep_points({"add"}, {"vec4"}, {}, {1, 2, 3, 4});
  std::vector<std::size_t> measured_before_callback;
  std::size_t measured = 0;
  std::vector<std::size_t> progress_seen;
  const auto records = run_sweep(
      pts,
      [&](const SweepPoint& p) {
        ++measured;
        Record r;
        r.name = p.op;
        r.params["n"] = p.size;
        return r;
      },
      [&](const Record& r) {
        // The callback sees record i right after point i is measured, not at the end.
        measured_before_callback.push_back(measured);
        EXPECT_EQ(r.params["n"].get<std::int64_t>(), static_cast<std::int64_t>(measured));
      },
      [&](std::size_t index, std::size_t total, const std::string& what) {
        EXPECT_EQ(total, 4u);
        EXPECT_NE(what.find("add vec4"), std::string::npos);
        progress_seen.push_back(index);
      });
  EXPECT_EQ(records.size(), 4u);
  EXPECT_EQ(measured_before_callback, (std::vector<std::size_t>{1, 2, 3, 4}));
  EXPECT_EQ(progress_seen, (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(Runner, ErrorsStopTheSweep) {
  const auto pts = sweep_points({}, {}, {}, {1, 2, 3});
  int calls = 0;
  EXPECT_THROW(run_sweep(pts,
                         [&](const SweepPoint& p) -> Record {
                           ++calls;
                           if (p.size == 2) throw VerificationError("wrong output");
                           return Record{};
                         }),
               VerificationError);
  EXPECT_EQ(calls, 2);
}

TEST(Runner, SizeLabels) {
  EXPECT_EQ(size_label(1 << 28), "2^28");
  EXPECT_EQ(size_label(1024), "2^10");
  EXPECT_EQ(size_label(512), "512");
  EXPECT_EQ(size_label(3000), "3000");
}
