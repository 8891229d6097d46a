// The timers' counted work without a GPU: summing a call's kernels, comparing it with the bytes
// and FLOPs a caller states (agree, disagree above and below the tolerance, missing counters, no
// kernel), its JSON round trip and where it lands in a record.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/trace/counters.hpp"

using namespace ridge;

namespace {

const std::vector<std::string> metrics{"gpu__time_duration.sum",
                                       "sm__cycles_elapsed.avg.per_second",
                                       "dram__bytes_read.sum",
                                       "dram__bytes_write.sum",
                                       "lts__t_bytes.sum",
                                       "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
                                       "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                                       "sm__ops_path_tensor_src_bf16_dst_fp32.sum"};

constexpr double n = 1 << 26;  // elements of a stream add: 3 x n x 4 bytes per call

/// What a stream add of n FP32 elements did, scaled: DRAM read 2N x 4 x `scale`, written N x 4 x `scale`.
CountedWork stream_add(double scale, double ffma = 0, double fadd = n) {
  CountedWork c;
  c.kernels = 1;
  c.passes = 3;
  c.work.dram_read_bytes = 2 * n * 4 * scale;
  c.work.dram_write_bytes = n * 4 * scale;
  c.work.l2_bytes = 3 * n * 4;
  if (ffma > 0) c.work.flops["fp32"] += 2 * ffma;
  if (fadd > 0) c.work.flops["fp32"] += fadd;
  c.work.profiled_sm_hz = 1.98e9;
  return c;
}

}  // namespace

TEST(CountedWork, TotalWorkSumsKernelsAndWeighsTheClockByDuration) {
  trace::KernelCounters k;
  k.metrics = metrics;
  // 1 ms at 1.5 GHz, 3 ms at 2 GHz: the pass's clock is (1.5 + 3 x 2) / 4 = 1.875 GHz.
  k.rows.push_back({1, 0, {1e6, 1.5e9, 100, 50, 400, 10, 5, 0}, 0});
  k.rows.push_back({2, 0, {3e6, 2.0e9, 1000, 500, 4000, 0, 0, 7}, 0});
  const trace::LaunchWork w = trace::total_work(k);
  EXPECT_DOUBLE_EQ(w.dram_read_bytes, 1100);
  EXPECT_DOUBLE_EQ(w.dram_write_bytes, 550);
  EXPECT_DOUBLE_EQ(w.l2_bytes, 4400);
  EXPECT_DOUBLE_EQ(w.flops.at("fp32"), 2 * 10 + 5);  // an FFMA counts two
  EXPECT_DOUBLE_EQ(w.flops.at("tensor_bf16"), 7);
  EXPECT_DOUBLE_EQ(w.profiled_duration_ns, 4e6);
  EXPECT_DOUBLE_EQ(w.profiled_sm_hz, 1.875e9);
  EXPECT_TRUE(w.missing.empty());
}

TEST(CountedWork, TotalWorkOfNoKernelStillNamesMissingCounters) {
  trace::KernelCounters k;
  k.metrics = {"gpu__time_duration.sum"};
  const trace::LaunchWork w = trace::total_work(k);
  EXPECT_DOUBLE_EQ(w.dram_bytes(), 0);
  EXPECT_NE(std::find(w.missing.begin(), w.missing.end(), "dram__bytes_read.sum"), w.missing.end());
}

TEST(CountedWork, AgreeingCountsGiveNoFinding) {
  // 3N x 4 bytes stated; the DRAM moved 0.994x that (what ncu reads for PyTorch's add on the H200).
  EXPECT_TRUE(compare_counted_work(3 * n * 4, 0, stream_add(0.994)).empty());
  // Within the tolerance on either side.
  EXPECT_TRUE(compare_counted_work(3 * n * 4, 0, stream_add(1 + 0.9 * counted_work_tolerance)).empty());
  EXPECT_TRUE(compare_counted_work(3 * n * 4, 0, stream_add(1 - 0.9 * counted_work_tolerance)).empty());
  EXPECT_TRUE(compare_counted_work(0, n, stream_add(1)).empty()) << "n FADDs are n FLOPs";
}

TEST(CountedWork, DramAboveTheStatedBytesIsAFindingWithBothNumbers) {
  const auto findings = compare_counted_work(3 * n * 4, 0, stream_add(2.0));
  ASSERT_EQ(findings.size(), 1u);
  const WorkCountFinding& f = findings[0];
  EXPECT_EQ(f.quantity, "bytes");
  EXPECT_TRUE(f.comparable);
  EXPECT_DOUBLE_EQ(f.stated, 3 * n * 4);
  EXPECT_DOUBLE_EQ(f.counted, 2 * 3 * n * 4);
  EXPECT_DOUBLE_EQ(f.ratio, 2.0);
  EXPECT_NE(f.text.find("the DRAM moved 2.00x that"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("read 1.074e+09"), std::string::npos) << f.text;     // 2N x 4 x 2
  EXPECT_NE(f.text.find("written 5.369e+08"), std::string::npos) << f.text;  // N x 4 x 2
  EXPECT_NE(f.text.find("More than you count"), std::string::npos) << f.text;
  // Just past the tolerance is a finding too.
  EXPECT_EQ(compare_counted_work(3 * n * 4, 0, stream_add(1 + 1.1 * counted_work_tolerance)).size(), 1u);
}

TEST(CountedWork, DramBelowTheStatedBytesIsAFinding) {
  const auto findings = compare_counted_work(3 * n * 4, 0, stream_add(0.5));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].ratio, 0.5);
  EXPECT_NE(findings[0].text.find("0.50x"), std::string::npos) << findings[0].text;
  EXPECT_NE(findings[0].text.find("Less than you count"), std::string::npos) << findings[0].text;
  EXPECT_EQ(compare_counted_work(3 * n * 4, 0, stream_add(1 - 1.1 * counted_work_tolerance)).size(), 1u);
}

