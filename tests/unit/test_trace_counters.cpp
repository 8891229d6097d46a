// Hardware counters in the trace model: options, what a profiled launch did, the measured
// roofline of a synthetic trace, and the counters' round trip through the Chrome trace.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/trace/events.hpp"

using namespace ridge::trace;

namespace {

const std::vector<std::string> metrics{"gpu__time_duration.sum",
                                       "sm__cycles_elapsed.avg.per_second",
                                       "dram__bytes_read.sum",
                                       "dram__bytes_write.sum",
                                       "lts__t_bytes.sum",
                                       "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
                                       "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                                       "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
                                       "sm__ops_path_tensor_src_bf16_dst_fp32.sum"};

/// duration ns, clock Hz, DRAM read, DRAM write, L2, FFMA, FADD, HFMA, BF16 tensor ops.
std::vector<double> values(double ns, double read, double write, double ffma, double fadd, double tensor) {
  return {ns, 1.98e9, read, write, read + write, ffma, fadd, 0, tensor};
}

ridge::DeviceCeilings ceilings() {
  ridge::DeviceCeilings c;
  c.source_text = "test ceilings";
  c.memory_bytes_per_s = 4e12;               // 4 TB/s
  c.peak_flops_per_s = {{"fp32", 50e12}, {"bf16", 800e12}};
  return c;
}

/// Three kernel names, each launched `calls` times, the first launch of each profiled. Profiled
/// launches' recorded durations are ten times their untouched ones: replay must not leak into time.
Trace roofline_trace(int calls = 4) {
  Trace t;
  t.counters.metric_set = "roofline";
  t.counters.metrics = metrics;
  const std::uint32_t stream = t.strings.intern("stream_add");  // 3 GB at 4 TB/s: 750 us at the roof
  const std::uint32_t gemm = t.strings.intern("gemm_bf16");     // 2*4096^3 at 800 TFLOP/s: 172 us
  const std::uint32_t tiny = t.strings.intern("tiny");          // 2 us, a few bytes
  struct Kind {
    std::uint32_t name;
    Nanoseconds ns;
    std::vector<double> counters;
  };
  const double gemm_flops = 2.0 * 4096 * 4096 * 4096;
  const std::vector<Kind> kinds{
      {stream, 900'000, values(900'000, 2e9, 1e9, 0, 268435456, 0)},
      {gemm, 250'000, values(250'000, 1e8, 3.4e7, 0, 0, gemm_flops)},
      {tiny, 2'000, values(2'000, 4096, 4096, 0, 0, 0)},
  };
  std::uint32_t correlation = 1;
  Nanoseconds now = 1'000'000;
  for (int call = 0; call < calls; ++call)
    for (const auto& k : kinds) {
      Kernel kernel;
      kernel.name = k.name;
      kernel.correlation = correlation++;
      const bool profiled = call == 0;
      kernel.start = now;
      kernel.end = now + (profiled ? 10 * k.ns : k.ns);
      now = kernel.end + 1000;
      t.kernels.push_back(kernel);
      if (profiled) t.counters.rows.push_back({kernel.correlation, 0, k.counters});
    }
  return t;
}

const CounterRooflineRow& row(const CounterRoofline& r, const std::string& name) {
  for (const auto& k : r.kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no row " + name);
}

}  // namespace

TEST(TraceCounters, OptionsAreChecked) {
  CounterOptions o;
  EXPECT_NO_THROW(o.validate());
  EXPECT_FALSE(o.metric_names().empty());
  o.metric_set = "everything";
  EXPECT_THROW(o.validate(), ridge::UsageError);
  o.metric_set = "";
  EXPECT_THROW(o.validate(), ridge::UsageError);  // neither a set nor a metric
  o.metrics = {"dram__bytes_read"};
  EXPECT_THROW(o.validate(), ridge::UsageError);  // no rollup
  o.metrics = {"dram__bytes_read.sum"};
  EXPECT_NO_THROW(o.validate());
  o.steps = std::pair<std::uint64_t, std::uint64_t>{10, 12};
  EXPECT_THROW(o.validate(), ridge::UsageError);  // steps without the range that marks them
  o.step_range = "step";
  EXPECT_NO_THROW(o.validate());
  const CounterOptions back = counter_options_from_json(to_json(o));
  EXPECT_EQ(back.metrics, o.metrics);
  EXPECT_EQ(back.steps, o.steps);
  EXPECT_EQ(back.step_range, "step");
}

