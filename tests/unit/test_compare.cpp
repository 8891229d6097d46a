#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "report/sections/sections.hpp"
#include "ridge/carried_over.hpp"
#include "ridge/checks.hpp"
#include "ridge/compare.hpp"
#include "ridge/errors.hpp"
#include "ridge/resolution.hpp"
#include "ridge/writers.hpp"

using namespace ridge;

namespace {

// Samples around `median_ms` with log-normal noise of relative width `cv`.
std::vector<double> noisy(double median_ms, double cv, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0, cv);
  std::vector<double> out(n);
  for (auto& v : out) v = median_ms * std::exp(z(rng));
  return out;
}

Record record(const std::string& name, const std::string& method, long n, std::vector<double> samples) {
  Record r;
  r.name = name;
  r.method = method_from_string(method);
  r.dtype = DType::bf16;
  r.params = {{"n", n}};
  r.samples_ms = std::move(samples);
  finalize(r);
  return r;
}

DeviceDescription h200(const std::string& uuid = "GPU-aaaa") {
  DeviceDescription d;
  d.name = "NVIDIA H200";
  d.uuid = uuid;
  return d;
}

// A result set with three sizes; `scale` multiplies every time of the n=4096 record.
ResultSet synthetic(unsigned seed, double scale_4096 = 1.0, double cv = 0.02) {
  ResultSet s;
  s.context.device = h200();
  s.context.clocks_start.sm_mhz = 1980;
  s.records.push_back(record("matmul", "cuda_events", 1024, noisy(0.05, cv, 30, seed)));
  s.records.push_back(record("matmul", "cuda_events", 2048, noisy(0.3, cv, 30, seed + 1)));
  s.records.push_back(record("matmul", "cuda_events", 4096, noisy(2.0 * scale_4096, cv, 30, seed + 2)));
  return s;
}

const RecordComparison& row_for(const Comparison& c, long n) {
  for (const auto& r : c.rows)
    if (r.params.value("n", 0L) == n) return r;
  throw std::runtime_error("row not found");
}

}  // namespace

TEST(RankTest, ExactSmallSamplesMatchEnumeration) {
  // p-values from enumerating every split of the pooled samples (independent brute force).
  const std::vector<double> a{1, 2, 3, 4, 5}, b{6, 7, 8, 9, 10};
  RankTest t = mann_whitney_u(a, b);
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_NEAR(t.p_value, 2.0 / 252, 1e-12);

  const std::vector<double> c{1.1, 2.3, 0.7, 4.2, 3.3, 2.8}, d{3.9, 5.1, 4.4, 2.9, 6.0, 5.5, 4.8};
  t = mann_whitney_u(c, d);
  EXPECT_DOUBLE_EQ(t.u, 3);
  EXPECT_NEAR(t.p_value, 0.008158508158508158, 1e-12);
  // Symmetric: swapping the sides gives the same two-sided p.
  EXPECT_NEAR(mann_whitney_u(d, c).p_value, t.p_value, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u(d, c).u, 6.0 * 7 - 3);
}

TEST(RankTest, NormalApproximationWithTies) {
  const std::vector<double> a{1, 2, 2, 3, 4, 5, 5, 6}, b{3, 4, 5, 5, 6, 7, 8, 8, 9};
  const RankTest t = mann_whitney_u(a, b);
  EXPECT_FALSE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 12.5);
  EXPECT_NEAR(std::abs(t.z), 2.2338025357895863, 1e-9);
  EXPECT_NEAR(t.p_value, 0.025496068631499596, 1e-9);
}

TEST(RankTest, DegenerateInputs) {
  const std::vector<double> same(10, 1.5), empty;
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, same).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, empty).p_value, 1.0);
  const std::vector<double> bad{1.0, std::nan("")};
  EXPECT_THROW(mann_whitney_u(bad, same), UsageError);
}

TEST(RankTest, FalseAlarmRateNearAlpha) {
  // Same distribution on both sides: p < 0.05 in about 5% of trials, not more.
  int alarms = 0;
  const int trials = 400;
  for (int i = 0; i < trials; ++i) {
    auto a = noisy(1.0, 0.05, 25, 1000 + 2 * i), b = noisy(1.0, 0.05, 25, 1001 + 2 * i);
    if (mann_whitney_u(a, b).p_value < 0.05) ++alarms;
  }
  EXPECT_LT(alarms, trials * 0.09);
  EXPECT_GT(alarms, 0);  // a test that never fires is broken too
}

TEST(Compare, ClearRegression) {
  const Comparison c = compare_results(synthetic(1), synthetic(101, 1.20));
  const auto& r = row_for(c, 4096);
  EXPECT_EQ(r.verdict, Verdict::regression);
  EXPECT_NEAR(r.ratio, 1.20, 0.03);
  EXPECT_LT(r.test.p_value, 1e-6);
  EXPECT_GT(r.ratio_ci_low, 1.1);
  EXPECT_EQ(c.regressions, 1u);
  EXPECT_TRUE(c.has_regression());
  EXPECT_EQ(c.geomean_count, 3u);
  EXPECT_NEAR(c.geomean_ratio, std::cbrt(1.20), 0.03);
  EXPECT_NE(to_markdown(c).find("**REGRESSION**"), std::string::npos);
}

TEST(Compare, ClearImprovement) {
  const Comparison c = compare_results(synthetic(2), synthetic(202, 0.7));
  EXPECT_EQ(row_for(c, 4096).verdict, Verdict::improvement);
  EXPECT_EQ(c.improvements, 1u);
  EXPECT_FALSE(c.has_regression());
  EXPECT_LT(c.geomean_ratio, 1.0);
}

TEST(Compare, SmallSignificantChangeStaysWithinThreshold) {
  // 2% slower with very little noise: detectable, but under a 5% threshold.
  const Comparison c = compare_results(synthetic(3, 1.0, 0.002), synthetic(303, 1.02, 0.002));
  EXPECT_EQ(row_for(c, 4096).verdict, Verdict::within_threshold);
  EXPECT_FALSE(c.has_regression());
  // The same data with a 1% threshold is a regression.
  CompareOptions strict;
  strict.threshold = 0.01;
  EXPECT_TRUE(compare_results(synthetic(3, 1.0, 0.002), synthetic(303, 1.02, 0.002), strict).has_regression());
}

TEST(Compare, NoiseOnlyRaisesNoAlarm) {
  // Many pairs of runs from one distribution with a realistic 3% CV: never a regression.
  for (unsigned seed = 0; seed < 60; ++seed) {
    const Comparison c = compare_results(synthetic(10 * seed), synthetic(10 * seed + 5, 1.0, 0.03));
    EXPECT_FALSE(c.has_regression()) << "seed " << seed << "\n" << to_text(c);
    EXPECT_EQ(c.improvements, 0u) << "seed " << seed;
    EXPECT_NEAR(c.geomean_ratio, 1.0, 0.03);
  }
}

TEST(Compare, MissingRecordsOnEitherSide) {
  ResultSet base = synthetic(4), next = synthetic(404);
  next.records.erase(next.records.begin());  // n=1024 gone from new
  next.records.push_back(record("bandwidth.add", "spin_hold", 1 << 20, noisy(0.01, 0.02, 30, 9)));
  const Comparison c = compare_results(base, next);
  EXPECT_EQ(c.missing, 2u);
  EXPECT_EQ(row_for(c, 1024).verdict, Verdict::missing_in_new);
  EXPECT_EQ(row_for(c, 1 << 20).verdict, Verdict::missing_in_base);
  EXPECT_EQ(c.geomean_count, 2u);
  EXPECT_FALSE(c.has_regression());
  // A different dtype or params is a different record.
  next = synthetic(404);
  next.records[1].dtype = DType::fp16;
  EXPECT_EQ(compare_results(base, next).missing, 2u);
}

