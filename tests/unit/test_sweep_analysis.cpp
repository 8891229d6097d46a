// The analyses behind `ridge bandwidth`, `ridge matmul` and `ridge timing`, on synthetic records:
// curves, launch-bound ranges, knees, best variants, findings, roofline placement, the
// impossible-reading flag. No GPU needed.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "ridge/bandwidth.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/matmul.hpp"
#include "ridge/timing.hpp"
#include "usage_message.hpp"

using namespace ridge;
using ridge::test_support::starts_with;
using ridge::test_support::usage_message;

namespace {

// A streaming record at n elements moving its bytes at `gb_per_s`.
Record stream_record(StreamOp op, StreamVariant variant, std::int64_t n, double gb_per_s) {
  Record r;
  r.name = "bandwidth." + to_string(op);
  r.method = Method::graph_replay;
  r.dtype = DType::fp32;
  r.params = stream_params(StreamPoint{op, variant, n}, false);
  r.bytes = stream_bytes(op, n);
  r.flops = stream_flops(op, n);
  r.samples_ms = std::vector<double>(10, r.bytes / (gb_per_s * 1e9) * 1e3);
  finalize(r);
  return r;
}

// The ceilings a sweep compares with: a datasheet entry "Synthetic" (memory bandwidth and FP32
// peak) and, when measured_bandwidth > 0, measured ceilings with that HBM bandwidth.
CeilingsLookup synthetic_lookup(double datasheet_bandwidth, double datasheet_fp32, double measured_bandwidth) {
  CeilingsLookup c;
  c.datasheet.emplace();
  c.datasheet->name = "Synthetic";
  c.datasheet->ceilings.memory_bytes_per_s = datasheet_bandwidth;
  c.datasheet->ceilings.peak_flops_per_s["fp32"] = datasheet_fp32;
  if (measured_bandwidth > 0) {
    c.measured.emplace();
    c.measured->ceilings.source = CeilingsSource::measured;
    c.measured->ceilings.memory_bytes_per_s = measured_bandwidth;
    c.measured->hbm_kernel = "copy";
  }
  return c;
}

BandwidthSetup h200_like_setup(bool with_measured) {
  BandwidthSetup setup;
  setup.plan = plan_bandwidth_sweep(BandwidthSweepOptions{.ops = {StreamOp::add},
                                                          .variants = {StreamVariant::scalar, StreamVariant::vec4},
                                                          .sizes = geometric_sizes(1 << 10, 1 << 28, 4)});
  setup.device.name = "Synthetic GPU";
  setup.device.l2_bytes = 60'000'000;
  setup.ceilings = synthetic_lookup(4.8e12, 67e12, with_measured ? 4.2e12 : 0);
  return setup;
}

// Rates that rise with size: launch-bound below 2^16 (empty launch 3 us), then filling the chip.
BandwidthSweep synthetic_bandwidth_sweep(bool with_measured) {
  BandwidthSweep s;
  s.setup = h200_like_setup(with_measured);
  const double empty_ms = 0.003;
  for (auto variant : {StreamVariant::scalar, StreamVariant::vec4})
    for (int e = 10; e <= 28; e += 2) {
      const std::int64_t n = std::int64_t{1} << e;
      // The time is the empty launch plus the bytes at the top rate (vec4 a little faster).
      const double top = variant == StreamVariant::vec4 ? 4.1e12 : 3.5e12;
      const double ms = empty_ms + stream_bytes(StreamOp::add, n) / top * 1e3;
      Record r = stream_record(StreamOp::add, variant, n, stream_bytes(StreamOp::add, n) / (ms * 1e-3) / 1e9);
      annotate_stream_record(r, empty_ms, s.setup.ceilings, double(s.setup.device.l2_bytes), false);
      s.records.push_back(r);
    }
  analyze_bandwidth_sweep(s);
  return s;
}

bool any_finding_contains(const std::vector<Finding>& findings, const std::string& text) {
  for (const auto& f : findings)
    if (f.text.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(RecordParams, StreamPointRoundTrips) {
  const Record r = stream_record(StreamOp::triad, StreamVariant::grid_stride, 1 << 20, 100);
  const StreamPoint p = stream_point(r);
  EXPECT_EQ(p.op, StreamOp::triad);
  EXPECT_EQ(p.variant, StreamVariant::grid_stride);
  EXPECT_EQ(p.n, 1 << 20);
  EXPECT_EQ(int_param(r, param_key::elements), 1 << 20);
  EXPECT_EQ(text_param(r, param_key::op), "triad");
  EXPECT_FALSE(int_param(r, param_key::m));
  Record not_stream;
  not_stream.name = "matmul";
  EXPECT_THROW(stream_point(not_stream), Error);
}

TEST(RecordParams, GemmShapeRoundTrips) {
  Record r;
  r.params = gemm_params(GemmShape{128, 4096, 1024});
  const GemmShape s = gemm_shape(r);
  EXPECT_EQ(s.m, 128);
  EXPECT_EQ(s.n, 4096);
  EXPECT_EQ(s.k, 1024);
  EXPECT_EQ(shape_label(s), "128x4096x1024");
  EXPECT_EQ(shape_label(GemmShape{512, 512, 512}), "512");
  EXPECT_THROW(gemm_shape(Record{}), Error);
}


TEST(BandwidthPlan, QuickAndValidationNamingTheField) {
  const BandwidthPlan quick = plan_bandwidth_sweep(BandwidthSweepOptions{.samples = 20, .quick = true});
  EXPECT_EQ(quick.options.ops, std::vector<StreamOp>{StreamOp::add});
  EXPECT_EQ(quick.options.samples, 10);
  EXPECT_EQ(quick.options.sizes, parse_sizes("2^10:2^28:4"));
  EXPECT_FALSE(quick.options.method);
  EXPECT_EQ(quick.points.size(), 3u * 10u);  // add x 3 variants x 10 sizes
  const auto plan = [](BandwidthSweepOptions o) { return usage_message([&] { plan_bandwidth_sweep(o); }); };
  EXPECT_TRUE(starts_with(plan(BandwidthSweepOptions{.samples = 0}), "samples must be >= 1"));
  EXPECT_THROW(plan_bandwidth_sweep(BandwidthSweepOptions{.ceilings = "maybe"}), UsageError);
  EXPECT_TRUE(starts_with(plan(BandwidthSweepOptions{.sizes = {std::int64_t{1} << 35}}), "sizes: "));
  EXPECT_TRUE(starts_with(plan(BandwidthSweepOptions{.sizes = {1024, 0}}), "sizes: "));
  EXPECT_TRUE(starts_with(plan(BandwidthSweepOptions{.sizes = {}}), "sizes: "));
  EXPECT_TRUE(starts_with(plan(BandwidthSweepOptions{.ops = {}}), "ops: "));
  EXPECT_TRUE(starts_with(
      plan(BandwidthSweepOptions{.variants = {StreamVariant::vec4, StreamVariant::broken_for_tests}}),
      "variants: "));
  // Repeats are run once.
  const BandwidthPlan repeated = plan_bandwidth_sweep(
      BandwidthSweepOptions{.ops = {StreamOp::add, StreamOp::add}, .variants = {StreamVariant::vec4}, .sizes = {64, 64}});
  EXPECT_EQ(repeated.points.size(), 1u);
}

// The typed defaults run what the old default strings ran: the same points in the same order,
// so the records' params (what `ridge compare` matches on) are unchanged.
TEST(BandwidthPlan, DefaultsGiveTheRecordsTheOldDefaultStringsGave) {
  const BandwidthSweepOptions o;
  EXPECT_EQ(o.sizes, parse_sizes("2^10:2^28:2"));
  EXPECT_EQ(sizes_text(o.sizes), "2^10:2^28:x2");
  EXPECT_FALSE(o.method);
  const BandwidthPlan p = plan_bandwidth_sweep(o);
  ASSERT_EQ(p.points.size(), 5u * 3u * 19u);
  auto params = [&](std::size_t i) {
    const SweepPoint& pt = p.points[i];
    return stream_params({stream_op_from_string(pt.op), stream_variant_from_string(pt.variant), pt.size}, o.cold);
  };
  EXPECT_EQ(params(0), nlohmann::json::parse(R"({"n":1024,"elements":1024,"op":"add","variant":"scalar",)"
                                             R"("working_set_bytes":12288.0,"cold":false})"));
  EXPECT_EQ(params(19), nlohmann::json::parse(R"({"n":1024,"elements":1024,"op":"add","variant":"vec4",)"
                                              R"("working_set_bytes":12288.0,"cold":false})"));
  EXPECT_EQ(params(p.points.size() - 1),
            nlohmann::json::parse(R"({"n":268435456,"elements":268435456,"op":"read","variant":"grid_stride",)"
                                  R"("working_set_bytes":1073741824.0,"cold":false})"));
  std::vector<std::string> ops;
  for (std::size_t i = 0; i < p.points.size(); i += 3 * 19) ops.push_back(p.points[i].op);
  EXPECT_EQ(ops, (std::vector<std::string>{"add", "copy", "scale", "triad", "read"}));
}

TEST(BandwidthKneeReference, MeasuredWinsOverTheDatasheet) {
  const CeilingsLookup both = synthetic_lookup(4.8e12, 67e12, 4.2e12);
  EXPECT_DOUBLE_EQ(datasheet_memory_bytes_per_s(both), 4.8e12);
  EXPECT_DOUBLE_EQ(measured_memory_bytes_per_s(both), 4.2e12);
  EXPECT_DOUBLE_EQ(knee_reference_bytes_per_s(both), 4.2e12);
  EXPECT_EQ(knee_reference_name(both), "measured HBM");
  const CeilingsLookup sheet = synthetic_lookup(4.8e12, 67e12, 0);
  EXPECT_DOUBLE_EQ(knee_reference_bytes_per_s(sheet), 4.8e12);
  EXPECT_EQ(knee_reference_name(sheet), "datasheet");
  EXPECT_EQ(measured_memory_bytes_per_s(sheet), 0);
  const CeilingsLookup none;
  EXPECT_EQ(knee_reference_bytes_per_s(none), 0);
  EXPECT_EQ(datasheet_memory_bytes_per_s(none), 0);
}

TEST(BandwidthAnalysis, CurvesRangesKneesAndBest) {
  const BandwidthSweep s = synthetic_bandwidth_sweep(true);
  ASSERT_EQ(s.curves.size(), 2u);
  for (const auto& c : s.curves) {
    ASSERT_EQ(c.records.size(), 10u);
    // Sorted by size; at 2^10 (12 KB, ~3 ns of traffic) the call is the empty launch.
    EXPECT_EQ(stream_point(s.records[c.records.front()]).n, 1 << 10);
    ASSERT_TRUE(c.launch_bound_up_to);
    EXPECT_GE(*c.launch_bound_up_to, 1 << 14);
    EXPECT_LT(*c.launch_bound_up_to, 1 << 24);
    EXPECT_EQ(c.largest_n, 1 << 28);
    EXPECT_NEAR(c.fraction_of_measured, c.largest_bytes_per_s / 4.2e12, 1e-12);
    EXPECT_NEAR(c.fraction_of_datasheet, c.largest_bytes_per_s / 4.8e12, 1e-12);
    ASSERT_EQ(c.knees.size(), 2u);
    EXPECT_DOUBLE_EQ(c.knees[0].fraction, 0.7);
  }
  // vec4 (4.1 TB/s top) reaches 90% of 4.2 TB/s; scalar (3.5 TB/s) never does.
  const auto& scalar = s.curves[0];
  const auto& vec4 = s.curves[1];
  EXPECT_EQ(scalar.variant, StreamVariant::scalar);
  EXPECT_FALSE(scalar.knees[1].size);
  ASSERT_TRUE(vec4.knees[1].size);
  ASSERT_TRUE(vec4.knees[0].size);
  EXPECT_LT(*vec4.knees[0].size, *vec4.knees[1].size);
  ASSERT_EQ(s.best_curve_per_op.size(), 1u);
  EXPECT_EQ(s.curves[s.best_curve_per_op[0]].variant, StreamVariant::vec4);
  // The ranges and knees are in every record's extra, as the result files carry them.
  const Record& r = s.records[vec4.records.back()];
  EXPECT_EQ(r.extra["launch_bound_up_to_elements"].get<std::int64_t>(), *vec4.launch_bound_up_to);
  EXPECT_TRUE(r.extra.contains("knee_70_elements"));
  EXPECT_TRUE(r.extra["knee_90_elements"].is_number());
  EXPECT_EQ(r.extra["knee_ceiling"], "measured HBM");
  EXPECT_TRUE(s.records[scalar.records.back()].extra["knee_90_elements"].is_null());
}

TEST(BandwidthAnalysis, FindingsSayWhatTheTableShows) {
  const BandwidthSweep s = synthetic_bandwidth_sweep(true);
  ASSERT_FALSE(s.findings.empty());
  EXPECT_EQ(s.findings[0].level, 0);
  EXPECT_NE(s.findings[0].text.find("add: at 2^28 elements the best variant, vec4, moves"), std::string::npos);
  EXPECT_NE(s.findings[0].text.find("of the 4.80 TB/s datasheet"), std::string::npos) << s.findings[0].text;
  EXPECT_NE(s.findings[0].text.find("of measured)"), std::string::npos);
  EXPECT_TRUE(any_finding_contains(s.findings, "Launch overhead dominates up to"));
  EXPECT_TRUE(any_finding_contains(s.findings, "It reaches 90% of the measured HBM bandwidth from about"));
  EXPECT_FALSE(any_finding_contains(s.findings, "No bandwidth ceiling known"));
  for (std::size_t i = 1; i < s.findings.size(); ++i) EXPECT_EQ(s.findings[i].level, 1);
}

TEST(BandwidthAnalysis, NoCeilingMeansNoKnees) {
  BandwidthSweep s = synthetic_bandwidth_sweep(false);
  s.setup.ceilings = CeilingsLookup{};
  analyze_bandwidth_sweep(s);
  for (const auto& c : s.curves) {
    EXPECT_TRUE(c.knees.empty());
    EXPECT_TRUE(std::isnan(c.fraction_of_datasheet));
  }
  EXPECT_TRUE(any_finding_contains(s.findings, "No bandwidth ceiling known"));
  EXPECT_FALSE(any_finding_contains(s.findings, "It reaches"));
}

TEST(BandwidthAnalysis, PlotHasACurvePerVariantAndTheCeilings) {
  const BandwidthSweep s = synthetic_bandwidth_sweep(true);
  ASSERT_GE(s.plot.series.size(), 4u);
  EXPECT_EQ(s.plot.series[0].name, "scalar");
  EXPECT_EQ(s.plot.series[0].points.size(), 10u);
  EXPECT_EQ(s.plot.series[2].name, "datasheet 4800 GB/s");
  EXPECT_EQ(s.plot.series[3].name, "measured HBM 4200 GB/s");
  EXPECT_FALSE(render_svg(s.plot).empty());
}

TEST(BandwidthAnalysis, AnnotationFlagsLaunchBoundCacheResidentAndImpossible) {
  const CeilingsLookup ceilings = synthetic_lookup(4.8e12, 67e12, 0);
  Record small = stream_record(StreamOp::add, StreamVariant::vec4, 1 << 10, 5);
  annotate_stream_record(small, small.summary.median, ceilings, 60e6, false);
  EXPECT_TRUE(small.extra["launch_bound"].get<bool>());
  EXPECT_TRUE(small.extra["cache_resident"].get<bool>());
  // 20 TB/s from HBM (2^28 elements, far beyond the L2) beats the datasheet: impossible.
  Record fast = stream_record(StreamOp::add, StreamVariant::vec4, 1 << 28, 20000);
  annotate_stream_record(fast, 1e-3, ceilings, 60e6, false);
  EXPECT_FALSE(fast.extra["launch_bound"].get<bool>());
  EXPECT_FALSE(fast.extra["cache_resident"].get<bool>());
  EXPECT_NEAR(fast.extra["fraction_of_datasheet"].get<double>(), 20e12 / 4.8e12, 1e-9);
  EXPECT_FALSE(fast.extra.contains("fraction_of_measured_hbm"));
  bool impossible = false;
  for (const auto& w : fast.warnings)
    impossible |= w.rfind("impossible", 0) == 0 && w.find("datasheet of Synthetic") != std::string::npos;
  EXPECT_TRUE(impossible);
  // Without any ceilings there is no memory floor, so nothing is called impossible.
  Record unknown = stream_record(StreamOp::add, StreamVariant::vec4, 1 << 28, 20000);
  annotate_stream_record(unknown, 1e-3, CeilingsLookup{}, 60e6, false);
  EXPECT_FALSE(unknown.extra.contains("fraction_of_datasheet"));
  for (const auto& w : unknown.warnings) EXPECT_NE(w.rfind("impossible", 0), 0u) << w;
}

// ---- matmul ------------------------------------------------------------------------------------

namespace {

Record gemm_record(std::int64_t n, double tflops, const std::string& dtype = "bf16") {
  Record r;
  r.name = "matmul";
  r.method = Method::cuda_events;
  r.dtype = dtype_from_string(dtype);
  r.params = gemm_params(GemmShape{n, n, n});
  r.flops = 2.0 * double(n) * double(n) * double(n);
  r.bytes = 3.0 * double(n) * double(n) * 2;
  r.samples_ms = std::vector<double>(10, r.flops / (tflops * 1e12) * 1e3);
  finalize(r);
  return r;
}

/// BF16 square GEMMs from n = 256, doubling, at these TFLOP/s.
std::vector<Record> square_gemm_records(const std::vector<double>& tflops) {
  std::vector<Record> records;
  std::int64_t n = 256;
  for (double t : tflops) {
    records.push_back(gemm_record(n, t));
    n *= 2;
  }
  return records;
}

// Datasheet: bf16 989 TFLOP/s under 4.8 TB/s; measured: bf16 800 TFLOP/s under 4.2 TB/s.
CeilingsLookup synthetic_gemm_ceilings() {
  CeilingsLookup c = synthetic_lookup(4.8e12, 0, 4.2e12);
  c.datasheet->ceilings.peak_flops_per_s = {{"bf16", 989e12}};
  c.datasheet->ceilings.source_text = "datasheet of Synthetic";
  c.measured->ceilings.peak_flops_per_s = {{"bf16", 800e12}};
  c.measured->ceilings.source_text = "measured on this GPU (2026-12-01T18:11:37Z)";
  return c;
}

}  // namespace

TEST(MatmulPlan, QuickShapesAndValidation) {
  const MatmulPlan quick = plan_matmul_sweep(MatmulSweepOptions{.quick = true});
  ASSERT_EQ(quick.points.size(), 3u);
  EXPECT_EQ(quick.points[0].size, 512);
  EXPECT_EQ(quick.points[2].size, 8192);
  const MatmulPlan shapes = plan_matmul_sweep(
      MatmulSweepOptions{.dtypes = {DType::bf16, DType::fp16}, .shapes = parse_shapes("128,4096,4096;2048")});
  EXPECT_FALSE(shapes.square);
  ASSERT_EQ(shapes.points.size(), 4u);
  EXPECT_EQ(shapes.points[0].size, 0);  // not square
  EXPECT_EQ(shapes.points[1].size, 2048);
  const auto plan = [](MatmulSweepOptions o) { return usage_message([&] { plan_matmul_sweep(o); }); };
  EXPECT_TRUE(starts_with(plan(MatmulSweepOptions{.tune_candidates = 0}), "tune_candidates must be >= 1"));
  EXPECT_TRUE(starts_with(plan(MatmulSweepOptions{.dtypes = {}}), "dtypes: "));
  EXPECT_TRUE(starts_with(plan(MatmulSweepOptions{.sizes = {70000}}), "sizes: "));
  EXPECT_TRUE(starts_with(plan(MatmulSweepOptions{.sizes = {-1}}), "sizes: "));
  EXPECT_TRUE(starts_with(plan(MatmulSweepOptions{.shapes = {{0, 1, 1}}}), "shapes: "));
  EXPECT_TRUE(starts_with(plan(MatmulSweepOptions{.shapes = {{16, 70000, 16}}}), "shapes: "));
}

// As for the bandwidth sweep: the typed defaults run the points the old default strings ran.
TEST(MatmulPlan, DefaultsGiveTheRecordsTheOldDefaultStringsGave) {
  const MatmulSweepOptions o;
  EXPECT_EQ(o.sizes, parse_sizes("256:8192:x2"));
  EXPECT_EQ(o.dtypes, std::vector<DType>{dtype_from_string("bf16")});
  EXPECT_TRUE(o.shapes.empty());
  const MatmulPlan p = plan_matmul_sweep(o);
  ASSERT_EQ(p.points.size(), 6u);
  EXPECT_TRUE(p.square);
  EXPECT_EQ(p.points.front().dtype, "bf16");
  const auto& first = p.points.front().shape;
  const auto& last = p.points.back().shape;
  EXPECT_EQ(gemm_params({first.m, first.n, first.k}), nlohmann::json::parse(R"({"m":256,"n":256,"k":256})"));
  EXPECT_EQ(gemm_params({last.m, last.n, last.k}), nlohmann::json::parse(R"({"m":8192,"n":8192,"k":8192})"));
}

TEST(MatmulAnalysis, PlacementOnTheRoofline) {
  const CeilingsLookup ceilings = synthetic_gemm_ceilings();
  Record big = gemm_record(8192, 700);
  const GemmPlacement p = annotate_gemm_record(big, ceilings, 0.005, 60e6, false);
  EXPECT_NEAR(p.intensity_flop_per_byte, 8192.0 / 3, 1e-9);  // 2n^3 / (3 n^2 * 2 bytes)
  EXPECT_EQ(p.bound, "compute");
  EXPECT_NEAR(p.datasheet_attainable_flops_per_s, 989e12, 1);
  EXPECT_NEAR(p.fraction_of_datasheet_attainable, 700.0 / 989, 1e-9);
  EXPECT_NEAR(p.fraction_of_measured_peak, 700.0 / 800, 1e-9);
  EXPECT_EQ(big.extra["bound"], "compute");
  EXPECT_NEAR(big.extra["fraction_of_measured_attainable"].get<double>(), 700.0 / 800, 1e-9);
  EXPECT_FALSE(big.extra["cache_resident"].get<bool>());
  // A small GEMM sits on the memory slope.
  Record small = gemm_record(64, 1);
  const GemmPlacement q = annotate_gemm_record(small, ceilings, 0.005, 60e6, false);
  EXPECT_EQ(q.bound, "memory");
  EXPECT_LT(q.datasheet_attainable_flops_per_s, 989e12);
  EXPECT_TRUE(small.extra["cache_resident"].get<bool>());
  // Unknown roofs: NaN, no bound.
  Record fp32 = gemm_record(4096, 50, "fp32");
  const GemmPlacement u = annotate_gemm_record(fp32, ceilings, 0.005, 60e6, false);
  EXPECT_TRUE(u.bound.empty());
  EXPECT_TRUE(std::isnan(u.fraction_of_datasheet_attainable));
  EXPECT_FALSE(fp32.extra.contains("bound"));
}

TEST(MatmulAnalysis, AMeasuredPeakBelowARateTheSweepAttainedIsRaisedToIt) {
  // The H200 report: the best GEMM ran at 813 TFLOP/s against a measured BF16 peak of 808 ("100.7%").
  MatmulSweep s;
  s.setup.plan = plan_matmul_sweep(MatmulSweepOptions{});
  s.setup.ceilings = synthetic_gemm_ceilings();
  s.setup.ceilings.measured->ceilings.peak_flops_per_s["bf16"] = 808e12;
  s.records = square_gemm_records({50, 150, 350, 600, 790, 813});
  analyze_matmul_sweep(s);
  EXPECT_NEAR(s.setup.ceilings.measured->ceilings.peak_flops("bf16"), 813e12, 1e6);
  EXPECT_NEAR(s.setup.ceilings.datasheet->ceilings.peak_flops("bf16"), 989e12, 1);  // a datasheet is never raised
  ASSERT_EQ(s.findings.size(), 3u);
  EXPECT_EQ(s.findings[0].text,
            "The measured BF16 peak (808 TFLOP/s, measured on this GPU (2026-12-01T18:11:37Z)) is below the 813 "
            "TFLOP/s that matmul (k=8192 m=8192 n=8192) attained in this run: a ceiling cannot sit below an attained "
            "rate, so it is raised to 813 TFLOP/s.");
  ASSERT_EQ(s.knees.size(), 2u);
  EXPECT_NEAR(s.knees[1].best_flops_per_s / s.knees[1].peak_flops_per_s, 1.0, 1e-9);
  EXPECT_EQ(s.findings[2].text.rfind("Against the BF16 peak of 813 TFLOP/s measured on this GPU (2026-12-01T18:11:37Z), "
                                     "BF16 reaches 70% at n ≈ ",
                                     0),
            0u)
      << s.findings[2].text;
  EXPECT_NE(s.findings[2].text.find("Best: 813 TFLOP/s at n = 8192 (100.0% of that peak)."), std::string::npos)
      << s.findings[2].text;
  for (const auto& f : s.findings) EXPECT_EQ(f.text.find("100.7%"), std::string::npos) << f.text;
  // Raising again changes nothing; ceilings from a datasheet are left alone.
  EXPECT_TRUE(raise_to_attained(s.setup.ceilings.measured->ceilings, s.records).empty());
  DeviceCeilings datasheet = s.setup.ceilings.datasheet->ceilings;
  datasheet.peak_flops_per_s["bf16"] = 700e12;
  EXPECT_TRUE(raise_to_attained(datasheet, s.records).empty());
  EXPECT_DOUBLE_EQ(datasheet.peak_flops("bf16"), 700e12);
}

TEST(MatmulAnalysis, KneesFindingsAndPlots) {
  MatmulSweep s;
  s.setup.plan = plan_matmul_sweep(MatmulSweepOptions{});
  s.setup.device.name = "Synthetic GPU";
  s.setup.ceilings = synthetic_gemm_ceilings();
  // TFLOP/s rising with size: 256 -> 50, ..., 8192 -> 750.
  s.records = square_gemm_records({50, 150, 350, 600, 700, 750});
  analyze_matmul_sweep(s);
  ASSERT_EQ(s.knees.size(), 2u);
  EXPECT_EQ(s.knees[0].ceiling, "datasheet");
  EXPECT_EQ(s.knees[1].ceiling, "measured");
  // 70% of 989 = 692 TFLOP/s: between 2048 (600) and 4096 (700).
  ASSERT_TRUE(s.knees[0].knees[0].size);
  EXPECT_GT(*s.knees[0].knees[0].size, 2048);
  EXPECT_LT(*s.knees[0].knees[0].size, 4096);
  EXPECT_FALSE(s.knees[0].knees[1].size);  // 90% of 989 never
  EXPECT_DOUBLE_EQ(s.knees[0].best_n, 8192);
  // The same knee as matmul_knees gives any caller (the report) for its own ceiling.
  const auto again = matmul_knees(s.records, DType::bf16, 989e12);
  EXPECT_DOUBLE_EQ(*again[0].size, *s.knees[0].knees[0].size);
  ASSERT_EQ(s.findings.size(), 2u);
  // One readable sentence per ceiling: the peak and its source first, then the knees.
  const std::string& f = s.findings[0].text;
  EXPECT_EQ(f.rfind("Against the BF16 peak of 989 TFLOP/s from the datasheet of ", 0), 0u) << f;
  EXPECT_NE(f.find(", BF16 reaches 70% at n ≈ "), std::string::npos) << f;
  EXPECT_NE(f.find(" but does not reach 90% in this sweep. Best: 750 TFLOP/s at n = 8192 (75.8% of that peak)."),
            std::string::npos)
      << f;
  EXPECT_TRUE(s.records[0].extra.contains("knee_70_of_datasheet_peak_n"));
  EXPECT_TRUE(s.records[0].extra["knee_90_of_datasheet_peak_n"].is_null());
  EXPECT_FALSE(s.rate_plot.series.empty());
  EXPECT_FALSE(render_svg(s.roofline_plot).empty());
  // The roofline is roofline_plot's: measured memory slope and bf16 roof, the datasheet's dashed
  // behind them, and the GEMMs as one series at their intensities.
  auto named = [&](const std::string& name) -> const PlotSeries* {
    for (const auto& series : s.roofline_plot.series)
      if (series.name == name) return &series;
    return nullptr;
  };
  EXPECT_EQ(s.roofline_plot.title, "GEMMs on the Synthetic GPU roofline");
  ASSERT_NE(named("measured memory " + format_bytes_per_s(4.2e12)), nullptr);
  const PlotSeries* sheet = named("datasheet memory " + format_bytes_per_s(4.8e12));
  ASSERT_NE(sheet, nullptr);
  EXPECT_TRUE(sheet->dashed);
  const PlotSeries* gemms = named("bf16 measured");
  ASSERT_NE(gemms, nullptr);
  ASSERT_EQ(gemms->points.size(), 6u);
  EXPECT_DOUBLE_EQ(gemms->points.back().x, s.records.back().intensity_flop_per_byte());
  EXPECT_DOUBLE_EQ(gemms->points.back().y, s.records.back().flops_per_s());
  bool measured_roof = false;
  for (const auto& series : s.roofline_plot.series)
    measured_roof = measured_roof || (!series.markers && !series.points.empty() && series.points.back().y == 800e12);
  EXPECT_TRUE(measured_roof);
}

// ---- timing ------------------------------------------------------------------------------------

namespace {

TimedMethod timed(Method method, double ms, std::int64_t n, const std::string& which) {
  Record r;
  r.name = "timing";
  r.method = method;
  r.dtype = DType::fp32;
  r.params = gemm_params(GemmShape{n, n, n});
  r.params[std::string(param_key::timing_case)] = which;
  r.flops = 2.0 * double(n) * double(n) * double(n);
  r.samples_ms = std::vector<double>(20, ms);
  finalize(r);
  return TimedMethod{r, "meaning", {}};
}

TimingDemo synthetic_demo(double naive_ms) {
  TimingDemo d;
  d.large.dtype = DType::fp32;
  d.large.methods = {timed(Method::wall_naive, naive_ms, 4096, "large"), timed(Method::wall_sync, 2.75, 4096, "large"),
                     timed(Method::cuda_events, 2.72, 4096, "large")};
  d.small.dtype = DType::bf16;
  d.small.methods = {timed(Method::cuda_events, 0.034, 256, "small"), timed(Method::spin_hold, 0.007, 256, "small"),
                     timed(Method::graph_replay, 0.006, 256, "small")};
  return d;
}

}  // namespace

TEST(TimingAnalysis, TheNaiveReadingIsFlaggedImpossible) {
  TimingDemo d = synthetic_demo(0.02);  // 137 GFLOP in 20 us: 6.9 PFLOP/s
  analyze_timing_demo(d);
  EXPECT_TRUE(d.naive_impossible);
  EXPECT_GT(d.naive_flops_per_s, d.impossible_above_flops_per_s);
  EXPECT_NEAR(d.wall_over_naive, 2.75 / 0.02, 1e-9);
  EXPECT_NEAR(d.wall_vs_events_relative_difference, 0.03 / 2.72, 1e-9);
  const Record* naive = d.large.find(Method::wall_naive);
  ASSERT_NE(naive, nullptr);
  ASSERT_GE(naive->warnings.size(), 2u);
  EXPECT_EQ(naive->warnings[0].rfind("impossible", 0), 0u);
  EXPECT_EQ(naive->warnings[1].rfind("wrong method", 0), 0u);
  EXPECT_NEAR(naive->extra["wall_sync_over_naive"].get<double>(), d.wall_over_naive, 1e-12);
  EXPECT_NEAR(d.launch_overhead_ms, 0.034 - 0.006, 1e-12);
  EXPECT_NEAR(d.events_over_launch_free, 0.034 / 0.006, 1e-9);
  EXPECT_EQ(d.records().size(), 6u);
  EXPECT_EQ(d.records()[3].method, Method::cuda_events);
}

TEST(TimingAnalysis, APlausibleNaiveReadingIsOnlyWrong) {
  TimingDemo d = synthetic_demo(2.0);  // 69 TFLOP/s: below any GPU's FP32 peak
  analyze_timing_demo(d);
  EXPECT_FALSE(d.naive_impossible);
  const Record* naive = d.large.find(Method::wall_naive);
  ASSERT_EQ(naive->warnings.size(), 1u);
  EXPECT_EQ(naive->warnings[0].rfind("wrong method", 0), 0u);
}

TEST(TimingAnalysis, AnInjectedSlowdownIsLabelledOnEveryLargeRecord) {
  TimingDemo d = synthetic_demo(0.02);
  d.options.inject_slowdown_us = 500;
  analyze_timing_demo(d);
  for (const auto& m : d.large.methods) {
    ASSERT_FALSE(m.record.warnings.empty());
    EXPECT_NE(m.record.warnings[0].find("inject_slowdown_us"), std::string::npos);
  }
  for (const auto& m : d.small.methods)
    for (const auto& w : m.record.warnings) EXPECT_EQ(w.find("inject"), std::string::npos);
}

TEST(TimingAnalysis, OptionsAreCheckedWithoutAGpu) {
  EXPECT_NO_THROW(TimingDemoOptions{}.validate());
  EXPECT_THROW(TimingDemoOptions{.n = 0}.validate(), UsageError);
  EXPECT_THROW(TimingDemoOptions{.dtype = "fp7"}.validate(), UsageError);
  EXPECT_THROW(TimingDemoOptions{.backend = "magma"}.validate(), UsageError);
  EXPECT_THROW(TimingDemoOptions{.repeats = 0}.validate(), UsageError);
  EXPECT_THROW(TimingDemoOptions{.inject_slowdown_us = -1}.validate(), UsageError);
  TimingDemo missing;
  EXPECT_THROW(analyze_timing_demo(missing), Error);
}