TEST(TraceCounters, TheMemorySetReadsBytesInOnePassAndNoFlops) {
  EXPECT_EQ(counter_set_names(), (std::vector<std::string>{"memory", "roofline", "roofline-full"}));
  const auto& memory = counter_set_metrics("memory");
  for (const char* m : {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"})
    EXPECT_NE(std::find(memory.begin(), memory.end(), m), memory.end()) << m;
  for (const auto& m : memory) EXPECT_EQ(m.find("inst_executed"), std::string::npos) << m;
  EXPECT_LT(memory.size(), counter_set_metrics("roofline").size());
}

TEST(TraceCounters, ARequestGetsTheLibrarysDefaultsForTheCommandLineAndPythonAlike) {
  const CounterOptions plain = counter_options(CounterRequest{"roofline"});
  EXPECT_EQ(plain.metric_set, "roofline");
  EXPECT_EQ(plain.first_launches_per_kernel, CounterOptions::default_first_launches);
  EXPECT_EQ(plain.replay_mode(), CounterReplay::kernel);
  // A step window profiles every launch in it, replayed by the program's own steps.
  const CounterOptions window = counter_options(CounterRequest{"memory", {}, "10..12", std::nullopt, "", "step"});
  EXPECT_EQ(window.steps, (std::pair<std::uint64_t, std::uint64_t>{10, 12}));
  EXPECT_EQ(window.first_launches_per_kernel, 0u);
  EXPECT_EQ(window.replay_mode(), CounterReplay::steps);
  // The first N launches of each kernel inside it are replayed per kernel, unless asked otherwise.
  EXPECT_EQ(counter_options(CounterRequest{"memory", {}, "10..12", 2, "", "step"}).replay_mode(), CounterReplay::kernel);
  EXPECT_EQ(counter_options(CounterRequest{"memory", {}, "10..12", 2, "steps", "step"}).replay_mode(), CounterReplay::steps);
  // raw: the metrics alone.
  const CounterOptions raw = counter_options(CounterRequest{raw_counter_set, {"dram__bytes_read.sum"}});
  EXPECT_EQ(raw.metric_set, "");
  EXPECT_EQ(raw.metric_names(), std::vector<std::string>{"dram__bytes_read.sum"});
  // The checks are the library's.
  EXPECT_THROW(counter_options(CounterRequest{"roofline", {}, "10..12"}), ridge::UsageError);  // no step range
  EXPECT_THROW(counter_options(CounterRequest{"no_such_set"}), ridge::UsageError);
  EXPECT_THROW(counter_options(CounterRequest{"roofline", {}, "", std::nullopt, "sideways"}), ridge::UsageError);
  EXPECT_THROW(counter_options(CounterRequest{raw_counter_set}), ridge::UsageError);  // raw without metrics
}

TEST(TraceCounters, StepWindowsParse) {
  EXPECT_EQ(parse_step_window("10..12"), (std::pair<std::uint64_t, std::uint64_t>{10, 12}));
  EXPECT_EQ(parse_step_window("7"), (std::pair<std::uint64_t, std::uint64_t>{7, 7}));
  for (const char* bad : {"", "12..10", "a..b", "1..", "..3", "-1", "1...3"})
    EXPECT_THROW(parse_step_window(bad), ridge::UsageError) << bad;
}

TEST(TraceCounters, LaunchWorkCountsAnFmaAsTwoAndTensorOpsAsFlops) {
  KernelCounters c;
  c.metrics = metrics;
  const CounterRow r{1, 0, {1000, 1.9e9, 100, 50, 400, 10, 3, 5, 4096}};
  const LaunchWork w = launch_work(c, r);
  EXPECT_DOUBLE_EQ(w.dram_bytes(), 150);
  EXPECT_DOUBLE_EQ(w.l2_bytes, 400);
  EXPECT_DOUBLE_EQ(w.flops.at("fp32"), 2 * 10 + 3);
  EXPECT_DOUBLE_EQ(w.flops.at("fp16"), 2 * 5);
  EXPECT_DOUBLE_EQ(w.flops.at("tensor_bf16"), 4096);
  EXPECT_EQ(w.dominant_precision(), "tensor_bf16");
  EXPECT_DOUBLE_EQ(w.profiled_sm_hz, 1.9e9);
  EXPECT_TRUE(w.missing.empty());
  KernelCounters bare;
  bare.metrics = {"dram__bytes_read.sum"};
  const LaunchWork partial = launch_work(bare, CounterRow{1, 0, {std::nan("")}});
  EXPECT_EQ(partial.dram_read_bytes, 0);  // a value CUPTI could not give counts as nothing
  EXPECT_FALSE(partial.missing.empty());
  EXPECT_EQ(ceiling_dtype_of("tensor_bf16"), "bf16");
  EXPECT_EQ(ceiling_dtype_of("tensor_fp8"), "fp8_e4m3");
  EXPECT_EQ(ceiling_dtype_of("fp32"), "fp32");
}

TEST(TraceCounters, RooflineNamesTheBoundAndRanksByWin) {
  const CounterRoofline r = counter_roofline(roofline_trace(), ceilings());
  ASSERT_EQ(r.kernels.size(), 3u);
  const auto& stream = row(r, "stream_add");
  EXPECT_EQ(stream.bound, Bound::memory);
  EXPECT_EQ(stream.calls, 4u);
  EXPECT_EQ(stream.profiled_calls, 1u);
  // Time from the untouched launches only: 4 calls x 900 us, not the replayed 9 ms.
  EXPECT_DOUBLE_EQ(stream.time_ns, 4 * 900'000.0);
  EXPECT_FALSE(stream.time_from_profiled_pass);
  EXPECT_NEAR(stream.bytes_share_of_peak, 3e9 / 900e-6 / 4e12, 1e-9);
  EXPECT_NEAR(stream.time_at_roof_ns, 4 * 750'000.0, 1);
  const auto& gemm = row(r, "gemm_bf16");
  EXPECT_EQ(gemm.bound, Bound::compute);
  EXPECT_EQ(gemm.precision, "tensor_bf16");
  EXPECT_NEAR(gemm.intensity, 2.0 * 4096 * 4096 * 4096 / 1.34e8, 1);
  const auto& tiny = row(r, "tiny");
  EXPECT_EQ(tiny.bound, Bound::neither);
  EXPECT_NE(tiny.reason.find("launch and latency"), std::string::npos) << tiny.reason;
  // Ranked by the time won at the roof; Amdahl over all kernel time.
  for (std::size_t i = 1; i < r.kernels.size(); ++i) EXPECT_GE(r.kernels[i - 1].win_ns, r.kernels[i].win_ns);
  EXPECT_EQ(r.kernels.front().name, "stream_add");  // 600 us won against the GEMM's 312 us
  EXPECT_NEAR(r.kernel_time_ns, 4 * (900'000.0 + 250'000 + 2'000), 1);
  EXPECT_NEAR(stream.whole_speedup, r.kernel_time_ns / (r.kernel_time_ns - stream.win_ns), 1e-12);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("stream_add"), std::string::npos);
  EXPECT_NE(text.find("memory"), std::string::npos);
}

/// roofline_trace's launches with one "step" range around each round of three kernels, an NVTX
/// range "mlp" around each stream_add and "attention" around each GEMM (tiny is in neither).
Trace grouped_trace() {
  Trace t = roofline_trace();
  const std::uint32_t step = t.strings.intern("step"), mlp = t.strings.intern("mlp"), attention = t.strings.intern("attention");
  const std::uint32_t stream = *t.strings.find("stream_add"), gemm = *t.strings.find("gemm_bf16");
  for (std::size_t i = 0; i < t.kernels.size(); i += 3)
    t.ranges.push_back({step, 1, 1, t.kernels[i].start - 10, t.kernels[i + 2].end + 10});
  for (const auto& k : t.kernels)
    if (k.name == stream || k.name == gemm) t.ranges.push_back({k.name == stream ? mlp : attention, 1, 1, k.start - 5, k.end + 5});
  return t;
}

TEST(TraceCounters, GroupedByStepEachStepAddsUpItsKernelsAtTheirOwnRoofs) {
  const Trace t = grouped_trace();
  const CounterRoofline kernels = counter_roofline(t, ceilings());
  CounterRooflineOptions o;
  o.by = CounterGrouping::step;
  EXPECT_THROW(counter_roofline(t, ceilings(), o), ridge::UsageError);  // no step range named
  o.step_range = "step";
  const CounterRoofline steps = counter_roofline(t, ceilings(), o);
  ASSERT_EQ(steps.kernels.size(), 4u);
  EXPECT_EQ(steps.by, CounterGrouping::step);
  double step_wins = 0, kernel_wins = 0;
  for (const auto& k : kernels.kernels) kernel_wins += k.win_ns;
  for (const auto& s : steps.kernels) {
    EXPECT_EQ(s.calls, 3u);
    // Replayed launches take their name's untouched time: every step lasts the same.
    EXPECT_NEAR(s.time_ns, 900'000.0 + 250'000 + 2'000, 1e-6) << s.name;
    EXPECT_NEAR(s.dram_bytes * 3, 3e9 + 1.34e8 + 8192, 1) << s.name;
    EXPECT_NEAR(s.whole_speedup, s.time_ns / (s.time_ns - s.win_ns), 1e-12);
    step_wins += s.win_ns;
  }
  EXPECT_NEAR(step_wins, kernel_wins, 1e-3);  // each kernel at its own roof, not the roof of averages
  EXPECT_EQ(row(steps, "step 0").profiled_calls, 3u);
  EXPECT_EQ(row(steps, "step 1").profiled_calls, 0u);
  EXPECT_NE(to_text(steps).find("step 3"), std::string::npos);
}

TEST(TraceCounters, GroupedByNvtxRangeEachKernelGoesToItsInnermostRange) {
  CounterRooflineOptions o;
  o.by = counter_grouping_from_string("operator");
  o.step_range = "step";  // the step range is not an operator
  const CounterRoofline r = counter_roofline(grouped_trace(), ceilings(), o);
  ASSERT_EQ(r.kernels.size(), 3u);
  const CounterRoofline kernels = counter_roofline(grouped_trace(), ceilings());
  const auto& mlp = row(r, "mlp");
  EXPECT_EQ(mlp.calls, 4u);
  EXPECT_EQ(mlp.bound, Bound::memory);
  EXPECT_NEAR(mlp.time_ns, row(kernels, "stream_add").time_ns, 1e-6);
  EXPECT_NEAR(mlp.win_ns, row(kernels, "stream_add").win_ns, 1e-3);
  EXPECT_EQ(row(r, "attention").bound, Bound::compute);
  EXPECT_EQ(row(r, "(outside NVTX ranges)").calls, 4u);  // tiny
  o.step_range.clear();  // without it, the step range is the innermost range of tiny
  EXPECT_EQ(row(counter_roofline(grouped_trace(), ceilings(), o), "step").calls, 4u);
  EXPECT_THROW(counter_grouping_from_string("thread"), ridge::UsageError);
}

TEST(TraceCounters, RooflineRowsBecomeRecordsAndAPlot) {
  const CounterRoofline r = counter_roofline(roofline_trace(), ceilings());
  const std::vector<ridge::Record> records = counter_records(r);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& rec : records) {
    ASSERT_TRUE(rec.gate && rec.gate->informational);
    EXPECT_EQ(rec.method, ridge::Method::cupti_trace);
    EXPECT_EQ(rec.params.at(ridge::param_key::grouping), "kernel");
    const auto& k = row(r, rec.params.at(ridge::param_key::group).get<std::string>());
    EXPECT_DOUBLE_EQ(rec.bytes, k.dram_bytes);
    EXPECT_DOUBLE_EQ(rec.flops, k.flops);
    EXPECT_NEAR(rec.summary.median, k.time_ns / static_cast<double>(k.calls) / 1e6, 1e-12);
    EXPECT_EQ(rec.extra.at(ridge::extra_key::bound), to_string(k.bound));
  }
  EXPECT_EQ(records.front().dtype, ridge::DType::fp32);  // stream_add: FP32 adds
  const ridge::Plot plot = counter_roofline_plot(r, ceilings(), 1);
  const std::string svg = ridge::render_svg(plot);
  EXPECT_NE(svg.find("stream_add"), std::string::npos);
  EXPECT_NE(svg.find("gemm_bf16"), std::string::npos);   // in its tooltip at least
  EXPECT_NE(svg.find("fill-opacity"), std::string::npos);  // markers sized by time share
  ASSERT_FALSE(plot.warnings.empty());                     // tiny: no FLOPs, not drawn
  EXPECT_NE(plot.warnings.back().find("1 rows"), std::string::npos);
}

TEST(TraceCounters, EveryLaunchProfiledTakesTheProfiledPassTimeAndSaysSo) {
  const CounterRoofline r = counter_roofline(roofline_trace(1), ceilings());
  const auto& stream = row(r, "stream_add");
  EXPECT_TRUE(stream.time_from_profiled_pass);
  EXPECT_DOUBLE_EQ(stream.time_ns, 900'000.0);  // gpu__time_duration, not the activity record's 9 ms
}

TEST(TraceCounters, KernelsWithoutCountersAndMissingPeaksAreNoted) {
  Trace t = roofline_trace();
  Kernel k;
  k.name = t.strings.intern("unprofiled");
  k.correlation = 999;
  k.start = 1;
  k.end = 100'001;
  t.kernels.push_back(k);
  ridge::DeviceCeilings c = ceilings();
  c.peak_flops_per_s.erase("bf16");
  const CounterRoofline r = counter_roofline(t, c);
  EXPECT_EQ(r.kernels.size(), 3u);
  bool unprofiled = false, no_peak = false;
  for (const auto& n : r.notes) {
    unprofiled |= n.find("1 kernel names") != std::string::npos;
    no_peak |= n.find("no tensor_bf16 peak") != std::string::npos;
  }
  EXPECT_TRUE(unprofiled);
  EXPECT_TRUE(no_peak);
}

TEST(TraceCounters, CountersRoundTripThroughTheChromeTrace) {
  Trace t = roofline_trace(2);
  t.counters.passes = 7;
  t.counters.graph_launches = 3;
  t.counters.rows[1].values[4] = std::nan("");  // a metric CUPTI could not give
  const std::string json = to_chrome_json(t);
  EXPECT_NE(json.find(R"("profiled":true,"counters":{"gpu__time_duration.sum":)"), std::string::npos);
  const Trace back = parse_chrome_json(json);
  ASSERT_EQ(back.counters.rows.size(), t.counters.rows.size());
  EXPECT_EQ(back.counters.metrics, t.counters.metrics);
  EXPECT_EQ(back.counters.passes, 7u);
  EXPECT_EQ(back.counters.graph_launches, 3u);
  EXPECT_TRUE(std::isnan(back.counters.rows[1].values[4]));
  EXPECT_DOUBLE_EQ(back.counters.rows[0].values[2], t.counters.rows[0].values[2]);
  const CounterRoofline a = counter_roofline(t, ceilings()), b = counter_roofline(back, ceilings());
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].name, b.kernels[i].name);
    EXPECT_NEAR(a.kernels[i].win_ns, b.kernels[i].win_ns, 1e-6 * a.kernels[i].time_ns + 2);
  }
}

TEST(TraceCounters, AFileSaysWhetherItHoldsCountersFromItsMetadata) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("ridge_counters_{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string with = (dir / "with.json").string(), without = (dir / "without.json").string();
  write_chrome_trace(roofline_trace(2), with);
  Trace plain = roofline_trace(2);
  plain.counters = KernelCounters{};
  write_chrome_trace(plain, without);
  EXPECT_TRUE(chrome_trace_has_counters(with));
  EXPECT_FALSE(chrome_trace_has_counters(without));
  EXPECT_FALSE(chrome_trace_has_counters((dir / "missing.json").string()));
  std::filesystem::remove_all(dir);
}

TEST(TraceCounters, MalformedCountersAreUsageErrors) {
  nlohmann::json j = to_json(roofline_trace(1).counters);
  j["rows"][0]["values"].erase(0);
  EXPECT_THROW(kernel_counters_from_json(j), ridge::UsageError);
  EXPECT_THROW(kernel_counters_from_json(nlohmann::json::object()), ridge::UsageError);
}

// A trace the H200 wrote (results/h200/counters): `ridge trace --counters roofline` around
// `ridge matmul --dtypes bf16 --sizes 4096`. The tensor FLOPs of every GEMM launch are 2*m*n*k
// with m and n rounded up to the kernel's tile (an overhanging tile computes its padding too).
TEST(TraceCountersStoredH200, BF16GemmTensorFlopsAreTwoMnkOverTheTiles) {
  const auto path = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h200" / "counters" / "gemm_trace.json.gz";
  ASSERT_TRUE(chrome_trace_has_counters(path.string()));
  const Trace t = load_chrome_trace(path.string());
  ASSERT_EQ(t.counters.passes, 5u);
  ASSERT_EQ(t.counters.rows.size(), 33u);
  ridge::DeviceCeilings c;
  c.source_text = "H200 datasheet";
  c.memory_bytes_per_s = 4.8e12;
  c.peak_flops_per_s = {{"bf16", 989e12}};
  const CounterRoofline r = counter_roofline(t, c);
  std::size_t gemms = 0;
  for (const auto& k : r.kernels) {
    if (!k.name.starts_with("nvjet_sm90_tst_")) continue;
    ++gemms;
    int tile_m = 0, tile_n = 0;
    ASSERT_EQ(std::sscanf(k.name.c_str(), "nvjet_sm90_tst_%dx%d_", &tile_m, &tile_n), 2) << k.name;
    const auto padded = [](double n, double tile) { return std::ceil(n / tile) * tile; };
    const double expected = 2.0 * padded(4096, tile_m) * padded(4096, tile_n) * 4096;
    EXPECT_NEAR(k.flops_by_precision.at("tensor_bf16") / expected, 1.0, 1e-6) << k.name;
    EXPECT_EQ(k.precision, "tensor_bf16");
    EXPECT_EQ(k.bound, Bound::compute) << k.name << ": " << k.reason;
    EXPECT_FALSE(k.time_from_profiled_pass) << k.name;  // timed by the launches that ran untouched
    EXPECT_GT(k.calls, k.profiled_calls);
  }
  EXPECT_EQ(gemms, 8u);
}

TEST(TraceCountersStoredH100, AGpt2StepReplayTraceHoldsItsPassesItsNamedDifferencesAndTheBytesOfItsAdd) {
  // bench/counters_user_replay.sh on an H100 (results/h100/counters): GPT-2 small BF16 decode plus a
  // Triton add, the roofline set on steps 10-12 replayed by the program's steps 10-15.
  const auto path = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h100" / "counters" / "gpt2_counters.json.gz";
  ASSERT_TRUE(chrome_trace_has_counters(path.string()));
  const Trace t = load_chrome_trace(path.string());
  EXPECT_EQ(t.counters.replay, CounterReplay::steps);
  EXPECT_EQ(t.counters.passes, 2u);
  EXPECT_EQ(t.counters.steps_taken, (std::pair<std::uint64_t, std::uint64_t>{10, 15}));
  EXPECT_EQ(t.counters.steps_profiled, 3u);
  EXPECT_EQ(t.counters.rows.size(), 711u);
  // The KV cache's concatenation grew a block between the passes: named, and given no counters.
  ASSERT_FALSE(t.counters.mismatches.empty());
  EXPECT_NE(t.counters.mismatches.front().find("CatArrayBatchedCopy"), std::string::npos);
  EXPECT_NE(t.counters.mismatches.front().find("(758,2,1)"), std::string::npos);
  EXPECT_NE(t.counters.mismatches.front().find("(759,2,1)"), std::string::npos);
  ridge::DeviceCeilings c;
  c.source_text = "H100 SXM datasheet";
  c.memory_bytes_per_s = 3.35e12;
  c.peak_flops_per_s = {{"bf16", 989e12}, {"fp32", 67e12}};
  const CounterRoofline r = counter_roofline(t, c);
  // The Triton add of 2^26 floats reads two arrays and writes one: 3 x 4 x 2^26 bytes a call. The
  // L2 was not flushed before it, so up to the H100's 50 MB of L2 may be hits: it read 2.4% less.
  const CounterRooflineRow& add = row(r, "add_kernel");
  const double must_move = 3.0 * 4 * (1 << 26), l2_bytes = 50.0 * (1 << 20);
  EXPECT_LE(add.dram_bytes, 1.01 * must_move);
  EXPECT_GE(add.dram_bytes, must_move - l2_bytes);
  EXPECT_EQ(add.bound, Bound::memory) << add.reason;
  EXPECT_FALSE(add.time_from_profiled_pass);  // timed by the steps left untouched
  // cuBLAS's GEMMs: their tensor FLOPs counted, their launches outnumbering those profiled.
  const CounterRooflineRow& gemm = row(r, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_bias_NNT");
  EXPECT_GT(gemm.flops, 0);
  EXPECT_GT(gemm.calls, gemm.profiled_calls);
}

// ---- replay across passes ------------------------------------------------------------------------

TEST(TraceCounters, ReplayDefaultsToStepsWithAWindowAndTakesPassesStepsEach) {
  CounterOptions o;
  EXPECT_EQ(o.replay_mode(), CounterReplay::kernel);
  EXPECT_EQ(o.steps_taken(2), (std::pair<std::uint64_t, std::uint64_t>{0, 0}));
  o.replay = CounterReplay::steps;
  EXPECT_THROW(o.validate(), ridge::UsageError) << "replaying by steps needs a window";
  o.steps = std::pair<std::uint64_t, std::uint64_t>{10, 12};
  o.step_range = "step";
  o.replay.reset();
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(o.replay_mode(), CounterReplay::steps);
  // 3 profiled steps x 2 passes: program steps 10..15; pass p of profiled step k on 10 + 2k + p.
  EXPECT_EQ(o.steps_taken(2), (std::pair<std::uint64_t, std::uint64_t>{10, 15}));
  EXPECT_EQ(o.steps_taken(5), (std::pair<std::uint64_t, std::uint64_t>{10, 24}));
  o.replay = CounterReplay::kernel;  // kernel replay profiles the window's own steps
  EXPECT_EQ(o.steps_taken(5), (std::pair<std::uint64_t, std::uint64_t>{10, 12}));
  const CounterOptions back = counter_options_from_json(to_json(o));
  EXPECT_EQ(back.replay, o.replay);
  EXPECT_EQ(counter_replay_from_string("steps"), CounterReplay::steps);
  EXPECT_THROW(counter_replay_from_string("application"), ridge::UsageError);
}

TEST(TraceCounters, TheRooflineSetHasNoTwoMetricsForOnePrecisionOnAnyChip) {
  // An "a|b" entry collects the first the GPU offers; the FP64 and INT8 tensor paths only in roofline-full.
  const auto& roofline = counter_set_metrics("roofline");
  bool alternatives = false;
  for (const auto& entry : roofline) {
    const auto names = metric_alternatives(entry);
    for (const auto& n : names) EXPECT_NE(n.find("."), std::string::npos) << entry << ": each alternative has its rollup";
    alternatives = alternatives || names.size() > 1;
    EXPECT_EQ(entry.find("src_fp64"), std::string::npos);
    EXPECT_EQ(entry.find("src_int8"), std::string::npos);
  }
  EXPECT_TRUE(alternatives);
  EXPECT_EQ(metric_alternatives("a.sum|b.sum"), (std::vector<std::string>{"a.sum", "b.sum"}));
  EXPECT_EQ(metric_alternatives("a.sum"), (std::vector<std::string>{"a.sum"}));
  const auto& full = counter_set_metrics("roofline-full");
  EXPECT_EQ(full.size(), roofline.size() + 2);
  // Hopper's warpgroup paths count FLOPs under their source precision.
  KernelCounters c;
  c.metrics = {"sm__ops_path_tensor_op_hgmma_src_fp16.sum", "sm__ops_path_tensor_src_fp8.sum",
               "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum"};
  const LaunchWork w = launch_work(c, CounterRow{1, 0, {100, 200, 300}, 0});
  EXPECT_DOUBLE_EQ(w.flops.at("tensor_fp16"), 100);
  EXPECT_DOUBLE_EQ(w.flops.at("tensor_fp8"), 200);
  EXPECT_DOUBLE_EQ(w.flops.at("tensor_tf32"), 300);
}

TEST(TraceCounters, RidgesTimingKernelsAreNeverProfiled) {
  for (const char* probe : {"_ZN5ridge12_GLOBAL__N_118hold_stream_kernelEPViy", "_ZN5ridge12_GLOBAL__N_112empty_kernelEv",
                            "_ZN5ridge12_GLOBAL__N_116busy_wait_kernelEy",
                            "ridge::(anonymous namespace)::hold_stream_kernel(int volatile*, unsigned long long)"})
    EXPECT_TRUE(is_timing_probe_kernel(probe)) << probe;
  for (const char* kernel : {"empty_kernel", "_Z12empty_kernelv", "nvjet_sm90_tst_128x128", "ridge::stream_add_kernel",
                             "_ZN5ridge12_GLOBAL__N_111fill_kernelIfEEvPT_lm"})
    EXPECT_FALSE(is_timing_probe_kernel(kernel)) << kernel;
}

namespace {

LaunchSignature launch(std::uint32_t correlation, const std::string& name, std::uint32_t grid) {
  LaunchSignature s;
  s.correlation = correlation;
  s.name = name;
  s.grid[0] = grid;
  s.grid[1] = s.grid[2] = 1;
  s.block[0] = 256;
  s.block[1] = s.block[2] = 1;
  return s;
}

}  // namespace

TEST(TraceCounters, PassesThatAgreeGiveEveryLaunchItsRange) {
  const std::vector<std::vector<LaunchSignature>> passes{
      {launch(1, "gemm", 64), launch(2, "add", 8), launch(3, "norm", 4)},
      {launch(11, "gemm", 64), launch(12, "add", 8), launch(13, "norm", 4)}};
  const PassMatch m = match_passes(passes, 3);
  EXPECT_EQ(m.matched, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_TRUE(m.mismatches.empty());
}

TEST(TraceCounters, ALaunchWhoseGridGrewLosesItsCountersAlone) {
  // A growing KV cache: pass 2's attention has a larger grid. Every pass launched 4 kernels, so
  // range i is still launch i of each pass: the other launches keep their counters.
  const std::vector<std::vector<LaunchSignature>> passes{
      {launch(1, "gemm", 64), launch(2, "add", 8), launch(3, "attention", 4), launch(4, "norm", 4)},
      {launch(11, "gemm", 64), launch(12, "add", 8), launch(13, "attention", 5), launch(14, "norm", 4)}};
  const PassMatch m = match_passes(passes, 4);
  EXPECT_EQ(m.matched, (std::vector<std::size_t>{0, 1, 3}));
  ASSERT_EQ(m.mismatches.size(), 1u);
  EXPECT_NE(m.mismatches[0].find("launch 3"), std::string::npos) << m.mismatches[0];
  EXPECT_NE(m.mismatches[0].find("attention <<<(4,1,1), (256,1,1)>>>"), std::string::npos) << m.mismatches[0];
  EXPECT_NE(m.mismatches[0].find("attention <<<(5,1,1)"), std::string::npos) << m.mismatches[0];
}

TEST(TraceCounters, WhenThePassesLaunchDifferentCountsOnlyThePrefixBeforeTheFirstDifferenceKeepsCounters) {
  // Pass 2 launched an extra kernel in the middle: from there on, range i may be another kernel's.
  const PassMatch inserted = match_passes({{launch(1, "a", 1), launch(2, "b", 1), launch(3, "c", 1)},
                                           {launch(11, "a", 1), launch(12, "x", 1), launch(13, "b", 1), launch(14, "c", 1)}},
                                          3);
  EXPECT_EQ(inserted.matched, (std::vector<std::size_t>{0}));
  ASSERT_EQ(inserted.mismatches.size(), 2u);
  EXPECT_NE(inserted.mismatches[0].find("pass 2 ran x"), std::string::npos) << inserted.mismatches[0];
  EXPECT_NE(inserted.mismatches[1].find("pass 2 launched 4 kernels, pass 1 launched 3"), std::string::npos);
  // An extra launch at the end: the shared prefix keeps its counters, the count is named.
  const PassMatch longer = match_passes({{launch(1, "a", 1), launch(2, "b", 1)},
                                         {launch(11, "a", 1), launch(12, "b", 1), launch(13, "c", 1)}}, 2);
  EXPECT_EQ(longer.matched, (std::vector<std::size_t>{0, 1}));
  // A pass cut short, and ranges that do not count the launches of pass 1.
  EXPECT_EQ(match_passes({{launch(1, "a", 1), launch(2, "b", 1)}, {launch(11, "a", 1)}}, 2).matched,
            (std::vector<std::size_t>{0}));
  const PassMatch ranges = match_passes({{launch(1, "a", 1), launch(2, "b", 1)}, {launch(11, "a", 1), launch(12, "b", 1)}}, 1);
  EXPECT_EQ(ranges.matched, (std::vector<std::size_t>{0}));
  EXPECT_NE(ranges.mismatches.back().find("CUPTI decoded 1 ranges for the 2 launches"), std::string::npos);
}

namespace {

/// Six steps of one kernel each; steps 2 and 3 ran under step replay (2 passes): step 2's launch has
/// the counters, step 3's was perturbed. Profiled steps took 40 ms, the others 10 ms (the first 50).
Trace step_replay_trace() {
  Trace t;
  t.counters.metric_set = "memory";
  t.counters.metrics = {"gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"};
  t.counters.replay = CounterReplay::steps;
  t.counters.passes = 2;
  t.counters.steps_taken = {2, 3};
  t.counters.steps_profiled = 1;
  const std::uint32_t step = t.strings.intern("step"), copy = t.strings.intern("copy");
  Nanoseconds now = 0;
  for (std::uint32_t i = 0; i < 6; ++i) {
    const Nanoseconds length = i == 0 ? 50'000'000 : (i == 2 || i == 3) ? 40'000'000 : 10'000'000;
    t.ranges.push_back({step, 1, 1, now, now + length, 0, false});
    Kernel k;
    k.name = copy;
    k.correlation = 100 + i;
    k.start = now + 1000;
    k.end = k.start + (i == 2 || i == 3 ? 9'000'000 : 1'000'000);  // profiling serialized and slowed them
    t.kernels.push_back(k);
    now += length;
  }
  t.counters.rows.push_back({102, 0, {1'000'000, 4e6, 4e6}, t.kernels[2].start - 500});
  t.counters.perturbed = {103};
  return t;
}

}  // namespace

TEST(TraceCounters, TheCostIsTheProfiledStepsAgainstTheOthersBothMeasured) {
  const Trace t = step_replay_trace();
  const ProfilingCost cost = profiling_cost(t, "step");
  EXPECT_EQ(cost.profiled_steps, 2u);
  EXPECT_EQ(cost.other_steps, 3u) << "the first step (start-up) is left out";
  EXPECT_DOUBLE_EQ(cost.profiled_step_ns, 40e6);
  EXPECT_DOUBLE_EQ(cost.other_step_ns, 10e6);
  EXPECT_DOUBLE_EQ(cost.extra_ns, 60e6);
  const std::string text = counters_summary(t, "step");
  EXPECT_NE(text.find("replayed by the program's own steps 2..3"), std::string::npos) << text;
  EXPECT_NE(text.find("L2 not flushed"), std::string::npos) << text;
  EXPECT_NE(text.find("4.0x"), std::string::npos) << text;
  EXPECT_FALSE(profiling_cost(t, "no such range").known());
  // Kernel replay: a step is profiled when it holds a profiled launch.
  Trace k = t;
  k.counters.replay = CounterReplay::kernel;
  k.counters.perturbed.clear();
  EXPECT_EQ(profiling_cost(k, "step").profiled_steps, 1u);
}

TEST(TraceCounters, PerturbedLaunchesNeverEnterTheTime) {
  // The untouched launches (1 ms) time the kernel; step 3's launch, slowed to 9 ms by profiling, must not.
  const Trace t = step_replay_trace();
  ridge::DeviceCeilings c;
  c.memory_bytes_per_s = 4e12;
  const CounterRoofline r = counter_roofline(t, c);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].calls, 6u);
  EXPECT_FALSE(r.kernels[0].time_from_profiled_pass);
  EXPECT_DOUBLE_EQ(r.kernels[0].time_ns, 6 * 1'000'000.0);
  // Through the trace file: the replay, the perturbed launches and the mismatches come back.
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("ridge-replay-{}.json", getpid())).string();
  Trace named = t;
  named.counters.mismatches = {"launch 3 of the step: pass 1 ran a, pass 2 ran b"};
  write_chrome_trace(named, path);
  const Trace back = load_chrome_trace(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.counters.replay, CounterReplay::steps);
  EXPECT_EQ(back.counters.steps_taken, t.counters.steps_taken);
  EXPECT_EQ(back.counters.perturbed, t.counters.perturbed);
  EXPECT_EQ(back.counters.mismatches, named.counters.mismatches);
  EXPECT_TRUE(back.counters.is_perturbed(103));
  EXPECT_FALSE(back.counters.is_perturbed(102));
}

TEST(TraceCounters, TheProfilersOwnKernelSharingALaunchsCorrelationGetsNoCounters) {
  // Under step replay on an H100, CUPTI ran a 1x1 "WaitNs" kernel with the correlation id of each
  // profiled launch; given the launch's counters too, it doubled every byte and FLOP in the roofline.
  Trace t = roofline_trace(2);
  for (auto& k : t.kernels) k.grid = {6, 1, 1}, k.block = {128, 1, 1};
  for (auto& r : t.counters.rows) r.grid = {6, 1, 1}, r.block = {128, 1, 1};
  const CounterRoofline before = counter_roofline(t, ceilings());
  const std::uint32_t wait = t.strings.intern("WaitNs");
  for (const auto& r : std::vector<CounterRow>(t.counters.rows)) {
    Kernel w;
    w.name = wait;
    w.correlation = r.correlation;
    w.start = 9'000'000'000;
    w.end = w.start + 80'000;
    t.kernels.push_back(w);  // grid and block 1x1x1
  }
  const CounterRowIndex rows(t.counters);
  std::size_t with_row = 0, profilers = 0;
  for (const auto& k : t.kernels) {
    with_row += rows.find(k) != nullptr;
    profilers += rows.profiler_kernel(k);
  }
  EXPECT_EQ(with_row, t.counters.rows.size());
  EXPECT_EQ(profilers, t.counters.rows.size());
  const CounterRoofline after = counter_roofline(t, ceilings());
  ASSERT_EQ(after.kernels.size(), before.kernels.size());
  for (const auto& k : after.kernels) EXPECT_NE(k.name, "WaitNs");
  EXPECT_DOUBLE_EQ(row(after, "stream_add").dram_bytes, row(before, "stream_add").dram_bytes);
  // The shape travels with the row through the trace file; the writer gives WaitNs no counters.
  const std::string json = to_chrome_json(t);
  const Trace back = parse_chrome_json(json);
  ASSERT_FALSE(back.counters.rows.empty());
  EXPECT_EQ(back.counters.rows[0].grid, (std::array<std::int32_t, 3>{6, 1, 1}));
  EXPECT_EQ(back.counters.rows[0].block, (std::array<std::int32_t, 3>{128, 1, 1}));
  const auto wait_event = json.find(R"("name":"WaitNs")");
  ASSERT_NE(wait_event, std::string::npos);
  EXPECT_EQ(json.substr(wait_event, json.find('}', json.find("\"args\"", wait_event)) - wait_event).find("profiled"),
            std::string::npos);
  // A row without a shape (a file written before rows kept one) goes to every kernel of its id.
  for (auto& r : t.counters.rows) r.grid = {}, r.block = {};
  EXPECT_FALSE(CounterRowIndex(t.counters).profiler_kernel(t.kernels.back()));
}