TEST(CountedWork, FlopsCountedAsFmasSaySoAndNameThePrecision) {
  // PyTorch's add is a + alpha*b: n FFMA, 2n FLOPs, where the caller counts n.
  const auto findings = compare_counted_work(3 * n * 4, n, stream_add(1.0, n, 0));
  ASSERT_EQ(findings.size(), 1u) << "the bytes agree; only the FLOPs differ";
  const WorkCountFinding& f = findings[0];
  EXPECT_EQ(f.quantity, "flops");
  EXPECT_DOUBLE_EQ(f.ratio, 2.0);
  EXPECT_NE(f.text.find("2.00x"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("fp32 1.342e+08"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("a + alpha*b"), std::string::npos) << f.text;
}

TEST(CountedWork, MissingCountersCannotBeCompared) {
  CountedWork c = stream_add(1.0);
  c.work.missing = {"dram__bytes_read.sum", "dram__bytes_write.sum"};
  const auto findings = compare_counted_work(3 * n * 4, 0, c);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_FALSE(findings[0].comparable);
  EXPECT_EQ(findings[0].ratio, 0);
  EXPECT_NE(findings[0].text.find("no DRAM counters"), std::string::npos) << findings[0].text;

  CountedWork none;  // the counted call launched no kernel
  const auto empty = compare_counted_work(100, 100, none);
  ASSERT_EQ(empty.size(), 2u);
  for (const auto& f : empty) {
    EXPECT_FALSE(f.comparable);
    EXPECT_NE(f.text.find("launched no kernel"), std::string::npos) << f.text;
  }
}

TEST(CountedWork, NothingStatedNothingCompared) {
  EXPECT_TRUE(compare_counted_work(0, 0, stream_add(5.0)).empty());
  EXPECT_THROW(compare_counted_work(1, 1, stream_add(1.0), -0.1), UsageError);
}

TEST(CountedWork, JsonRoundTrip) {
  CountedWork c = stream_add(1.0, 3, 4);
  c.work.missing = {"lts__t_bytes.sum"};
  c.metrics_not_offered = {"sm__ops_path_tensor_src_fp8_dst_fp16.sum"};
  const CountedWork back = counted_work_from_json(to_json(c));
  EXPECT_EQ(back.kernels, c.kernels);
  EXPECT_EQ(back.passes, c.passes);
  EXPECT_DOUBLE_EQ(back.work.dram_read_bytes, c.work.dram_read_bytes);
  EXPECT_DOUBLE_EQ(back.work.dram_write_bytes, c.work.dram_write_bytes);
  EXPECT_DOUBLE_EQ(back.work.l2_bytes, c.work.l2_bytes);
  EXPECT_EQ(back.work.flops, c.work.flops);
  EXPECT_DOUBLE_EQ(back.work.profiled_sm_hz, c.work.profiled_sm_hz);
  EXPECT_EQ(back.work.missing, c.work.missing);
  EXPECT_EQ(back.metrics_not_offered, c.metrics_not_offered);
  EXPECT_THROW(counted_work_from_json(nlohmann::json{{"kernels", "three"}}), UsageError);
}

TEST(CountedWork, RecordKeepsTheCountsAndWarnsWhereTheyDisagree) {
  Measurement m;
  m.samples_ms = {1.0, 1.1, 0.9};
  m.summary = summarize(m.samples_ms);
  m.counted = stream_add(2.0);
  const Record r = to_record(m, "add", std::nullopt, nlohmann::json::object(), 3 * n * 4, 0);
  ASSERT_TRUE(r.extra.contains(extra_key::counters));
  EXPECT_EQ(r.extra[extra_key::counters]["kernels"], 1);
  EXPECT_DOUBLE_EQ(r.extra[extra_key::counters]["dram_write_bytes"].get<double>(), 2 * n * 4);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("the DRAM moved 2.00x that"), std::string::npos) << r.warnings[0];

  m.counted.reset();  // no counters: no key, no finding
  const Record plain = to_record(m, "add", std::nullopt, nlohmann::json::object(), 3 * n * 4, 0);
  EXPECT_FALSE(plain.extra.contains(extra_key::counters));
  EXPECT_TRUE(plain.warnings.empty());
}