TEST(Compare, AJudgedRecordMissingFromTheNewRunFailsTheGate) {
  ResultSet base = synthetic(4), next = synthetic(404);
  next.records.erase(next.records.begin());  // n=1024 gone from new: a section that crashed
  Comparison c = compare_results(base, next);
  EXPECT_FALSE(c.has_regression());
  EXPECT_EQ(c.missing_judged, 1u);
  EXPECT_TRUE(row_for(c, 1024).missing_judged);
  EXPECT_TRUE(c.fails_on_missing());
  EXPECT_NE(to_text(c).find("1 judged in the base and missing from the new run"), std::string::npos);
  EXPECT_EQ(to_json(c)["fails_on_missing"], true);
  // Allowed where that is intended.
  c = compare_results(base, next, CompareOptions{.allow_missing = true});
  EXPECT_EQ(c.missing_judged, 1u);
  EXPECT_FALSE(c.fails_on_missing());
  // A record the base never judges may go: informational, or carried over from a cache.
  for (const bool carried : {false, true}) {
    ResultSet shown = synthetic(4);
    if (carried) mark_carried_over(shown.records[0], {"/cache/ceilings.json", "2026-12-01T00:00:00Z"});
    else shown.records[0].gate = RecordGate{.informational = true, .reason = "host latency"};
    EXPECT_FALSE(is_judged(shown.records[0]));
    const Comparison dropped = compare_results(shown, next);
    EXPECT_EQ(dropped.missing, 1u);
    EXPECT_EQ(dropped.missing_judged, 0u);
    EXPECT_FALSE(dropped.fails_on_missing());
  }
}

TEST(Compare, ACarriedOverRecordIsShownAndNeverJudged) {
  ResultSet base = synthetic(4), next = synthetic(404, 1.5);  // n=4096 50% slower
  std::size_t slowed = 0;
  for (std::size_t i = 0; i < next.records.size(); ++i)
    if (next.records[i].params.value("n", 0L) == 4096) slowed = i;
  mark_carried_over(next.records[slowed], {"/cache/ceilings-GPU-1.json", "2026-12-01T00:00:00Z"});
  const Comparison c = compare_results(base, next);
  const RecordComparison& row = row_for(c, 4096);
  EXPECT_EQ(row.verdict, Verdict::informational);
  EXPECT_NE(row.note.find("carried over from /cache/ceilings-GPU-1.json (measured 2026-12-01T00:00:00Z)"),
            std::string::npos)
      << row.note;
  EXPECT_FALSE(c.has_regression());
  // A marker that is not an object still says "not measured here".
  Record damaged = next.records[slowed];
  damaged.extra[extra_key::carried_over] = "yes";
  ASSERT_TRUE(carried_over(damaged));
  EXPECT_TRUE(carried_over(damaged)->source.empty());
  // Only carried-over records matched: nothing was compared.
  ResultSet one_base, one_next;
  one_base.records = {base.records[slowed]};
  one_next.records = {next.records[slowed]};
  EXPECT_TRUE(compare_results(one_base, one_next).nothing_compared());
}

TEST(Compare, DifferentDevicesAndClocksAreReported) {
  ResultSet base = synthetic(5), next = synthetic(505);
  EXPECT_FALSE(compare_results(base, next).different_devices);
  next.context.device->name = "NVIDIA H100 80GB HBM3";
  Comparison c = compare_results(base, next);
  EXPECT_TRUE(c.different_devices);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings[0].find("different GPUs"), std::string::npos);

  next = synthetic(505);
  next.context.device = h200("GPU-bbbb");
  c = compare_results(base, next);
  EXPECT_TRUE(c.different_devices);
  EXPECT_NE(c.warnings[0].find("different physical GPUs"), std::string::npos);

  next = synthetic(505);
  next.context.clocks_start.sm_mhz = 1500;  // 24% lower
  c = compare_results(base, next);
  EXPECT_TRUE(c.different_clocks);
  next.context.clocks_start.sm_mhz = 1900;  // 4%: within tolerance
  EXPECT_FALSE(compare_results(base, next).different_clocks);
}

TEST(Compare, NaiveWallClockIsNeverJudged) {
  ResultSet base, next;
  base.records.push_back(record("timing", "wall_naive", 4096, noisy(0.02, 0.02, 20, 1)));
  next.records.push_back(record("timing", "wall_naive", 4096, noisy(0.04, 0.02, 20, 2)));
  const Comparison c = compare_results(base, next);
  EXPECT_EQ(c.rows.at(0).verdict, Verdict::informational);
  EXPECT_FALSE(c.has_regression());
  EXPECT_EQ(c.geomean_count, 0u);
}

TEST(Compare, TooFewSamplesSaySo) {
  ResultSet base, next;
  base.records.push_back(record("matmul", "cuda_events", 64, {1.0, 1.01, 0.99}));
  next.records.push_back(record("matmul", "cuda_events", 64, {2.0, 2.01, 1.99}));
  const Comparison c = compare_results(base, next);
  EXPECT_EQ(c.rows.at(0).verdict, Verdict::no_significant_change);
  EXPECT_NE(c.rows.at(0).note.find("too few samples"), std::string::npos);
}

TEST(Compare, ThresholdParsing) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold(" 2.5 %"), 0.025);
  EXPECT_DOUBLE_EQ(parse_threshold("0.1"), 0.1);
  EXPECT_THROW(parse_threshold("five"), UsageError);
  EXPECT_THROW(parse_threshold("5%%"), UsageError);
  EXPECT_THROW(parse_threshold("-1%"), UsageError);
  EXPECT_THROW(parse_threshold(""), UsageError);
}

TEST(Compare, MalformedFilesAreUsageErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "ridge_compare_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  EXPECT_THROW(load_result_file(write("broken.json", "{\"schema\": \"ridge.results\", ")), UsageError);
  EXPECT_THROW(load_result_file(write("other.json", "{\"hello\": 1}")), UsageError);
  EXPECT_THROW(load_result_file(write("norecords.json", "{\"schema\":\"ridge.results\",\"schema_version\":1,\"context\":{}}")),
               UsageError);
  EXPECT_THROW(load_result_file(dir / "does_not_exist.json"), UsageError);
  // A round trip through the writer compares equal to itself.
  const ResultSet s = synthetic(6);
  const auto path = write("good.json", to_json(s).dump());
  const Comparison c = compare_results(load_result_file(path), load_result_file(path));
  EXPECT_EQ(c.unchanged, 3u);
  EXPECT_DOUBLE_EQ(c.geomean_ratio, 1.0);
  std::filesystem::remove_all(dir);
}

TEST(Compare, JsonCarriesVerdicts) {
  const Comparison c = compare_results(synthetic(7), synthetic(707, 1.5));
  const auto j = to_json(c);
  EXPECT_EQ(j["schema"], "ridge.compare");
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][2]["verdict"], "REGRESSION");
}

TEST(CompareScale, NothingMatchedIsReported) {
  ResultSet a, b;
  Record r;
  r.name = "one";
  r.method = Method::cuda_events;
  r.samples_ms = {1, 1.1, 0.9};
  finalize(r);
  a.records.push_back(r);
  r.name = "two";
  b.records.push_back(r);
  const Comparison c = compare_results(a, b);
  EXPECT_EQ(c.matched, 0u);
  EXPECT_TRUE(c.nothing_compared());
  EXPECT_EQ(c.missing, 2u);
  // No ratio was taken: the mean is NaN (0 read as "infinitely faster"), and the reason says why.
  EXPECT_TRUE(std::isnan(c.geomean_ratio));
  EXPECT_TRUE(to_json(c)["geomean_ratio"].is_null());
  EXPECT_TRUE(to_json(c)["nothing_compared"].get<bool>());
  EXPECT_NE(nothing_compared_reason(c).find("0 matched of 1 base and 1 new"), std::string::npos);
  const Comparison same = compare_results(a, a);
  EXPECT_EQ(same.matched, 1u);
  EXPECT_FALSE(same.nothing_compared());
  EXPECT_EQ(nothing_compared_reason(same), "");
  EXPECT_FALSE(to_json(same)["nothing_compared"].get<bool>());
  // Only informational records matched: nothing was judged either.
  a.records[0].method = Method::wall_naive;
  EXPECT_TRUE(compare_results(a, a).nothing_compared());
}

