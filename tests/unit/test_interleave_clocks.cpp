// Interleaved sampling (with fake methods and a fake clock, no GPU) and the clock analysis of a
// table: reduced-clock samples and rows that ran at different SM clocks.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/clocks.hpp"
#include "ridge/errors.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"
#include "ridge/timing.hpp"

using namespace ridge;

namespace {

// A fake GPU whose clock falls as it works: every sample taken costs 1 ms at full clock, scaled
// by how far the clock has dropped. Methods built on it log the turns they are given.
struct FakeGpu {
  double sm_mhz = 2000;
  double mhz_lost_per_sample = 10;
  std::vector<std::pair<std::string, int>> log;  // (method, samples) per call; warmups logged with -warmup

  InterleavedMethod method(const std::string& name, int repeats = 1) {
    return {name, [this, name, repeats](int samples, int warmup) {
              log.emplace_back(name, warmup > 0 ? -warmup : samples);
              Measurement m;
              m.method = Method::cuda_events;
              m.repeats_per_sample = repeats;
              for (int i = 0; i < samples; ++i) {
                m.samples_ms.push_back(2000.0 / sm_mhz);
                sm_mhz -= mhz_lost_per_sample;
              }
              return m;
            }};
  }
};

}  // namespace

TEST(Interleave, TurnsRotateRoundRobinAndCutTheLastBlock) {
  using Turns = std::vector<std::pair<int, int>>;
  // Round 1 starts with method 0, round 2 with 1, round 3 with 2; the last round takes what is left.
  EXPECT_EQ(interleaved_turns(3, 5, 2), (Turns{{0, 2}, {1, 2}, {2, 2}, {1, 2}, {2, 2}, {0, 2}, {2, 1}, {0, 1}, {1, 1}}));
  EXPECT_EQ(interleaved_turns(2, 3, 1), (Turns{{0, 1}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, {1, 1}}));
  EXPECT_TRUE(interleaved_turns(0, 3, 1).empty());
}

TEST(Interleave, WarmsUpEachMethodOnceThenTakesSamplesInTurns) {
  FakeGpu gpu;
  InterleaveOptions o;
  o.samples = 3;
  o.warmup = 4;
  const auto measured = measure_interleaved({gpu.method("a"), gpu.method("b")}, o);
  const std::vector<std::pair<std::string, int>> expected{{"a", -4}, {"b", -4}, {"a", 1}, {"b", 1},
                                                          {"b", 1},  {"a", 1},  {"a", 1}, {"b", 1}};
  EXPECT_EQ(gpu.log, expected);
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[0].samples_ms.size(), 3u);
  EXPECT_EQ(measured[1].samples_ms.size(), 3u);
  EXPECT_EQ(measured[0].summary.count, 3);
  EXPECT_TRUE(measured[0].sample_sm_mhz.empty());  // no clock reader given
}

TEST(Interleave, AFallingClockHitsInterleavedMethodsAlike) {
  // Two identical methods on a GPU whose clock falls 0.5% per sample. One after the other, the
  // second reads ~12% slower; interleaved, their medians agree within one step.
  FakeGpu sequential;
  InterleaveOptions one_block;
  one_block.samples = 20;
  one_block.warmup = 0;
  one_block.block = 20;  // all of a's samples, then all of b's: the old way
  const auto apart = measure_interleaved({sequential.method("a"), sequential.method("b")}, one_block);
  EXPECT_GT(apart[1].summary.median / apart[0].summary.median, 1.1);

  FakeGpu interleaved;
  InterleaveOptions turns;
  turns.samples = 20;
  turns.warmup = 0;
  const auto together = measure_interleaved({interleaved.method("a"), interleaved.method("b")}, turns);
  EXPECT_LT(std::abs(together[1].summary.median / together[0].summary.median - 1), 0.02);
}