TEST(CompareScale, LargeComparisonsUseOrderStatisticIntervals) {
  ResultSet a, b;
  for (int i = 0; i < 3; ++i) {
    Record r;
    r.name = "k";
    r.method = Method::cuda_events;
    r.params = {{"n", i}};
    for (int j = 0; j < 41; ++j) r.samples_ms.push_back(1.0 + 0.001 * ((j * 7) % 41));
    finalize(r);
    a.records.push_back(r);
    for (auto& v : r.samples_ms) v *= 1.10;
    finalize(r);
    b.records.push_back(r);
  }
  CompareOptions small_budget;
  small_budget.bootstrap_budget = 1000;  // 246 samples x 2000 resamples is over it
  const Comparison big = compare_results(a, b, small_budget);
  EXPECT_EQ(big.ratio_ci_method, "order_statistics");
  ASSERT_EQ(big.rows.size(), 3u);
  for (const auto& row : big.rows) {
    EXPECT_NEAR(row.ratio, 1.10, 1e-9);
    EXPECT_LT(row.ratio_ci_low, row.ratio);
    EXPECT_GT(row.ratio_ci_high, row.ratio);
    EXPECT_GT(row.ratio_ci_low, 1.08);  // medians' intervals are about +-0.7% each here
    EXPECT_LT(row.ratio_ci_high, 1.12);
  }
  EXPECT_NE(big.warnings.back().find("order-statistic"), std::string::npos);
  const Comparison usual = compare_results(a, b);
  EXPECT_EQ(usual.ratio_ci_method, "bootstrap");
  EXPECT_EQ(usual.rows[0].verdict, big.rows[0].verdict) << "the verdict does not depend on the interval";
}

TEST(CompareScale, ChecksAreShownNotJudged) {
  ResultSet a;
  Record r;
  r.name = "decode.check_logits";
  r.method = Method::none;
  r.samples_ms = {0.5};  // a check that somehow carries a positive number is still not a timing
  finalize(r);
  a.records.push_back(r);
  const Comparison c = compare_results(a, a);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::informational);
  EXPECT_TRUE(c.nothing_compared());
}

// ---- gates and repeated baselines (issue 15, part 8: a gate must not fail identical code) --------

namespace {

// A set of one host-latency-dominated record (per-sample events of a tiny GEMM: 25 us of which
// ~22 us is launch latency) and one kernel-bound record (2.74 ms), as the timing exercise writes.
ResultSet timing_like(unsigned seed, double host_latency_us, double kernel_scale = 1.0, bool gated = true) {
  ResultSet s;
  s.context.device = h200();
  s.context.git_sha = "abc123";
  Record small = record("timing", "cuda_events", 256, noisy((3.0 + host_latency_us) * 1e-3, 0.03, 50, seed));
  Record small_graph = record("timing", "graph_replay", 256, noisy(2.77e-3, 0.005, 50, seed + 1));
  Record large = record("timing", "cuda_events", 4096, noisy(2.74 * kernel_scale, 0.003, 20, seed + 2));
  if (gated) {
    std::vector<Record*> same_case{&small, &small_graph};
    gate_by_host_latency(same_case);
    large.gate = host_latency_gate(large, host_latency_us * 1e-3);
  }
  s.records = {small, small_graph, large};
  return s;
}

const RecordComparison& row_of(const Comparison& c, const std::string& method, long n) {
  for (const auto& r : c.rows)
    if (r.method == method && r.params.value("n", 0L) == n) return r;
  throw std::runtime_error("row not found");
}

}  // namespace

TEST(RecordGate, HostLatencyDominatedRecordsAreInformationalOthersGetAMinimum) {
  Record small = record("timing", "cuda_events", 256, std::vector<double>(20, 0.025));
  const auto g = host_latency_gate(small, 0.022);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->informational);
  EXPECT_NE(g->reason.find("88%"), std::string::npos);
  Record large = record("timing", "cuda_events", 4096, std::vector<double>(20, 2.2));
  const auto l = host_latency_gate(large, 0.022);
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->informational);
  EXPECT_NEAR(l->min_threshold, host_latency_run_to_run_spread * 0.01, 1e-12);
  // Ten calls per sample spread the latency over them.
  large.repeats_per_sample = 10;
  EXPECT_NEAR(host_latency_gate(large, 0.022)->min_threshold, host_latency_run_to_run_spread * 0.001, 1e-12);
  EXPECT_FALSE(host_latency_gate(large, 0));
  EXPECT_FALSE(host_latency_gate(large, -1));
}

TEST(RecordGate, ACaseTimedBySeveralMethodsGatesOnlyTheRowsThatCarryTheLatency) {
  Record events = record("decode", "cuda_events", 1, std::vector<double>(10, 0.0300));
  Record spin = record("decode", "spin_hold", 1, std::vector<double>(10, 0.0110));
  Record graph = record("decode", "graph_replay", 1, std::vector<double>(10, 0.0100));
  const auto latency = gate_by_host_latency({&events, &spin, &graph});
  ASSERT_TRUE(latency);
  EXPECT_NEAR(*latency, 0.02, 1e-12);
  ASSERT_TRUE(events.gate);
  EXPECT_TRUE(events.gate->informational);  // 20 of 30 us
  EXPECT_FALSE(spin.gate);
  EXPECT_FALSE(graph.gate);
  Record alone = record("decode", "cuda_events", 2, std::vector<double>(10, 0.03));
  EXPECT_FALSE(gate_by_host_latency({&alone}));
  EXPECT_FALSE(alone.gate);
}

TEST(RecordGate, RoundTripsThroughJsonAndOldRecordsHaveNone) {
  Record r = record("timing", "cuda_events", 256, std::vector<double>(5, 0.025));
  EXPECT_FALSE(to_json(r).contains("gate"));  // files without gates are written as before
  EXPECT_FALSE(record_from_json(to_json(r)).gate);
  r.gate = RecordGate{.informational = false, .min_threshold = 0.12, .reason = "known spread"};
  const Record back = record_from_json(to_json(r));
  ASSERT_TRUE(back.gate);
  EXPECT_FALSE(back.gate->informational);
  EXPECT_DOUBLE_EQ(back.gate->min_threshold, 0.12);
  EXPECT_EQ(back.gate->reason, "known spread");
  nlohmann::json bad = to_json(r);
  bad["gate"]["mode"] = "sometimes";
  EXPECT_THROW(record_from_json(bad, "records[0]"), UsageError);
  bad["gate"] = {{"mode", "judged"}, {"min_threshold", -0.1}};
  try {
    record_from_json(bad, "records[0]");
    FAIL() << "a negative min_threshold was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("records[0].gate.min_threshold"), std::string::npos) << e.what();
  }
}

TEST(CompareGates, AHostLatencyShiftBetweenProcessesDoesNotGate) {
  // Identical code; the second process's launch latency is 16% higher (the H200 false alarm).
  const Comparison c = compare_results(timing_like(1, 22), timing_like(100, 25.5));
  const auto& small = row_of(c, "cuda_events", 256);
  EXPECT_EQ(small.verdict, Verdict::informational);
  EXPECT_NE(small.note.find("host launch latency"), std::string::npos) << small.note;
  EXPECT_FALSE(c.has_regression());
  EXPECT_FALSE(c.nothing_compared());
  // The same files without gates (an older ridge) raise the alarm this change removes.
  const Comparison old = compare_results(timing_like(1, 22, 1.0, false), timing_like(100, 25.5, 1.0, false));
  EXPECT_EQ(row_of(old, "cuda_events", 256).verdict, Verdict::regression);
}

TEST(CompareGates, ATenPercentSlowdownOfAGatingRecordIsFlagged) {
  const Comparison c = compare_results(timing_like(1, 22), timing_like(100, 25.5, 1.10));
  const auto& large = row_of(c, "cuda_events", 4096);
  EXPECT_EQ(large.verdict, Verdict::regression);
  EXPECT_NEAR(large.noise_band, 0.05, 1e-12);  // the latency's minimum (0.4%) is below the threshold
  EXPECT_EQ(large.noise_band_source, "threshold");
  EXPECT_EQ(c.regressions, 1u);
}

TEST(CompareGates, AProducersMinimumThresholdWidensTheBand) {
  ResultSet base = synthetic(1), slower = synthetic(50, 1.08);
  EXPECT_TRUE(compare_results(base, slower).has_regression());
  slower.records[2].gate = RecordGate{.min_threshold = 0.10, .reason = "tile choice moves between runs"};
  const Comparison c = compare_results(base, slower);
  const auto& row = row_for(c, 4096);
  EXPECT_EQ(row.verdict, Verdict::within_threshold);
  EXPECT_DOUBLE_EQ(row.noise_band, 0.10);
  EXPECT_EQ(row.noise_band_source, "producer");
  EXPECT_EQ(row.note, "tile choice moves between runs");
  EXPECT_EQ(noise_band_text(row), "10.0% (producer)");
  // Beyond the producer's minimum it is flagged again.
  EXPECT_TRUE(compare_results(base, synthetic(50, 1.15)).has_regression());
}

namespace {

// Runs of identical code whose n=4096 median moves from run to run by the given factors (each run's
// samples are tight around its own median, so the within-run test is certain of any shift).
std::vector<ResultSet> repeated_runs(const std::vector<double>& factors, unsigned seed) {
  std::vector<ResultSet> runs;
  for (std::size_t i = 0; i < factors.size(); ++i) {
    ResultSet s = synthetic(seed + 10 * unsigned(i), 1.0, 0.002);
    s.context.git_sha = "abc123";
    for (double& v : s.records[2].samples_ms) v *= factors[i];
    finalize(s.records[2]);
    runs.push_back(std::move(s));
  }
  return runs;
}

// Ten runs whose medians spread by about 3.8% (relative standard deviation; 4.4% robust).
const std::vector<double> ten_runs{0.94, 0.96, 0.97, 0.99, 1.0, 1.0, 1.01, 1.03, 1.04, 1.06};
const std::vector<double> three_runs{0.99, 1.0, 1.01};

}  // namespace

TEST(CompareBaselines, RunToRunSpreadSuppressesShiftsWithinItAndFlagsBeyond) {
  const std::vector<ResultSet> runs = repeated_runs(ten_runs, 7);
  // A new run 6% slower than the runs' center: against the fastest run alone the within-run test is
  // certain (tight samples) and the change beyond the threshold ...
  ResultSet next = synthetic(999, 1.0, 0.002);
  next.context.git_sha = "abc123";
  std::vector<double> medians;
  for (const auto& r : runs) medians.push_back(r.records[2].summary.median);
  const std::size_t fastest = std::size_t(std::min_element(medians.begin(), medians.end()) - medians.begin());
  std::sort(medians.begin(), medians.end());
  const double center = (medians[4] + medians[5]) / 2;
  for (double& v : next.records[2].samples_ms) v *= 1.06 * center / 2.0;
  finalize(next.records[2]);
  EXPECT_EQ(row_for(compare_results(runs[fastest], next), 4096).verdict, Verdict::regression);
  // ... but the ten baselines' medians spread by 3.8%, so 3 x spread is the band and 6% is inside it.
  const Comparison c = compare_results(runs, next);
  EXPECT_EQ(c.baselines, 10u);
  const auto& row = row_for(c, 4096);
  EXPECT_EQ(row.baseline_runs, 10u);
  EXPECT_EQ(row.base_count, 300u);  // pooled samples
  EXPECT_NEAR(row.base_median_ms, center, 1e-12);
  EXPECT_NEAR(row.run_to_run_spread, 1.4826 * 0.03, 0.003);  // robust: 1.4826 x the median |deviation| of 3%
  EXPECT_EQ(row.noise_band_source, "run-to-run");
  EXPECT_NEAR(row.noise_band, 3 * row.run_to_run_spread, 1e-12);
  EXPECT_NE(row.verdict, Verdict::regression);
  EXPECT_FALSE(c.has_regression());
  EXPECT_NE(noise_band_text(row).find("run-to-run"), std::string::npos);
  // A change well beyond the band is still flagged.
  for (double& v : next.records[2].samples_ms) v *= 1.5;
  finalize(next.records[2]);
  const Comparison beyond = compare_results(runs, next);
  EXPECT_EQ(row_for(beyond, 4096).verdict, Verdict::regression);
  // Records whose medians agree across runs keep the plain threshold.
  EXPECT_EQ(row_for(beyond, 1024).noise_band_source, "threshold");
}

TEST(CompareBaselines, OneBaselineIsThePairwiseComparison) {
  const ResultSet base = synthetic(1), next = synthetic(50, 1.3);
  const Comparison pair = compare_results(base, next);
  const Comparison list = compare_results(std::span<const ResultSet>(&base, 1), next);
  ASSERT_EQ(pair.rows.size(), list.rows.size());
  for (std::size_t i = 0; i < pair.rows.size(); ++i) {
    EXPECT_EQ(pair.rows[i].verdict, list.rows[i].verdict);
    EXPECT_DOUBLE_EQ(pair.rows[i].ratio, list.rows[i].ratio);
    EXPECT_DOUBLE_EQ(pair.rows[i].test.p_value, list.rows[i].test.p_value);
    EXPECT_EQ(pair.rows[i].run_to_run_spread, -1);
  }
}

TEST(CompareBaselines, BaselinesThatAreNotRunsOfTheSameCodeAreUsageErrors) {
  const ResultSet next = synthetic(50);
  EXPECT_THROW(compare_results(std::span<const ResultSet>(), next), UsageError);
  std::vector<ResultSet> runs = repeated_runs(three_runs, 3);
  const std::vector<std::string> labels{"a.json", "b.json", "c.json"};
  runs[2].context.device->name = "NVIDIA H100";
  try {
    compare_results(runs, next, {}, labels);
    FAIL() << "baselines of two GPUs were accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("baseline 3 (c.json) ran on NVIDIA H100"), std::string::npos) << e.what();
  }
  runs = repeated_runs(three_runs, 3);
  runs[1].context.git_sha = "def456";
  EXPECT_THROW(compare_results(runs, next), UsageError);
  runs = repeated_runs(three_runs, 3);
  for (auto& r : runs[1].records) r.name = "bandwidth.add";
  EXPECT_THROW(compare_results(runs, next), UsageError);
  CompareOptions negative;
  negative.spread_factor = -1;
  EXPECT_THROW(compare_results(repeated_runs({1.0, 1.01}, 3), next, negative), UsageError);
}

TEST(CompareBaselines, JsonStatesEachRowsBand) {
  const std::vector<ResultSet> runs = repeated_runs({0.98, 1.0, 1.01, 1.03}, 11);
  const nlohmann::json j = to_json(compare_results(runs, synthetic(50)));
  EXPECT_EQ(j["baselines"], 4);
  EXPECT_EQ(j["spread_factor"], 3.0);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["baseline_runs"], 4);
    EXPECT_GE(row["noise_band"].get<double>(), 0.05);
    EXPECT_FALSE(row["noise_band_source"].get<std::string>().empty());
  }
}

// Two terms of the noise band measured on the H200 (ten reports in a row, bench/report_repeatability.sh):
// kernels of a few microseconds move by a few hundred nanoseconds between processes, and a GEMM at the
// power cap moves with its SM clock.
TEST(CompareBands, ChangesBelowTheResolutionOrExplainedByTheClockDoNotGate) {
  auto one = [](double median_ms, unsigned seed, double sm_mhz) {
    ResultSet s;
    s.context.device = h200();
    Record r = record("tiny", "spin_hold", 256, noisy(median_ms, 0.005, 60, seed));
    r.clocks_start.sm_mhz = r.clocks_end.sm_mhz = sm_mhz;
    s.records.push_back(r);
    return s;
  };
  // +6% of 5 us is 0.3 us: below the 0.5 us resolution.
  Comparison c = compare_results(one(0.005, 1, 1980), one(0.0053, 2, 1980));
  EXPECT_NE(c.rows[0].verdict, Verdict::regression);
  EXPECT_EQ(c.rows[0].noise_band_source, "resolution");
  EXPECT_NE(noise_band_text(c.rows[0]).find("resolution 0.50 us"), std::string::npos) << noise_band_text(c.rows[0]);
  CompareOptions exact;
  exact.min_change_us = 0;
  EXPECT_EQ(compare_results(one(0.005, 1, 1980), one(0.0053, 2, 1980), exact).rows[0].verdict, Verdict::regression);
  // +7% of 2 ms with the SM clock 6% lower: the band is 5% + 6%.
  c = compare_results(one(2.0, 3, 1980), one(2.14, 4, 1860));
  EXPECT_NE(c.rows[0].verdict, Verdict::regression);
  EXPECT_EQ(c.rows[0].noise_band_source, "clock");
  EXPECT_NEAR(c.rows[0].noise_band, 0.05 + 120.0 / 1980, 1e-9);
  CompareOptions strict;
  strict.widen_by_clock = false;
  EXPECT_EQ(compare_results(one(2.0, 3, 1980), one(2.14, 4, 1860), strict).rows[0].verdict, Verdict::regression);
  // The same +7% at the same clock is a regression.
  EXPECT_EQ(compare_results(one(2.0, 3, 1980), one(2.14, 4, 1980)).rows[0].verdict, Verdict::regression);
}