TEST(Interleave, EachSampleGetsTheLowerClockAroundItsBlock) {
  FakeGpu gpu;
  gpu.mhz_lost_per_sample = 0;
  std::vector<double> readings{1980, 1900, 1950, 1700, 1980};
  std::size_t next = 0;
  InterleaveOptions o;
  o.samples = 2;
  o.warmup = 1;
  o.read_sm_mhz = [&] { return readings.at(next++); };
  const auto m = measure_interleaved({gpu.method("a"), gpu.method("b")}, o);
  // Turns: a, b | b, a. Clock readings before and after each: 1980|1900|1950|1700|1980.
  EXPECT_EQ(m[0].sample_sm_mhz, (std::vector<double>{1900, 1700}));
  EXPECT_EQ(m[1].sample_sm_mhz, (std::vector<double>{1900, 1700}));
  EXPECT_EQ(next, readings.size());
}

TEST(Interleave, ClocksAreAllOrNothingAndRepeatsMustStayFixed) {
  FakeGpu gpu;
  int calls = 0;
  InterleaveOptions o;
  o.samples = 2;
  o.read_sm_mhz = [&] { return ++calls == 3 ? -1.0 : 1980.0; };  // NVML failed once
  const auto m = measure_interleaved({gpu.method("a")}, o);
  EXPECT_TRUE(m[0].sample_sm_mhz.empty());

  int repeats = 1;
  InterleavedMethod drifting{"graph", [&](int samples, int) {
                               Measurement r;
                               r.repeats_per_sample = repeats++;
                               r.samples_ms.assign(samples, 1.0);
                               return r;
                             }};
  EXPECT_THROW(measure_interleaved({drifting}, InterleaveOptions{}), Error);
  EXPECT_THROW(measure_interleaved({}, InterleaveOptions{}), UsageError);
  EXPECT_THROW(measure_interleaved({gpu.method("a")}, InterleaveOptions{.block = 0}), UsageError);
}

TEST(Clocks, ADropDuringSamplingMarksThoseSamples) {
  std::vector<double> trace(15, 1980.0);
  trace.insert(trace.end(), 5, 1700.0);  // power cap reached near the end
  const RowClocks c = analyze_row_clocks(trace, 1980);
  ASSERT_TRUE(c.known());
  EXPECT_EQ(c.reduced_count, 5);
  EXPECT_DOUBLE_EQ(c.reduced_below_mhz, 0.95 * 1980);
  EXPECT_FALSE(c.reduced[14]);
  EXPECT_TRUE(c.reduced[15]);
  EXPECT_DOUBLE_EQ(c.median_sm_mhz, 1980);
  // Steady clocks a little under the rated one: nothing reduced.
  EXPECT_EQ(analyze_row_clocks(std::vector<double>(20, 1755.0), 1980).reduced_count, 0);
}

TEST(Clocks, ARowThrottledThroughoutIsJudgedAgainstTheRatedClock) {
  // Every sample at 1400 MHz: no drop within the row, but below 75% of the rated 1980 MHz.
  const RowClocks c = analyze_row_clocks(std::vector<double>(10, 1400.0), 1980);
  EXPECT_EQ(c.reduced_count, 10);
  EXPECT_DOUBLE_EQ(c.reduced_below_mhz, 0.75 * 1980);
  // Without a rated clock only drops within the row count.
  EXPECT_EQ(analyze_row_clocks(std::vector<double>(10, 1400.0), 0).reduced_count, 0);
  // A missing reading makes the row unknown rather than half-judged.
  EXPECT_FALSE(analyze_row_clocks({1980, -1, 1980}, 1980).known());
  EXPECT_FALSE(analyze_row_clocks({}, 1980).known());
}