TEST(LaunchBound, EventsThatMostlyTimedTheHostSaySo) {
  // The H200's Triton x + y on 2^20 elements, 10 calls a sample from Python: 13 us a call, of which
  // the host spent about 12.5 us queueing it (the kernel itself takes 2.5 us).
  Measurement m;
  m.method = Method::cuda_events;
  m.samples_ms = std::vector<double>(20, 0.01306);
  m.summary = summarize(m.samples_ms);
  m.repeats_per_sample = 10;
  m.host_queue_ms = 0.0125;
  const auto w = launch_bound_warning(m);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->rfind("launch-bound:", 0), 0u);
  EXPECT_NE(w->find("96%"), std::string::npos);
  EXPECT_EQ(to_record(m, "add", DType::fp32, nlohmann::json::object()).warnings, std::vector<std::string>{*w});
  m.host_queue_ms = 0.002;  // a long kernel: the host is far ahead of the GPU
  EXPECT_FALSE(launch_bound_warning(m));
  m.host_queue_ms = -1;  // not taken
  EXPECT_FALSE(launch_bound_warning(m));
  m.host_queue_ms = 0.0125;
  m.method = Method::spin_hold;  // launch-free methods never carry it
  EXPECT_FALSE(launch_bound_warning(m));
}

// Settled clocks (issue: a gate that cannot fail): a record's clock is the clock its samples ran
// at. A short record whose start reading caught the GPU idle is not "at another clock".
TEST(CompareBands, TheSamplesClockDecidesNotTheIdleReadingAtTheStart) {
  auto one = [](double median_ms, unsigned seed, double start_mhz, double sample_mhz) {
    ResultSet s;
    s.context.device = h200();
    Record r = record("add", "graph_replay", 1 << 20, noisy(median_ms, 0.005, 60, seed));
    r.clocks_start.sm_mhz = start_mhz;
    r.clocks_end.sm_mhz = sample_mhz;
    r.extra[extra_key::sample_sm_mhz] = std::vector<double>(r.samples_ms.size(), sample_mhz);
    s.records.push_back(r);
    return s;
  };
  // Idle 345 MHz at the start of one run, both sampled at 1980 MHz: no clock term, and +10% flags.
  Comparison c = compare_results(one(0.02, 1, 1980, 1980), one(0.022, 2, 345, 1980));
  EXPECT_NEAR(c.rows[0].clock_difference, 0, 1e-12);
  EXPECT_EQ(c.rows[0].verdict, Verdict::regression);
  EXPECT_NEAR(c.rows[0].smallest_flagged_slowdown, 0.05, 0.01);
  for (const auto& w : c.warnings) EXPECT_EQ(w.find("different SM clocks"), std::string::npos) << w;
  // Sampled 19% apart: the band widens, and the comparison names the record rather than staying quiet.
  c = compare_results(one(0.02, 1, 1980, 1980), one(0.022, 2, 1980, 1600));
  EXPECT_EQ(c.rows[0].noise_band_source, "clock");
  EXPECT_NE(c.rows[0].verdict, Verdict::regression);
  EXPECT_GE(c.rows[0].smallest_flagged_slowdown, c.rows[0].noise_band);
  bool named = false;
  for (const auto& w : c.warnings) named |= w.find("different SM clocks") != std::string::npos && w.find("add") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_NE(to_text(c).find("flags"), std::string::npos);
  EXPECT_TRUE(to_json(c)["rows"][0].contains("smallest_flagged_slowdown"));
}

// The smallest flaggable slowdown is never below what the sampling noise allows.
TEST(CompareBands, TheSmallestFlaggedSlowdownCoversTheIntervalOfNoisySamples) {
  auto one = [](double cv, unsigned seed) {
    ResultSet s;
    s.context.device = h200();
    s.records.push_back(record("noisy", "cuda_events", 4096, noisy(1.0, cv, 20, seed)));
    return s;
  };
  const Comparison quiet = compare_results(one(0.005, 1), one(0.005, 2));
  const Comparison loud = compare_results(one(0.3, 1), one(0.3, 2));
  EXPECT_NEAR(quiet.rows[0].smallest_flagged_slowdown, 0.05, 1e-9);
  EXPECT_GT(loud.rows[0].smallest_flagged_slowdown, 0.1);
}

// Like with like: a compute-bound GEMM at the power cap runs as fast as its clock allows. Sampled
// at a lower clock it is compared at equal clocks, so a real slowdown still shows, and the band
// is not widened by the clock change.
TEST(CompareBands, ComputeBoundRecordsAreComparedAtEqualClocks) {
  auto one = [](double median_ms, unsigned seed, double sample_mhz) {
    ResultSet s;
    s.context.device = h200();
    Record r = record("matmul", "graph_replay", 4096, noisy(median_ms, 0.003, 40, seed));
    r.extra["bound"] = "compute";
    r.extra[extra_key::sample_sm_mhz] = std::vector<double>(r.samples_ms.size(), sample_mhz);
    s.records.push_back(r);
    return s;
  };
  CompareOptions equal_clocks;
  equal_clocks.scale_compute_bound_by_clock = true;
  // 1650 MHz instead of 1980: 20% longer, all of it the clock.
  Comparison c = compare_results(one(0.175, 1, 1980), one(0.175 * 1980 / 1650, 2, 1650), equal_clocks);
  EXPECT_NEAR(c.rows[0].clock_scale, 1650.0 / 1980, 1e-9);
  EXPECT_NEAR(c.rows[0].ratio, 1.0, 0.01);
  EXPECT_NE(c.rows[0].verdict, Verdict::regression);
  EXPECT_NE(c.rows[0].noise_band_source, "clock");
  bool named = false;
  for (const auto& w : c.warnings) named |= w.find("compared at equal clocks") != std::string::npos;
  EXPECT_TRUE(named);
  // The same time at a 20% higher clock is a 20% slowdown of the code: flagged at equal clocks;
  // widening the band by the clock change would hide it.
  const double slow_clock_ms = 0.175 * 1980 / 1650;
  c = compare_results(one(slow_clock_ms, 1, 1650), one(slow_clock_ms, 3, 1980), equal_clocks);
  EXPECT_EQ(c.rows[0].verdict, Verdict::regression);
  EXPECT_NE(compare_results(one(slow_clock_ms, 1, 1650), one(slow_clock_ms, 3, 1980)).rows[0].verdict,
            Verdict::regression);  // the default widens the band instead
}

namespace {
// The GPT-2 decode step at batch 1 of one run: per-sample events and the spin-hold twin, in ms.
ResultSet decode_run(double events_ms, double spin_ms, unsigned seed) {
  ResultSet s;
  s.context.device = h200();
  Record events = record("decode", "cuda_events", 1, noisy(events_ms, 0.004, 50, seed));
  Record spin = record("decode", "spin_hold", 1, noisy(spin_ms, 0.004, 50, seed + 1));
  std::vector<Record*> same_case{&events, &spin};
  gate_by_host_latency(same_case);
  s.records = {events, spin};
  return s;
}
}  // namespace

TEST(RecordGate, AProcessWhoseHostQueuedTwiceAsSlowlyIsNoRegression) {
  // H200, 2026-12-03, runs 3 and 8 of ten identical reports: run 8's host queued twice as slowly,
  // so its per-sample events read +6.2% while the spin-hold twin moved +2.1%.
  const Comparison c = compare_results(decode_run(0.3236, 0.3185, 3), decode_run(0.3439, 0.3252, 8));
  EXPECT_EQ(c.regressions, 0u);
  EXPECT_NE(row_of(c, "cuda_events", 1).verdict, Verdict::regression);
  // A real 10% slowdown of the work still shows, in both records.
  const Comparison slower = compare_results(decode_run(0.3236, 0.3185, 3), decode_run(0.3236 * 1.1, 0.3185 * 1.1, 8));
  EXPECT_EQ(row_of(slower, "spin_hold", 1).verdict, Verdict::regression);
}

// A 1.1 us kernel whose band is the 0.5 us resolution: a clock change of a few percent between the
// runs is a few ns there, so it does not widen the resolution (H200: a 0.6 us slowdown of the 1024-
// element add kernel read +48.9% against 45% resolution + 3.8% clock, and passed).
TEST(CompareBands, TheClockWidensTheRelativeBandNotTheResolution) {
  auto one = [](double median_ms, unsigned seed, double sample_mhz) {
    ResultSet s;
    s.context.device = h200();
    Record r = record("add", "graph_replay", 1024, noisy(median_ms, 0.01, 60, seed));
    r.extra[extra_key::sample_sm_mhz] = std::vector<double>(r.samples_ms.size(), sample_mhz);
    s.records.push_back(r);
    return s;
  };
  const Comparison c = compare_results(one(0.0011, 1, 1980), one(0.00163, 2, 1905));  // +0.53 us, +48%
  EXPECT_EQ(c.rows[0].noise_band_source, "resolution");
  EXPECT_NEAR(c.rows[0].noise_band, 0.5 / 1.1, 0.01);
  EXPECT_EQ(c.rows[0].verdict, Verdict::regression);
  // Identical work 3.8% apart in clock stays within the band.
  EXPECT_NE(compare_results(one(0.0011, 1, 1980), one(0.0011, 3, 1905)).rows[0].verdict, Verdict::regression);
}

// Two of the ten identical full reports of results/h200/gate, their raw samples as measured: the
// gate passes them, and flags each record class made slower by the report's testing aid, and
// nothing else.
TEST(CompareStoredH200Runs, IdenticalRunsPassAndEverySlowedClassIsFlagged) {
  const std::filesystem::path gate = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h200" / "gate";
  const ResultSet base = load_result_file(gate / "run-1.results.json.gz");
  const ResultSet next = load_result_file(gate / "run-2.results.json.gz");
  ASSERT_GT(base.records.size(), 80u);
  const Comparison same = compare_results(base, next);
  EXPECT_EQ(same.regressions, 0u);
  EXPECT_EQ(same.missing, 0u);
  const std::vector<detail::RecordSlowdown> slowdowns{
      {.selector = "bandwidth.add n=1024", .added_us = 0.6}, {.selector = "bandwidth.add n=2097152", .relative = 0.2},
      {.selector = "bandwidth.add n=67108864", .relative = 0.1}, {.selector = "matmul n=256", .relative = 0.2},
      {.selector = "matmul n=4096", .relative = 0.1},          {.selector = "timing case=large", .relative = 0.1},
      {.selector = "decode mode=eager", .relative = 0.1},      {.selector = "ceiling.tensor", .relative = 0.1}};
  for (const auto& slowdown : slowdowns) {
    ResultSet slowed = next;
    ASSERT_GT(slowdown.apply(slowed.records), 0u) << slowdown.selector;
    const Comparison c = compare_results(base, slowed);
    std::set<std::string> selected;
    for (const Record& r : slowed.records)
      if (slowdown.selects(r)) selected.insert(fmt::format("{} {} {}", r.name, to_string(r.method), r.params.dump()));
    std::size_t flagged = 0;
    for (const auto& row : c.rows) {
      const bool is_selected = selected.count(fmt::format("{} {} {}", row.name, row.method, row.params.dump())) > 0;
      if (row.verdict == Verdict::regression) {
        ++flagged;
        EXPECT_TRUE(is_selected) << slowdown.selector << " flagged " << row.name << " " << row.params.dump();
      }
    }
    EXPECT_GT(flagged, 0u) << slowdown.selector;
    EXPECT_EQ(flagged, c.regressions);
  }
}

TEST(CompareStoredH200Runs, CachedCeilingsAreNotJudgedAndAShortRunFailsTheGate) {
  // The two stored reports carry byte-identical ceiling records (read from the cache). Marked as a
  // report now marks them, they are shown and never judged; every other record still is.
  const std::filesystem::path gate = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h200" / "gate";
  ResultSet base = load_result_file(gate / "run-1.results.json.gz");
  ResultSet next = load_result_file(gate / "run-2.results.json.gz");
  std::size_t identical = 0;
  for (std::size_t i = 0; i < base.records.size(); ++i)
    if (base.records[i].samples_ms == next.records.at(i).samples_ms) {
      ++identical;
      mark_carried_over(base.records[i], {"ceilings-cache.json", "2026-12-03T18:40:42Z"});
      mark_carried_over(next.records[i], {"ceilings-cache.json", "2026-12-03T18:40:42Z"});
    }
  EXPECT_EQ(identical, 11u);
  const Comparison same = compare_results(base, next);
  std::size_t carried_rows = 0;
  for (const auto& row : same.rows)
    if (row.note.find("carried over") != std::string::npos) {
      ++carried_rows;
      EXPECT_EQ(row.verdict, Verdict::informational);
      EXPECT_EQ(row.name.rfind("ceiling.", 0), 0u) << row.name;
    }
  EXPECT_EQ(carried_rows, 11u);
  EXPECT_EQ(same.regressions, 0u);
  EXPECT_FALSE(same.fails_on_missing());
  // A new run that kept 1 of the 88 records (a report section that crashed) fails the gate.
  std::size_t judged_in_base = 0;
  for (const Record& r : base.records) judged_in_base += is_judged(r) && !r.samples_ms.empty();
  ResultSet short_run = next;
  const auto kept = std::find_if(short_run.records.begin(), short_run.records.end(), [](const Record& r) { return is_judged(r); });
  short_run.records = {*kept};
  const Comparison c = compare_results(base, short_run);
  EXPECT_FALSE(c.nothing_compared());
  EXPECT_EQ(c.missing_judged, judged_in_base - 1);
  EXPECT_TRUE(c.fails_on_missing());
}

namespace {

// A 1.5 us graph-replayed kernel: 30 samples with 0.3% noise, the run's level moved by `offset`.
ResultSet small_kernel_run(double level_us, unsigned seed) {
  ResultSet s;
  s.context.device = h200();
  s.records.push_back(record("bandwidth.add", "graph_replay", 1024, noisy(level_us * 1e-3, 0.003, 30, seed)));
  return s;
}

}  // namespace