TEST(Clocks, AnnotatedRecordSaysItRanAtReducedClocksAndGivesTheFullClockMedian) {
  Record r;
  r.samples_ms = {1.0, 1.0, 1.0, 1.2, 1.2};
  r.extra["sample_sm_mhz"] = {1980, 1980, 1980, 1650, 1650};
  const RowClocks c = record_clocks(r, 1980);
  ASSERT_EQ(c.reduced_count, 2);
  const auto warning = annotate_clocks(r, c);
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("measured at reduced clocks: 2 of 5 samples"), std::string::npos) << *warning;
  EXPECT_EQ(r.warnings.back(), *warning);
  EXPECT_DOUBLE_EQ(r.extra["median_ms_at_full_clocks"].get<double>(), 1.0);
  EXPECT_EQ(r.extra["reduced_clock_samples"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(r.extra["sm_mhz_median"].get<double>(), 1980);

  Record steady;
  steady.samples_ms = {1.0, 1.0};
  steady.extra["sample_sm_mhz"] = {1980, 1975};
  EXPECT_FALSE(annotate_clocks(steady, record_clocks(steady, 1980)));
  EXPECT_TRUE(steady.warnings.empty());
  EXPECT_EQ(steady.extra["reduced_clock_samples"].get<int>(), 0);

  Record mismatched;  // clocks not one per sample: not attributed
  mismatched.samples_ms = {1.0, 1.0};
  mismatched.extra["sample_sm_mhz"] = {1980};
  EXPECT_FALSE(record_clocks(mismatched, 1980).known());
}

TEST(Clocks, RowsAtDifferentClocksAreAFinding) {
  const RowClocks synced = analyze_row_clocks(std::vector<double>(5, 1980.0), 1980);
  const RowClocks events = analyze_row_clocks(std::vector<double>(5, 1830.0), 1980);  // 8.2% lower
  const auto finding = clock_spread_finding({"wall_sync", "cuda_events"}, {synced, events});
  ASSERT_TRUE(finding);
  EXPECT_NE(finding->find("cuda_events at a median 1830 MHz, wall_sync at 1980 MHz"), std::string::npos) << *finding;
  EXPECT_NE(finding->find("8.2% apart"), std::string::npos) << *finding;
  // 2% apart: within the 3% the finding allows.
  const RowClocks close = analyze_row_clocks(std::vector<double>(5, 1941.0), 1980);
  EXPECT_FALSE(clock_spread_finding({"a", "b"}, {synced, close}));
  // Rows without clocks are left out; one row is never a spread.
  EXPECT_FALSE(clock_spread_finding({"a", "b"}, {synced, RowClocks{}}));
}

TEST(Clocks, TheTimingDemoReportsEachRowsClockAndTheTablesSpread) {
  auto row = [](Method method, double ms, std::vector<double> mhz) {
    Record r;
    r.name = "timing";
    r.method = method;
    r.dtype = DType::fp32;
    r.params = gemm_params(GemmShape{4096, 4096, 4096});
    r.flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
    r.samples_ms.assign(mhz.empty() ? 4 : mhz.size(), ms);
    if (!mhz.empty()) r.extra["sample_sm_mhz"] = mhz;  // none: no NVML
    finalize(r);
    return TimedMethod{r, "meaning", {}};
  };
  TimingDemo d;
  d.rated_sm_mhz = 1980;
  d.large.dtype = DType::fp32;
  // The H200 case from the issue: the clocks moved between blocks.
  d.large.methods = {row(Method::wall_naive, 0.02, {1980, 1980, 1980, 1980}),
                     row(Method::wall_sync, 1.525, {1980, 1980, 1980, 1980}),
                     row(Method::cuda_events, 1.629, {1980, 1800, 1800, 1800})};
  d.small.dtype = DType::bf16;
  d.small.methods = {row(Method::cuda_events, 0.034, {}), row(Method::spin_hold, 0.007, {}),
                     row(Method::graph_replay, 0.006, {})};
  analyze_timing_demo(d);
  ASSERT_GE(d.large.clock_findings.size(), 2u);
  EXPECT_NE(d.large.clock_findings[0].find("different SM clocks"), std::string::npos) << d.large.clock_findings[0];
  EXPECT_NE(d.large.clock_findings[1].find("cuda_events: 3 of 4 samples ran at reduced clocks"), std::string::npos)
      << d.large.clock_findings[1];
  EXPECT_DOUBLE_EQ(d.large.methods[1].clocks.median_sm_mhz, 1980);
  EXPECT_EQ(d.large.find(Method::cuda_events)->extra["reduced_clock_samples"].get<int>(), 3);
  EXPECT_TRUE(d.small.clock_findings.empty());
  EXPECT_FALSE(d.small.methods[0].clocks.known());
  EXPECT_FALSE(d.small.find(Method::spin_hold)->extra.contains("sm_mhz_median"));
}