TEST(CompareSuspects, SeveralBaselinesSetTheBandAndASmallJumpIsASuspectUntilConfirmed) {
  // Four baselines within 0.4% of each other; the new run 10% slower: 0.15 us, under the 0.5 us
  // resolution. One baseline: the resolution hides it. Four: their spread sets the band and the
  // jump is a suspect, not a regression and not a pass.
  std::vector<ResultSet> baselines;
  for (unsigned i = 0; i < 4; ++i) baselines.push_back(small_kernel_run(1.5 * (1 + 0.002 * (i % 2 ? 1 : -1)), 10 + i));
  const ResultSet slower = small_kernel_run(1.65, 20);
  const Comparison one = compare_results(baselines[0], slower);
  EXPECT_EQ(one.rows[0].noise_band_source, "resolution");
  EXPECT_EQ(one.suspects, 0u);
  EXPECT_EQ(one.regressions, 0u);
  const Comparison four = compare_results(baselines, slower);
  ASSERT_EQ(four.rows[0].verdict, Verdict::suspect) << to_text(four);
  EXPECT_NE(four.rows[0].noise_band_source, "resolution");
  EXPECT_LT(four.rows[0].smallest_flagged_slowdown, 0.1);  // the band it says it can flag is under 10%
  EXPECT_EQ(four.suspects, 1u);
  EXPECT_FALSE(four.has_regression());
  EXPECT_EQ(to_json(four)["suspects"], 1u);
  // Measured again in a fresh process: slower again confirms it, back to normal clears it.
  const Comparison confirmed = confirm_suspects(four, compare_results(baselines, small_kernel_run(1.66, 30)));
  EXPECT_EQ(confirmed.rows[0].verdict, Verdict::regression);
  EXPECT_EQ(confirmed.regressions, 1u);
  EXPECT_EQ(confirmed.suspects, 0u);
  EXPECT_NE(confirmed.rows[0].note.find("confirmed"), std::string::npos);
  const Comparison cleared = confirm_suspects(four, compare_results(baselines, small_kernel_run(1.5, 31)));
  EXPECT_EQ(cleared.rows[0].verdict, Verdict::within_threshold);
  EXPECT_FALSE(cleared.has_regression());
  // A jump past the resolution too is a regression at once.
  EXPECT_EQ(compare_results(baselines, small_kernel_run(2.2, 32)).rows[0].verdict, Verdict::regression);
}

TEST(CompareBaselines, OneBaselineThatJumpedDoesNotWidenTheBand) {
  // Ten baselines within 0.4%, one of them 25% slower (a process whose buffers landed badly). The
  // robust spread ignores it, so a 10% slowdown of the 2 ms record is flagged; the standard
  // deviation would have made the band 3 x 8% = 24%.
  std::vector<double> factors{1.0, 1.002, 0.998, 1.001, 0.999, 1.25, 1.0, 1.003, 0.997, 1.0};
  const std::vector<ResultSet> runs = repeated_runs(factors, 5);
  ResultSet next = synthetic(777, 1.0, 0.002);
  next.context.git_sha = "abc123";
  for (double& v : next.records[2].samples_ms) v *= 1.1;
  finalize(next.records[2]);
  const Comparison c = compare_results(runs, next);
  const auto& row = row_for(c, 4096);
  EXPECT_LT(row.run_to_run_spread, 0.01);
  EXPECT_EQ(row.verdict, Verdict::regression) << to_text(c);
}

// The resolution term of the band comes from the record's timing method on its GPU family where that
// was measured (results/h100/gate/resolution.md), and from the fixed min_change_us elsewhere.
TEST(CompareResolution, TheTableNamesFamiliesAndOnlyMeasuredPairs) {
  EXPECT_EQ(gpu_family(9, 0), "Hopper");
  EXPECT_EQ(gpu_family(8, 0), "Ampere");
  EXPECT_EQ(gpu_family(8, 9), "Ada");
  EXPECT_EQ(gpu_family(10, 0), "Blackwell");
  EXPECT_EQ(gpu_family(0, 0), "");
  const MethodResolution* graph = measured_resolution(Method::graph_replay, "Hopper");
  ASSERT_NE(graph, nullptr);
  EXPECT_GT(graph->run_to_run_sd_us, 0);
  EXPECT_LT(CompareOptions{}.spread_factor * graph->run_to_run_sd_us, CompareOptions{}.min_change_us);
  EXPECT_FALSE(graph->evidence.empty());
  EXPECT_EQ(measured_resolution(Method::graph_replay, "Ampere"), nullptr);  // never measured: the fixed term
  EXPECT_EQ(measured_resolution(Method::cuda_events, "Hopper"), nullptr);
  for (const MethodResolution& r : measured_resolutions()) EXPECT_LE(r.largest_jump_us, CompareOptions{}.min_change_us);
}

namespace {

// small_kernel_run on a Hopper GPU (compute capability 9.0).
ResultSet hopper_kernel_run(double level_us, unsigned seed, const std::string& method = "graph_replay") {
  ResultSet s;
  DeviceDescription d = h200();
  d.compute_capability_major = 9;
  s.context.device = d;
  s.records.push_back(record("bandwidth.add", method, 1024, noisy(level_us * 1e-3, 0.003, 30, seed)));
  return s;
}

}  // namespace

TEST(CompareResolution, AMeasuredMethodCatchesATenPercentStepOfA1p5UsKernelAgainstOneBaseline) {
  const ResultSet base = hopper_kernel_run(1.5, 40);
  // Identical code: no suspect, no regression.
  const Comparison same = compare_results(base, hopper_kernel_run(1.5, 41));
  EXPECT_EQ(same.suspects + same.regressions, 0u) << to_text(same);
  // 10% slower (0.15 us): beyond 3 x graph replay's measured spread on Hopper, within the 0.5 us one
  // process can jump: a suspect, confirmed by a fresh process that is slower again.
  const Comparison slower = compare_results(base, hopper_kernel_run(1.65, 42));
  const RecordComparison& row = slower.rows.at(0);
  EXPECT_EQ(slower.gpu_family, "Hopper");
  EXPECT_EQ(row.noise_band_source, "resolution");
  EXPECT_EQ(row.resolution_basis, "Hopper graph_replay");
  EXPECT_NEAR(row.resolution_us, 3 * measured_resolution(Method::graph_replay, "Hopper")->run_to_run_sd_us, 1e-12);
  EXPECT_NE(noise_band_text(row).find("Hopper graph_replay"), std::string::npos) << noise_band_text(row);
  EXPECT_LT(row.smallest_flagged_slowdown, 0.1);
  ASSERT_EQ(row.verdict, Verdict::suspect) << to_text(slower);
  EXPECT_NE(row.note.find("re-measure"), std::string::npos) << row.note;
  EXPECT_EQ(confirm_suspects(slower, compare_results(base, hopper_kernel_run(1.66, 43))).regressions, 1u);
  EXPECT_EQ(to_json(slower)["rows"][0]["resolution_basis"], "Hopper graph_replay");
  // Beyond the 0.5 us jump as well (+40%): a regression at once.
  EXPECT_EQ(compare_results(base, hopper_kernel_run(2.1, 44)).rows.at(0).verdict, Verdict::regression);
  // The fixed resolution (--fixed-resolution), an unmeasured method or an unknown GPU: 0.5 us hides the 10%.
  CompareOptions fixed;
  fixed.per_method_resolution = false;
  EXPECT_EQ(compare_results(base, hopper_kernel_run(1.65, 42), fixed).rows.at(0).verdict, Verdict::within_threshold);
  const Comparison events = compare_results(hopper_kernel_run(1.5, 40, "cuda_events"), hopper_kernel_run(1.65, 42, "cuda_events"));
  EXPECT_EQ(events.rows.at(0).resolution_basis, "fixed");
  EXPECT_EQ(events.rows.at(0).verdict, Verdict::within_threshold);
  EXPECT_EQ(compare_results(small_kernel_run(1.5, 40), small_kernel_run(1.65, 42)).rows.at(0).resolution_basis, "fixed");
}

TEST(CompareStoredH200Runs, GraphReplayedKernelsOfAFewUsTenPercentSlowerAreSuspects) {
  // The stored H200 pair (compute capability 9.0): identical code raises no suspect, and nine in ten
  // graph-replayed records under 3 us made 10% slower are flagged (suspect or regression), where the
  // fixed 0.5 us resolution let all of them pass. (The rest are the shortest, about 1 us: their 10%
  // is near 3x graph replay's spread between processes, 0.105 us, and the pair's own drift.)
  const std::filesystem::path gate = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h200" / "gate";
  const ResultSet base = load_result_file(gate / "run-1.results.json.gz");
  ResultSet next = load_result_file(gate / "run-2.results.json.gz");
  const Comparison same = compare_results(base, next);
  EXPECT_EQ(same.gpu_family, "Hopper");
  EXPECT_EQ(same.regressions + same.suspects, 0u) << to_text(same);
  std::set<std::string> slowed;
  for (Record& r : next.records)
    if (r.method == Method::graph_replay && r.summary.median < 3e-3 && is_judged(r)) {
      for (double& v : r.samples_ms) v *= 1.10;
      finalize(r);
      slowed.insert(record_match_key(r));
    }
  ASSERT_GE(slowed.size(), 20u);
  std::size_t flagged = 0, flagged_fixed = 0;
  CompareOptions fixed;
  fixed.per_method_resolution = false;
  const Comparison c = compare_results(base, next), before = compare_results(base, next, fixed);
  for (const auto& row : c.rows) {
    const bool is_flagged = row.verdict == Verdict::suspect || row.verdict == Verdict::regression;
    flagged += is_flagged;
    if (is_flagged) {
      EXPECT_EQ(row.method, "graph_replay") << row.name;
    }
  }
  for (const auto& row : before.rows) flagged_fixed += row.verdict == Verdict::suspect || row.verdict == Verdict::regression;
  EXPECT_GE(flagged * 10, slowed.size() * 9) << to_text(c);
  EXPECT_EQ(flagged_fixed, 0u);
}

namespace {

// A ceiling probe whose tuner kept a launch shape doing `flops` per call, at `ms` per call.
ResultSet fma_ceiling_run(double flops, double ms, unsigned seed) {
  ResultSet s;
  s.context.device = h200();
  Record r = record("ceiling.fp32_fma", "spin_hold", 0, noisy(ms, 0.002, 9, seed));
  r.params = nlohmann::json::object();
  r.flops = flops;
  finalize(r);
  s.records.push_back(r);
  return s;
}

// A 4096^3 GEMM at `ms`, its samples' SM clock read as `mhz` (NVML, which may not be what the kernel ran at).
ResultSet gemm_run(double ms, double mhz, unsigned seed) {
  ResultSet s;
  s.context.device = h200();
  Record r = record("matmul", "graph_replay", 4096, noisy(ms, 0.002, 25, seed));
  r.extra[std::string(extra_key::sample_sm_mhz)] = std::vector<double>(r.samples_ms.size(), mhz);
  finalize(r);
  s.records.push_back(r);
  return s;
}

}  // namespace

TEST(CompareWork, ARecordWhoseWorkDiffersIsComparedPerUnitOfWork) {
  // On the H100 one run's FP32 FMA probe kept a shape doing 3/4 of the others' FLOPs: 0.80 ms
  // against 1.08 ms, the same rate. Compared by time it read as a 34% regression in 6 of 45 pairs.
  const double full = 3.54e10, three_quarters = 2.66e10;
  const Comparison c = compare_results(fma_ceiling_run(three_quarters, 0.804, 1), fma_ceiling_run(full, 1.0795, 2));
  const RecordComparison& row = c.rows.at(0);
  EXPECT_NEAR(row.work_scale, three_quarters / full, 1e-12);
  EXPECT_EQ(c.regressions, 0u) << to_text(c);
  EXPECT_NEAR(row.ratio, 1.0795 * three_quarters / full / 0.804, 0.01);
  EXPECT_NE(row.note.find("per unit of work"), std::string::npos) << row.note;
  EXPECT_EQ(to_json(c)["rows"][0]["work_scale"], row.work_scale);
  // The same shape 10% slower is still a regression; baselines of mixed shapes pool by rate.
  EXPECT_EQ(compare_results(fma_ceiling_run(full, 1.0795, 3), fma_ceiling_run(full, 1.19, 4)).regressions, 1u);
  const std::vector<ResultSet> mixed = {fma_ceiling_run(full, 1.0795, 5), fma_ceiling_run(three_quarters, 0.81, 6),
                                        fma_ceiling_run(full, 1.08, 7)};
  const Comparison pooled = compare_results(mixed, fma_ceiling_run(three_quarters, 0.81 * 1.1, 8));
  EXPECT_EQ(pooled.regressions, 1u) << to_text(pooled);
  EXPECT_LT(pooled.rows.at(0).run_to_run_spread, 0.01);
}

TEST(CompareClock, BaselinesThatSpanTheNewClockSetTheBandWithoutTheClockTerm) {
  // Ten H100 runs: the GEMM read 177.0-177.5 us while NVML read its clock at 1635-1905 MHz.
  std::vector<ResultSet> baselines;
  const double mhz[] = {1635, 1665, 1740, 1695, 1875, 1905};
  for (unsigned i = 0; i < 6; ++i) baselines.push_back(gemm_run(0.1772 + 0.0001 * (i % 3), mhz[i], 10 + i));
  // 10% slower at a clock the baselines saw: the clock does not widen the band, the step is flagged.
  const Comparison slower = compare_results(baselines, gemm_run(0.195, 1740, 30));
  const RecordComparison& row = slower.rows.at(0);
  EXPECT_TRUE(row.clock_within_baselines);
  EXPECT_NE(row.noise_band_source, "clock");
  EXPECT_EQ(row.verdict, Verdict::regression) << to_text(slower);
  // A clock outside the baselines' range still widens the band, and so does a single baseline.
  const Comparison outside = compare_results(baselines, gemm_run(0.195, 1400, 31));
  EXPECT_FALSE(outside.rows.at(0).clock_within_baselines);
  EXPECT_EQ(outside.rows.at(0).noise_band_source, "clock");
  const Comparison one = compare_results(baselines.front(), gemm_run(0.195, 1905, 32));
  EXPECT_EQ(one.rows.at(0).noise_band_source, "clock");
}

TEST(CompareStoredH100Runs, TenIdenticalReportsCompareCleanAndTheirPoolFlagsTenPercent) {
  // Ten back-to-back reports of one build on an H100 (results/h100/gate): every pair compares
  // clean, although one run's FMA ceiling kept a launch shape of 3/4 the work and the GEMMs' NVML
  // clock readings ranged over 15%; against the ten pooled, graph-replayed records under 3 us made
  // 10% slower are flagged.
  const std::filesystem::path gate = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h100" / "gate";
  std::vector<ResultSet> runs;
  for (int i = 1; i <= 10; ++i) runs.push_back(load_result_file(gate / fmt::format("run-{}.results.json.gz", i)));
  CompareOptions quick;
  quick.bootstrap_budget = 0;  // order-statistic intervals: the verdicts do not use them
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const Comparison c = compare_results(runs[i], runs[j], quick);
      EXPECT_EQ(c.regressions, 0u) << "run " << i + 1 << " against run " << j + 1 << "\n" << to_text(c);
      EXPECT_FALSE(c.fails_on_missing()) << "run " << i + 1 << " against run " << j + 1;
    }
  // Run 4's FMA ceiling did 3/4 of run 5's FLOPs per call: compared per unit of work.
  const Comparison shapes = compare_results(runs[3], runs[4], quick);
  const auto fma = std::find_if(shapes.rows.begin(), shapes.rows.end(), [](const auto& r) { return r.name == "ceiling.fp32_fma"; });
  ASSERT_NE(fma, shapes.rows.end());
  EXPECT_NEAR(fma->work_scale, 0.75, 0.01);
  EXPECT_NE(fma->verdict, Verdict::regression);
  const std::vector<ResultSet> pool(runs.begin(), runs.end() - 1);
  ResultSet next = runs.back();
  EXPECT_EQ(compare_results(pool, next, quick).regressions, 0u);
  std::size_t slowed = 0;
  for (Record& r : next.records)
    if (r.method == Method::graph_replay && r.summary.median < 3e-3 && is_judged(r)) {
      for (double& v : r.samples_ms) v *= 1.10;
      finalize(r);
      ++slowed;
    }
  ASSERT_GE(slowed, 20u);
  const Comparison c = compare_results(pool, next, quick);
  std::size_t flagged = 0;
  for (const auto& row : c.rows) flagged += row.verdict == Verdict::suspect || row.verdict == Verdict::regression;
  EXPECT_GE(flagged * 10, slowed * 9) << to_text(c);
  // The report that read run 1's ceilings from the cache: shown, never judged.
  const Comparison cached = compare_results(runs.front(), load_result_file(gate / "cached.results.json.gz"), quick);
  std::size_t carried = 0;
  for (const auto& row : cached.rows) carried += row.note.find("carried over") != std::string::npos;
  EXPECT_GE(carried, 10u);
  EXPECT_EQ(cached.regressions, 0u);
}
