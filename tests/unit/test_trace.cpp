// Trace model, analysis, windows and the Chrome writer on synthetic event lists.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/launch.hpp"
#include "ridge/trace/what_if.hpp"
#include "ridge/trace/window.hpp"
#include "trace/cupti/inject_env.hpp"
#include "trace/model/chrome_metadata.hpp"
#include "trace/model/record_times.hpp"
#include "trace/model/signals.hpp"

using namespace ridge::trace;

namespace {

constexpr std::uint32_t pid = 4242, tid = 77;

/// Builds synthetic traces: every kernel gets a runtime launch call on one thread.
struct Builder {
  Trace t;
  std::uint32_t next_correlation = 1;

  Builder() {
    t.process_id = pid;
    t.command = "synthetic";
    t.device_names[0] = "Test GPU";
  }
  ApiCall& api(const std::string& name, Nanoseconds start, Nanoseconds end, std::uint32_t thread = tid) {
    ApiCall a;
    a.name = t.strings.intern(name);
    a.process = pid;
    a.thread = thread;
    a.start = start;
    a.end = end;
    a.correlation = next_correlation++;
    t.api_calls.push_back(a);
    return t.api_calls.back();
  }
  /// A kernel launched by a cudaLaunchKernel call [launch_start, launch_start + 2000).
  void kernel(const std::string& name, std::uint32_t stream, Nanoseconds start, Nanoseconds end,
              std::optional<Nanoseconds> launch_start = std::nullopt, std::uint32_t thread = tid) {
    Kernel k;
    k.name = t.strings.intern(name);
    k.stream = stream;
    k.start = start;
    k.end = end;
    k.grid = {128, 2, 1};
    k.block = {256, 1, 1};
    if (launch_start) k.correlation = api("cudaLaunchKernel", *launch_start, *launch_start + 2000, thread).correlation;
    t.kernels.push_back(k);
  }
  void range(const std::string& name, Nanoseconds start, Nanoseconds end, std::uint32_t thread = tid) {
    NvtxRange r;
    r.name = t.strings.intern(name);
    r.process = pid;
    r.thread = thread;
    r.start = start;
    r.end = end;
    t.ranges.push_back(r);
  }
  void copy(MemcpyKind kind, std::uint64_t bytes, Nanoseconds start, Nanoseconds end, const std::string& api_name) {
    Memcpy m;
    m.kind = kind;
    m.bytes = bytes;
    m.stream = 7;
    m.start = start;
    m.end = end;
    m.correlation = api(api_name, start - 1000, end + 500).correlation;
    t.memcpys.push_back(m);
  }
  Trace done() {
    finalize(t);
    return t;
  }
};

}  // namespace

TEST(TraceModel, UnionLengthMergesOverlapsAndIgnoresEmptyIntervals) {
  EXPECT_EQ(union_length({}), 0u);
  EXPECT_EQ(union_length({{10, 20}, {15, 30}, {40, 50}, {45, 45}}), 30u);
  EXPECT_EQ(union_length({{40, 50}, {0, 100}}), 100u);
  EXPECT_EQ(union_length({{0, 10}, {10, 20}}), 20u);  // touching intervals join without double counting
}

TEST(TraceModel, StripsApiVersionsAndDemangles) {
  EXPECT_EQ(strip_api_version("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(strip_api_version("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(strip_api_version("cudaMemcpy_vX"), "cudaMemcpy_vX");
  EXPECT_EQ(strip_api_version("cudaGetDeviceProperties_v2_v12000"), "cudaGetDeviceProperties");
  EXPECT_EQ(demangle("_Z6kernelPfi"), "kernel(float*, int)");
  EXPECT_EQ(demangle("not_mangled"), "not_mangled");
}

TEST(TraceAnalysis, OverlappingKernelsOnTwoStreamsCountBusyTimeOnce) {
  Builder b;
  b.kernel("gemm", 7, 1000, 5000, 0);
  b.kernel("softmax", 8, 3000, 8000, 100);
  b.kernel("gemm", 7, 10000, 12000, 200);
  const Analysis a = analyze(b.done());
  EXPECT_EQ(a.kernel_count, 3u);
  EXPECT_EQ(a.kernel_time_ns, 4000u + 5000u + 2000u);
  EXPECT_EQ(a.gpu_busy_ns, 7000u + 2000u);
  EXPECT_EQ(a.kernel_span_ns, 11000u);
  EXPECT_EQ(a.gap_count, 1u);
  EXPECT_EQ(a.idle_time_ns, 2000u);
  EXPECT_EQ(a.largest_gap_ns, 2000u);
  EXPECT_NEAR(a.busy_fraction_of_kernel_span, 9000.0 / 11000.0, 1e-12);
  ASSERT_EQ(a.top_kernels.size(), 2u);
  EXPECT_EQ(a.top_kernels[0].name, "gemm");
  EXPECT_EQ(a.top_kernels[0].time.count, 2u);
  EXPECT_EQ(a.top_kernels[0].time.total_ns, 6000u);
  EXPECT_EQ(a.top_kernels[0].time.min_ns, 2000u);
  EXPECT_EQ(a.top_kernels[0].time.max_ns, 4000u);
  EXPECT_DOUBLE_EQ(a.top_kernels[0].time.mean_ns, 3000.0);
  EXPECT_NEAR(a.top_kernels[0].percent_of_kernel_time, 100.0 * 6000 / 11000, 1e-9);
  EXPECT_NEAR(a.top_kernels[0].percent_of_kernel_time + a.top_kernels[1].percent_of_kernel_time, 100.0, 1e-9);
}

TEST(TraceAnalysis, GapsAreHostBoundOnlyWhenTheLaunchCameAfterTheGpuWentIdle) {
  Builder b;
  b.kernel("a", 7, 10000, 20000, 0);       // launched early
  b.kernel("b", 7, 30000, 35000, 25000);   // launch call began at 25000 > 20000: the GPU waited on the host
  b.kernel("c", 7, 50000, 52000, 30000);   // launched at 30000, before b ended: gap not host-bound
  const Analysis a = analyze(b.done());
  EXPECT_EQ(a.gap_count, 2u);
  EXPECT_EQ(a.idle_time_ns, 10000u + 15000u);
  EXPECT_EQ(a.idle_waiting_on_host_ns, 10000u);
  EXPECT_NEAR(a.host_bound_fraction_of_idle, 10000.0 / 25000.0, 1e-12);
  EXPECT_EQ(a.idle_unattributed_ns, 0u);
  // Launch latency: kernel start - start of the launch call: 10000, 5000, 20000.
  EXPECT_EQ(a.launch_latency_count, 3u);
  EXPECT_DOUBLE_EQ(a.launch_latency_median_ns, 10000.0);
  EXPECT_DOUBLE_EQ(a.launch_latency_min_ns, 5000.0);
  EXPECT_DOUBLE_EQ(a.launch_latency_max_ns, 20000.0);
  EXPECT_NEAR(a.launch_latency_mean_ns, (10000.0 + 5000 + 20000) / 3, 1e-9);
  // c was launched at 30000 while b ran until 35000: 5000 of its 20000 were queued behind b.
  EXPECT_EQ(a.launches_queued, 1u);
  EXPECT_DOUBLE_EQ(a.launch_queued_max_ns, 5000.0);
  EXPECT_DOUBLE_EQ(a.launch_queued_median_ns, 0.0);
  EXPECT_DOUBLE_EQ(a.launch_overhead_median_ns, 10000.0);
  EXPECT_DOUBLE_EQ(a.launch_overhead_max_ns, 15000.0);
}

TEST(TraceAnalysis, HostBoundTraceRaisesAFinding) {
  Builder b;
  for (int i = 0; i < 20; ++i) {
    const Nanoseconds launch = 10000ull * i;
    b.kernel("tiny", 7, launch + 3000, launch + 4000, launch);  // 1 us of work every 10 us, each launched late
  }
  const Analysis a = analyze(b.done());
  EXPECT_GT(a.host_bound_fraction_of_idle, 0.99);
  bool found = false;
  for (const auto& f : a.findings) found |= f.find("host is the bottleneck") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(TraceAnalysis, KernelsWithoutLaunchCallsAreUnattributed) {
  Builder b;
  b.kernel("x", 7, 0, 1000);
  b.kernel("y", 7, 3000, 4000);
  const Analysis a = analyze(b.done());
  EXPECT_EQ(a.idle_unattributed_ns, 2000u);
  EXPECT_EQ(a.kernels_without_launch_call, 2u);
  EXPECT_EQ(a.launch_latency_count, 0u);
}

TEST(TraceAnalysis, QueueTimesStandInForLaunchCallsThatWereNotRecorded) {
  Builder b;
  b.range("step", 0, 40000);
  b.range("step", 40000, 80000);
  b.range("other thread", 0, 80000, tid + 1);  // the launching thread is unknown: it counts there too
  auto queued = [&](const char* name, Nanoseconds start, Nanoseconds end, Nanoseconds queued_at) {
    b.kernel(name, 7, start, end);
    b.t.kernels.back().queued = queued_at;
    b.t.kernels.back().correlation = b.next_correlation++;  // the call has an id, not a record
  };
  queued("a", 10000, 20000, 5000);
  queued("b", 30000, 35000, 25000);  // queued after a ended: the GPU waited on the host
  queued("c", 45000, 47000, 39000);  // queued in step 1, ran in step 2; queued after b ended
  queued("d", 50000, 52000, 46000);  // queued while c still ran: not the host's wait
  const Analysis a = analyze(b.done(), AnalysisOptions{.step_range = "step"});
  EXPECT_EQ(a.idle_waiting_on_host_ns, 20000u);
  EXPECT_EQ(a.idle_time_ns, 23000u);
  EXPECT_EQ(a.idle_unattributed_ns, 0u);
  EXPECT_EQ(a.kernels_without_launch_call, 0u);
  EXPECT_EQ(a.launches_timed_from_queue, 4u);
  EXPECT_EQ(a.launch_latency_count, 4u);
  EXPECT_DOUBLE_EQ(a.launch_latency_min_ns, 4000.0);
  EXPECT_DOUBLE_EQ(a.launch_latency_max_ns, 6000.0);
  EXPECT_EQ(a.launches_queued, 1u);  // d, 1000 behind c
  EXPECT_DOUBLE_EQ(a.launch_queued_max_ns, 1000.0);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].kernels, 3u);
  EXPECT_EQ(a.steps[1].kernels, 1u);
  for (const auto& r : a.top_ranges) EXPECT_EQ(r.kernels, 4u) << r.name;
  EXPECT_NE(format_analysis(a).find("Launch latency (launch queued to kernel start)"), std::string::npos);

  // The queue times survive the trace file, and a window keeps a kernel by its queue time.
  const Trace back = parse_chrome_json(to_chrome_json(b.done()));
  ASSERT_EQ(back.kernels.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(back.kernels[i].queued, b.t.kernels[i].queued);
  const Trace late = apply_window(back, Window{.skip_kernels = 2});  // from c's queue time (39000) on
  ASSERT_EQ(late.kernels.size(), 2u);
  EXPECT_EQ(late.kernels[0].queued, 39000u);
}

TEST(TraceAnalysis, EmptyTraceIsZeroEverywhereAndSaysSo) {
  Trace t;
  finalize(t);
  const Analysis a = analyze(t, AnalysisOptions{.step_range = "step"});
  EXPECT_EQ(a.kernel_count, 0u);
  EXPECT_EQ(a.gpu_busy_ns, 0u);
  EXPECT_EQ(a.trace_span_ns, 0u);
  EXPECT_EQ(a.idle_time_ns, 0u);
  EXPECT_TRUE(a.steps.empty());
  ASSERT_FALSE(a.findings.empty());
  EXPECT_NE(a.findings[0].find("No kernels"), std::string::npos);
  EXPECT_NE(format_analysis(a).find("no NVTX range named \"step\""), std::string::npos);
  const Trace back = parse_chrome_json(to_chrome_json(t));
  EXPECT_EQ(back.event_count(), 0u);
}

TEST(TraceAnalysis, KernelsPerStepAndRangesCountLaunchesInside) {
  Builder b;
  // Three steps of 10 us; step i launches i+2 kernels; an inner "attention" range in each.
  for (int i = 0; i < 3; ++i) {
    const Nanoseconds s = 100000ull * (i + 1);
    b.range("step", s, s + 10000);
    b.range("attention", s + 100, s + 3000);
    for (int k = 0; k < i + 2; ++k) b.kernel("k", 7, s + 5000 + 200 * k, s + 5100 + 200 * k, s + 200 + 1000 * k);
  }
  b.kernel("outside", 7, 900000, 901000, 800000);
  const Trace t = b.done();
  for (const auto& r : t.ranges) EXPECT_EQ(r.depth, t.strings.at(r.name) == "step" ? 0 : 1);
  const Analysis a = analyze(t, AnalysisOptions{.step_range = "step"});
  ASSERT_EQ(a.steps.size(), 3u);
  EXPECT_EQ(a.steps[0].kernels, 2u);
  EXPECT_EQ(a.steps[1].kernels, 3u);
  EXPECT_EQ(a.steps[2].kernels, 4u);
  EXPECT_EQ(a.steps[1].gpu_busy_ns, 300u);
  EXPECT_EQ(a.steps[1].duration_ns, 10000u);
  EXPECT_DOUBLE_EQ(a.kernels_per_step_median, 3.0);
  EXPECT_EQ(a.kernels_per_step_min, 2u);
  EXPECT_EQ(a.kernels_per_step_max, 4u);
  std::map<std::string, RangeStat> ranges;
  for (const auto& r : a.top_ranges) ranges[r.name] = r;
  EXPECT_EQ(ranges["step"].time.count, 3u);
  EXPECT_EQ(ranges["step"].kernels, 9u);
  EXPECT_EQ(ranges["step"].kernel_time_ns, 900u);
  // Launch calls inside "attention" (s+100 .. s+3000): launches at s+200, s+1200, s+2200 when present.
  EXPECT_EQ(ranges["attention"].kernels, 2u + 3u + 3u);
}

TEST(TraceAnalysis, KernelsWithoutLaunchCallsCountInTheStepTheyRanIn) {
  Builder b;
  b.range("step", 0, 10000);
  b.range("step", 20000, 30000);
  b.kernel("launched", 7, 1000, 2000, 500);
  b.kernel("graph_node", 7, 3000, 4000);   // no launch call: placed by its start
  b.kernel("late", 7, 25000, 26000, 9000);  // launched in step 1 although it ran during step 2
  const Analysis a = analyze(b.done(), AnalysisOptions{.step_range = "step"});
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].kernels, 3u);
  EXPECT_EQ(a.steps[1].kernels, 0u);
}

TEST(TraceAnalysis, RepeatedDeviceToHostCopiesAreFlaggedAsHiddenSyncs) {
  Builder b;
  for (int i = 0; i < 5; ++i) {
    const Nanoseconds s = 100000ull * (i + 1);
    b.kernel("work", 7, s, s + 20000, s - 5000);
    b.copy(MemcpyKind::device_to_host, 4, s + 20000, s + 21000, "cudaMemcpyAsync");
  }
  b.copy(MemcpyKind::host_to_device, 1 << 20, 2000, 5000, "cudaMemcpy");
  b.copy(MemcpyKind::device_to_host, 1 << 20, 700000, 800000, "cudaMemcpy");  // once: not a loop
  const Analysis a = analyze(b.done());
  ASSERT_EQ(a.hidden_syncs.size(), 1u);
  EXPECT_EQ(a.hidden_syncs[0].count, 5u);
  EXPECT_EQ(a.hidden_syncs[0].bytes, 4u);
  EXPECT_EQ(a.hidden_syncs[0].api, "cudaMemcpyAsync");
  EXPECT_EQ(a.hidden_syncs[0].copy_time_ns, 5000u);
  EXPECT_EQ(a.hidden_syncs[0].idle_after_ns, 4u * (100000 - 21000));  // the last copy has no kernel after it
  ASSERT_EQ(a.memcpy_totals.size(), 2u);
  for (const auto& m : a.memcpy_totals) {
    if (m.kind == MemcpyKind::device_to_host) {
      EXPECT_EQ(m.count, 6u);
      EXPECT_EQ(m.bytes, 5u * 4 + (1u << 20));
    } else {
      EXPECT_EQ(m.kind, MemcpyKind::host_to_device);
      EXPECT_EQ(m.count, 1u);
    }
  }
}

TEST(TraceAnalysis, WithoutSyncRecordsTheWaitsAreTheSynchronizeCalls) {
  Builder b;
  b.kernel("k", 7, 10000, 50000, 1000);
  b.api("cudaStreamSynchronize", 4000, 51000);                        // runtime: 47 us waiting
  b.api("cuStreamSynchronize", 4100, 50900).domain = ApiDomain::driver;  // the call under it
  b.api("cudaGetDevice", 60000, 60100);
  Analysis a = analyze(b.t);
  EXPECT_EQ(a.sync_count, 1u) << "the driver call under the runtime one must not count again";
  EXPECT_EQ(a.sync_time_ns, 47000);

  // Only driver calls (a program that uses the driver API): those are the waits.
  Builder d;
  d.kernel("k", 7, 10000, 50000, 1000);
  d.api("cuCtxSynchronize", 5000, 52000).domain = ApiDomain::driver;
  Analysis da = analyze(d.t);
  EXPECT_EQ(da.sync_count, 1u);
  EXPECT_EQ(da.sync_time_ns, 47000);

  // With synchronization records, those are counted and the API calls are not.
  Sync y;
  y.start = 4000;
  y.end = 30000;
  b.t.syncs.push_back(y);
  Analysis with_records = analyze(b.t);
  EXPECT_EQ(with_records.sync_count, 1u);
  EXPECT_EQ(with_records.sync_time_ns, 26000);
}

TEST(TraceAnalysis, JsonRoundTripKeepsEveryNumber) {
  Builder b;
  b.range("step", 0, 50000);
  b.kernel("gemm", 7, 1000, 5000, 0);
  b.kernel("softmax", 8, 3000, 8000, 100);
  b.copy(MemcpyKind::device_to_host, 8, 9000, 9500, "cudaMemcpy");
  const Analysis a = analyze(b.done(), AnalysisOptions{.step_range = "step"});
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j["schema"], "ridge.trace_analysis/1");
  EXPECT_EQ(j["gpu_busy_ns"], a.gpu_busy_ns);
  const Analysis back = analysis_from_json(j);
  EXPECT_EQ(to_json(back), j);
  EXPECT_THROW(analysis_from_json(nlohmann::json{{"gpu_busy_ns", "lots"}}), ridge::UsageError);
}

namespace {

/// Six steps of two kernels ("gemm" 1 us, gap 0.5 us, "norm" 1 us), 100 us apart. Steps 2 and 3
/// ran under step replay: step 2 is pass 0 (counter rows), step 3 pass 1 (perturbed); their
/// kernels take `profiled_ns` each (at most 30 us: the steps stay apart), and each also ran a CUDA
/// graph's "gemm" (no launch call: in no pass's list). `marked`: the counters say so (else the
/// trace has no counters).
Trace step_replay_trace(Nanoseconds profiled_ns, bool marked) {
  Builder b;
  for (Nanoseconds step = 0; step < 6; ++step) {
    const Nanoseconds s = 100000 * (step + 1);
    const bool profiled = step == 2 || step == 3;
    const Nanoseconds d = profiled ? profiled_ns : 1000;
    b.range("step", s, s + (profiled ? 2 * d + 5000 : 10000));
    b.kernel("gemm", 7, s + 1000, s + 1000 + d, s + 100);
    b.kernel("norm", 7, s + 1500 + d, s + 1500 + 2 * d, s + 200);
    if (!profiled) continue;
    b.kernel("gemm", 7, s + 2000 + 2 * d, s + 2000 + 3 * d);  // a graph's kernel
    if (!marked) continue;
    for (std::size_t i = b.t.kernels.size() - 3; i < b.t.kernels.size() - 1; ++i) {
      const std::uint32_t corr = b.t.kernels[i].correlation;
      if (step == 2)
        b.t.counters.rows.push_back({corr, 0, {}, s + 100});
      else
        b.t.counters.perturbed.push_back(corr);
    }
  }
  b.t.counters.replay = CounterReplay::steps;
  b.t.counters.passes = 2;
  b.t.counters.steps_taken = {2, 3};
  return b.done();
}

}  // namespace

TEST(TraceAnalysis, LaunchesOfReplayedStepsLeaveEveryTimeAndSayWhy) {
  const Analysis a = analyze(step_replay_trace(20000, true), AnalysisOptions{.step_range = "step"});
  EXPECT_EQ(a.kernel_count, 14u);  // counted, not timed
  EXPECT_EQ(a.kernels_left_out, 6u);  // the graphs' kernels in the replayed steps too
  EXPECT_EQ(a.steps_left_out, 2u);
  EXPECT_EQ(a.ranges_left_out, 2u);
  ASSERT_EQ(a.top_kernels.size(), 2u);
  for (const auto& k : a.top_kernels) {
    EXPECT_EQ(k.time.count, 4u) << k.name;
    EXPECT_EQ(k.time.max_ns, 1000u) << k.name;
    EXPECT_DOUBLE_EQ(k.percent_of_kernel_time, 50.0) << k.name;
  }
  EXPECT_EQ(a.kernel_time_ns, 8000u);
  EXPECT_EQ(a.gpu_busy_ns, 8000u);
  // Kept gaps: 0.5 us inside each of the 4 kept steps, and steps 0->1 and 4->5; the gaps beside
  // the profiled steps are profiling's.
  EXPECT_EQ(a.gap_count, 6u);
  EXPECT_EQ(a.idle_time_ns, 4 * 500u + 2 * 97500u);
  EXPECT_EQ(a.largest_gap_ns, 97500u);
  EXPECT_EQ(a.kernel_span_ns, a.gpu_busy_ns + a.idle_time_ns);
  // The whole span less what is kept: the profiled steps' kernels and the gaps beside them.
  EXPECT_EQ(a.left_out_span_ns, (600000u + 3500u - 101000u) - a.kernel_span_ns);
  ASSERT_EQ(a.steps.size(), 4u);
  std::vector<std::uint64_t> numbers;
  for (const auto& s : a.steps) numbers.push_back(s.number);
  EXPECT_EQ(numbers, (std::vector<std::uint64_t>{0, 1, 4, 5}));
  EXPECT_DOUBLE_EQ(a.step_time_median_ns, 10000.0);
  EXPECT_EQ(a.kernels_per_step_max, 2u);
  ASSERT_FALSE(a.top_ranges.empty());
  EXPECT_EQ(a.top_ranges[0].time.count, 4u);
  EXPECT_EQ(a.top_ranges[0].time.max_ns, 10000u);
  EXPECT_EQ(a.top_ranges[0].kernel_time_ns, 8000u);
  const std::string text = format_analysis(a);
  EXPECT_NE(text.find("Left out of every time below: 6 launches under hardware counters (2 steps and 2 NVTX ranges"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("steps replayed for their hardware counters' passes"), std::string::npos) << text;
  EXPECT_NE(text.find("4 steps (2 more ran under hardware counters: left out)"), std::string::npos) << text;
  EXPECT_NE(text.find("the program's steps 0, 1, 4, 5 (0-based)"), std::string::npos) << text;
  const Analysis back = analysis_from_json(to_json(a));
  EXPECT_EQ(back.kernels_left_out, 6u);
  EXPECT_EQ(back.steps_left_out, 2u);
  EXPECT_EQ(back.ranges_left_out, 2u);
  EXPECT_EQ(back.left_out_span_ns, a.left_out_span_ns);
  EXPECT_EQ(back.left_out_reason, a.left_out_reason);
}

TEST(TraceAnalysis, HowMuchProfilingSlowedTheReplayedStepsChangesNoTime) {
  const AnalysisOptions options{.step_range = "step"};
  const nlohmann::json slowed = to_json(analyze(step_replay_trace(20000, true), options));
  const nlohmann::json slower = to_json(analyze(step_replay_trace(30000, true), options));
  for (const char* field : {"top_kernels", "top_ranges", "steps", "kernel_time_ns", "gpu_busy_ns", "kernel_span_ns",
                            "idle_time_ns", "gap_count", "largest_gap_ns", "idle_waiting_on_host_ns",
                            "launch_latency_median_ns", "launch_latency_max_ns", "step_time_median_ns",
                            "busy_fraction_of_kernel_span"})
    EXPECT_EQ(slowed[field], slower[field]) << field;
  // Unmarked, the slowed launches are timed like any other: the test above could fail.
  const Analysis unmarked = analyze(step_replay_trace(20000, false), options);
  EXPECT_EQ(unmarked.kernels_left_out, 0u);
  EXPECT_EQ(unmarked.top_kernels[0].time.max_ns, 20000u);
  EXPECT_EQ(unmarked.top_kernels[0].time.count, 8u);
  EXPECT_EQ(unmarked.steps.size(), 6u);
  EXPECT_EQ(format_analysis(unmarked).find("Left out"), std::string::npos);
}

TEST(TraceAnalysis, KernelsReplayedPerKernelLeaveTheTopKernelTimes) {
  Builder b;
  // The first 2 launches of "gemm" were replayed per kernel: the trace places them at their launch
  // call, lasting their profiled pass (50 us); 3 more ran untouched (2 us).
  for (Nanoseconds i = 0; i < 5; ++i) {
    const Nanoseconds at = 100000 * (i + 1);
    const bool replayed = i < 2;
    b.kernel("gemm", 7, at + 3000, at + 3000 + (replayed ? 50000 : 2000), at);
    if (replayed) b.t.counters.rows.push_back({b.t.kernels.back().correlation, 0, {}, at});
  }
  b.kernel("relu", 7, 700000, 701000, 699000);
  b.t.counters.replay = CounterReplay::kernel;
  const Analysis a = analyze(b.done());
  EXPECT_EQ(a.kernels_left_out, 2u);
  EXPECT_EQ(a.steps_left_out, 0u);
  EXPECT_EQ(a.distinct_kernels, 2u);
  ASSERT_EQ(a.top_kernels.size(), 2u);
  EXPECT_EQ(a.top_kernels[0].name, "gemm");
  EXPECT_EQ(a.top_kernels[0].time.count, 3u);
  EXPECT_EQ(a.top_kernels[0].time.total_ns, 6000u);
  EXPECT_EQ(a.top_kernels[0].time.max_ns, 2000u);
  EXPECT_EQ(a.kernel_time_ns, 7000u);
  EXPECT_EQ(a.launch_latency_count, 4u);
  EXPECT_DOUBLE_EQ(a.launch_latency_max_ns, 3000.0);
  const std::string text = format_analysis(a);
  EXPECT_NE(text.find("Left out of every time below: 2 launches under hardware counters ("), std::string::npos) << text;
  EXPECT_EQ(text.find("0 steps"), std::string::npos) << text;
  EXPECT_NE(text.find("CUPTI replayed them once per hardware-counter pass"), std::string::npos) << text;
}

TEST(TraceWindow, SkipsKernelsSecondsAndKeepsNvtxAndProfilerRanges) {
  Builder b;
  b.t.collection_start = 0;
  for (int i = 0; i < 10; ++i) {
    std::string name = "k";  // not "k" + to_string(i): GCC 12 warns falsely on that at -O3 (-Wrestrict)
    name += std::to_string(i);
    b.kernel(name, 7, 1000000ull * i + 500, 1000000ull * i + 900, 1000000ull * i);
  }
  b.range("step", 5000000, 7500000);
  b.api("cudaProfilerStart", 2000000 - 100, 2000000 - 50);
  b.api("cudaProfilerStop", 4000000 - 10, 4000000);
  const Trace t = b.done();

  const Trace by_kernels = apply_window(t, Window{.skip_kernels = 3});
  ASSERT_EQ(by_kernels.kernels.size(), 7u);
  EXPECT_EQ(by_kernels.strings.at(by_kernels.kernels.front().name), "k3");
  EXPECT_NE(by_kernels.window.find("first 3 skipped"), std::string::npos);

  const Trace by_seconds = apply_window(t, Window{.skip_seconds = 0.0065});
  EXPECT_EQ(by_seconds.kernels.size(), 3u);  // launched at 7, 8, 9 ms

  const Trace by_range = apply_window(t, Window{.nvtx_range = "step"});
  ASSERT_EQ(by_range.kernels.size(), 3u);  // launched at 5, 6, 7 ms (7.0 <= 7.5)
  EXPECT_EQ(by_range.ranges.size(), 1u);

  const Trace by_profiler = apply_window(t, Window{.profiler_range = true});
  ASSERT_EQ(by_profiler.kernels.size(), 2u);  // launched at 2 and 3 ms
  EXPECT_EQ(by_profiler.strings.at(by_profiler.kernels[0].name), "k2");

  EXPECT_TRUE(apply_window(t, Window{.skip_kernels = 10}).kernels.empty());
  EXPECT_TRUE(apply_window(t, Window{.nvtx_range = "no such range"}).kernels.empty());
  EXPECT_EQ(apply_window(t, Window{}).kernels.size(), 10u);
}

TEST(TraceWhatIf, AmdahlFromTheTraceUsesBusyTimeAndSpan) {
  Builder b;
  b.kernel("attention_fwd", 7, 0, 3000, std::nullopt);
  b.kernel("gemm_bf16", 7, 3000, 10000, std::nullopt);
  const Trace t = b.done();
  // attention: 30% of busy time; made 3x faster -> 1 / (0.7 + 0.1) = 1.25x (the Amdahl example).
  const KernelWhatIf w = kernel_what_if(t, "attention", 3);
  ASSERT_EQ(w.matched.size(), 1u);
  EXPECT_EQ(w.matched[0], "attention_fwd");
  EXPECT_EQ(w.launches, 1u);
  EXPECT_NEAR(w.fraction_of_busy, 0.3, 1e-12);
  EXPECT_NEAR(w.overall_speedup_busy, 1.25, 1e-12);
  EXPECT_NEAR(w.fraction_of_span, 0.3, 1e-12);
  EXPECT_EQ(w.busy_saved_ns, 2000u);
  EXPECT_NE(w.explanation.find("busy"), std::string::npos);
  EXPECT_EQ(kernel_what_if(t, "gemm_bf16", 1).overall_speedup_busy, 1.0);
  EXPECT_THROW(kernel_what_if(t, "nonexistent", 2), ridge::UsageError);
  EXPECT_THROW(kernel_what_if(t, "gemm", 0), ridge::UsageError);
}

// ---- Chrome trace JSON ---------------------------------------------------------------------------

namespace {

Trace rich_trace() {
  Builder b;
  b.range("step", 0, 60000);
  b.range("layer \"0\" \\ attn", 100, 30000);  // quotes and a backslash must survive
  b.kernel("gemm<float, 128>", 7, 1000, 5000, 0);
  b.kernel("softmax", 8, 3000, 8000, 100);
  b.kernel("gemm<float, 128>", 7, 10001, 12345, 5000, tid + 1);
  b.copy(MemcpyKind::device_to_host, 4096, 20000, 21000, "cudaMemcpyAsync");
  Memset m;
  m.bytes = 1024;
  m.stream = 8;
  m.start = 22000;
  m.end = 22500;
  m.correlation = b.api("cudaMemsetAsync", 21000, 21500).correlation;
  b.t.memsets.push_back(m);
  Sync s;
  s.kind = SyncKind::stream_synchronize;
  s.stream = 7;
  s.start = 23000;
  s.end = 25000;
  s.correlation = b.api("cudaStreamSynchronize", 22900, 25100).correlation;
  b.t.syncs.push_back(s);
  NvtxRange mark;
  mark.name = b.t.strings.intern("checkpoint");
  mark.process = pid;
  mark.thread = tid;
  mark.start = mark.end = 26000;
  mark.marker = true;
  b.t.ranges.push_back(mark);
  ApiCall driver = b.api("cuLaunchKernel", 40000, 41000);
  b.t.api_calls.back().domain = ApiDomain::driver;
  Kernel k;
  k.name = b.t.strings.intern("triton_kernel");
  k.stream = 7;
  k.start = 42000;
  k.end = 43000;
  k.correlation = driver.correlation;
  k.external_id = 99;
  b.t.kernels.push_back(k);
  b.t.dropped_records = 3;
  b.t.count_rejected("dropped: synthetic records that end before they begin", 2);
  b.t.collection_start = 0;
  return b.done();
}

}  // namespace

TEST(TraceChrome, EveryCompleteEventHasTimesAndTracksAndEveryFlowEnds) {
  const Trace t = rich_trace();
  const nlohmann::json doc = nlohmann::json::parse(to_chrome_json(t));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  EXPECT_EQ(doc["ridge"]["dropped_records"], 3);
  std::map<std::string, int> categories;
  std::map<std::uint64_t, int> flow_starts, flow_ends;
  std::set<std::pair<std::int64_t, std::int64_t>> named_threads, used_threads;
  std::set<std::int64_t> named_processes;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      EXPECT_TRUE(e.contains("ts") && e["ts"].is_number()) << e;
      EXPECT_TRUE(e.contains("dur") && e["dur"].is_number()) << e;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e.contains("pid") && e.contains("tid")) << e;
      categories[e.at("cat")]++;
      used_threads.emplace(e["pid"], e["tid"]);
      if (e["cat"] == "kernel") {
        for (const char* key : {"device", "stream", "correlation", "grid", "block"}) EXPECT_TRUE(e["args"].contains(key)) << key;
      }
      if (e["cat"] == "cuda_runtime") {
        EXPECT_TRUE(e["args"].contains("correlation"));
      }
    } else if (ph == "s") {
      flow_starts[e.at("id")]++;
      EXPECT_EQ(e["cat"], "ac2g");
    } else if (ph == "f") {
      flow_ends[e.at("id")]++;
      EXPECT_EQ(e.at("bp"), "e");
    } else if (ph == "M") {
      if (e["name"] == "thread_name") named_threads.emplace(e["pid"], e["tid"]);
      if (e["name"] == "process_name") named_processes.insert(e["pid"].get<std::int64_t>());
    }
  }
  EXPECT_EQ(categories["kernel"], 4);
  EXPECT_EQ(categories["gpu_memcpy"], 1);
  EXPECT_EQ(categories["gpu_memset"], 1);
  EXPECT_EQ(categories["cuda_sync"], 1);
  EXPECT_EQ(categories["cuda_driver"], 1);
  EXPECT_EQ(categories["cuda_runtime"], 6);
  EXPECT_EQ(categories["user_annotation"], 2);  // the marker is an instant event
  EXPECT_EQ(flow_starts.size(), 4u + 1 + 1);  // kernels, the copy, the memset
  EXPECT_EQ(flow_starts, flow_ends);
  for (const auto& [id, n] : flow_starts) EXPECT_EQ(n, 1);
  for (const auto& thread : used_threads) EXPECT_TRUE(named_threads.count(thread)) << thread.first << "/" << thread.second;
  for (const auto& thread : used_threads) EXPECT_TRUE(named_processes.count(thread.first));
}

TEST(TraceChrome, TimestampsAreMicrosecondsWithNanosecondPrecisionFromTheStart) {
  const Trace t = rich_trace();
  const nlohmann::json doc = nlohmann::json::parse(to_chrome_json(t));
  double min_ts = 1e300;
  bool saw_odd = false;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    min_ts = std::min(min_ts, e["ts"].get<double>());
    if (e["cat"] == "kernel" && e["ts"].get<double>() == 10.001) {
      saw_odd = true;
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2.344);
    }
  }
  EXPECT_DOUBLE_EQ(min_ts, 0.0);
  EXPECT_TRUE(saw_odd) << "a kernel at 10001 ns must be written as ts 10.001";
}

TEST(TraceChrome, ReadingBackRebuildsTheSameEventsAndAnalysis) {
  const Trace t = rich_trace();
  const Trace back = parse_chrome_json(to_chrome_json(t));
  ASSERT_EQ(back.kernels.size(), t.kernels.size());
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    EXPECT_EQ(back.strings.at(back.kernels[i].name), t.strings.at(t.kernels[i].name));
    EXPECT_EQ(back.kernels[i].start, t.kernels[i].start);
    EXPECT_EQ(back.kernels[i].end, t.kernels[i].end);
    EXPECT_EQ(back.kernels[i].stream, t.kernels[i].stream);
    EXPECT_EQ(back.kernels[i].correlation, t.kernels[i].correlation);
    EXPECT_EQ(back.kernels[i].external_id, t.kernels[i].external_id);
    EXPECT_EQ(back.kernels[i].grid, t.kernels[i].grid);
    EXPECT_EQ(back.kernels[i].block, t.kernels[i].block);
  }
  ASSERT_EQ(back.api_calls.size(), t.api_calls.size());
  for (std::size_t i = 0; i < t.api_calls.size(); ++i) {
    EXPECT_EQ(back.strings.at(back.api_calls[i].name), t.strings.at(t.api_calls[i].name));
    EXPECT_EQ(back.api_calls[i].thread, t.api_calls[i].thread);
    EXPECT_EQ(back.api_calls[i].process, t.api_calls[i].process);
    EXPECT_EQ(back.api_calls[i].domain, t.api_calls[i].domain);
    EXPECT_EQ(back.api_calls[i].start, t.api_calls[i].start);
  }
  ASSERT_EQ(back.memcpys.size(), 1u);
  EXPECT_EQ(back.memcpys[0].kind, MemcpyKind::device_to_host);
  EXPECT_EQ(back.memcpys[0].bytes, 4096u);
  ASSERT_EQ(back.memsets.size(), 1u);
  EXPECT_EQ(back.memsets[0].bytes, 1024u);
  ASSERT_EQ(back.syncs.size(), 1u);
  EXPECT_EQ(back.syncs[0].kind, SyncKind::stream_synchronize);
  ASSERT_EQ(back.ranges.size(), t.ranges.size());
  std::set<std::string> names;
  for (const auto& r : back.ranges) names.insert(back.strings.at(r.name));
  EXPECT_TRUE(names.count("layer \"0\" \\ attn"));
  EXPECT_EQ(back.dropped_records, 3u);
  EXPECT_EQ(back.rejected_events, t.rejected_events);
  EXPECT_EQ(back.process_id, pid);
  EXPECT_EQ(back.device_names.at(0), "Test GPU");

  const AnalysisOptions options{.step_range = "step"};
  EXPECT_EQ(to_json(analyze(back, options)), to_json(analyze(t, options)));
}

TEST(TraceChrome, RejectsFilesThatAreNotTraces) {
  EXPECT_THROW(parse_chrome_json("{not json"), ridge::UsageError);
  EXPECT_THROW(parse_chrome_json(R"({"records": []})"), ridge::UsageError);
}

TEST(TraceChrome, RejectsValuesOfTheWrongTypeOrRange) {
  // Found reading the reader for its fuzz target: each of these escaped as a JSON type error or std::out_of_range, or cast a
  // double past int64's range (undefined). Inputs: tests/unit/data/fuzz/chrome_trace/. (An event whose
  // "ph" is not a string is not one ridge reads: it is skipped, as every unknown event is.)
  const std::string kernel = R"("ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2)";
  const std::vector<std::string> bad = {
      R"({"traceEvents":[{)" + kernel + R"(,"args":{"grid":[1e20,1,1]}}]})",
      R"({"traceEvents":[{)" + kernel + R"(,"args":{"grid":[1,"2",1]}}]})",
      R"({"traceEvents":[{)" + kernel + R"(,"args":{"correlation":1e300}}]})",
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":"s 99999999999999999999","ts":1}]})",
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":"5"}]})",
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1e300,"dur":1}]})",
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1e16}]})",
      R"({"ridge":{"devices":{"x":"H200"}},"traceEvents":[]})",
      R"({"ridge":{"devices":{"0":7}},"traceEvents":[]})",
      R"({"ridge":[1],"traceEvents":[]})",
      // ridge's metadata: nlohmann would cast the double straight to the integer type
      R"({"ridge":{"collection_start_ns":1795987300037847148608},"traceEvents":[]})",
      R"({"ridge":{"origin_ns":-5},"traceEvents":[]})",
      R"({"ridge":{"process_id":4294967296},"traceEvents":[]})",
      R"({"ridge":{"dropped_records":1.5},"traceEvents":[]})",
      R"({"ridge":{"rejected_events":[{"reason":"x","count":1e30}]},"traceEvents":[]})",
      R"({"ridge":{"distributed":{"local_rank":1e10}},"traceEvents":[]})",
  };
  for (const auto& text : bad) {
    try {
      parse_chrome_json(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const ridge::UsageError& e) {
      // Either message form: what is wrong, or where (the JSON path of the value).
      const std::string what = e.what();
      EXPECT_TRUE(what.find("not a trace ridge can read") != std::string::npos ||
                  what.find("traceEvents[0]") != std::string::npos || what.find("ridge: malformed metadata") != std::string::npos)
          << what;
    }
  }
  // Within range they still read: a string tid's digits, a whole-number double id.
  const Trace t = parse_chrome_json(
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":"stream 7","ts":1,"dur":2,"args":{"correlation":3.0,"grid":[4,1,1]}}]})");
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].stream, 7u);
  EXPECT_EQ(t.kernels[0].correlation, 3u);
  EXPECT_EQ(t.kernels[0].grid.x, 4);
}

TEST(TraceChrome, ReadsPyTorchStyleTraces) {
  // The shape PyTorch's profiler writes: kernels on pid = device, tid = stream; runtime on the host.
  const std::string text = R"({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1234,"tid":1234,"ts":100.0,"dur":5.0,"args":{"correlation":11,"External id":3}},
    {"ph":"X","cat":"kernel","name":"void at::native::vectorized_elementwise_kernel<4>","pid":0,"tid":7,"ts":110.5,"dur":2.25,"args":{"device":0,"stream":7,"correlation":11,"grid":[66,1,1],"block":[128,1,1]}},
    {"ph":"X","cat":"user_annotation","name":"step","pid":1234,"tid":1234,"ts":90.0,"dur":50.0},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1234,"tid":1234,"ts":95.0,"dur":20.0}
  ]})";
  const Trace t = parse_chrome_json(text);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].end - t.kernels[0].start, 2250u);
  const Analysis a = analyze(t, AnalysisOptions{.step_range = "step"});
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].kernels, 1u);
  EXPECT_DOUBLE_EQ(a.launch_latency_median_ns, 10500.0);  // from the launch call's start
}

// ---- numbers that need a sentence: overlap, queued launches, step spans, windows -----------------

namespace {
bool any_contains(const std::vector<std::string>& texts, const std::string& part) {
  for (const auto& t : texts)
    if (t.find(part) != std::string::npos) return true;
  return false;
}

/// Every percentage a text prints ("12.5%"), as numbers.
std::vector<double> percentages(const std::string& text) {
  std::vector<double> out;
  for (std::size_t pos = text.find('%'); pos != std::string::npos; pos = text.find('%', pos + 1)) {
    std::size_t begin = pos;
    while (begin > 0 && (std::isdigit(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '.')) --begin;
    if (begin < pos) out.push_back(std::stod(text.substr(begin, pos - begin)));
  }
  return out;
}
}  // namespace

TEST(TraceAnalysis, OverlappingKernelsOfADependentChainReportTheOverlapShare) {
  // Programmatic dependent launch: each kernel starts before its predecessor on the stream ends.
  Builder b;
  b.kernel("qkv", 7, 0, 1000, 0);
  b.kernel("attn", 7, 500, 2000, 100);
  b.kernel("proj", 7, 1500, 3000, 200);
  const Analysis a = analyze(b.done());
  EXPECT_EQ(a.kernel_time_ns, 4000u);
  EXPECT_EQ(a.gpu_busy_ns, 3000u);
  EXPECT_NEAR(a.kernel_overlap_fraction, 0.25, 1e-12);
  EXPECT_TRUE(any_contains(a.findings, "Kernels overlapped: their times sum to 4.00 us against 3.00 us"));
  const std::string text = format_analysis(a);
  EXPECT_NE(text.find("overlap share 25.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("Top kernels by total GPU time (kernels overlapped"), std::string::npos) << text;
  // A kernel that began before its predecessor ended was not queued beyond that start.
  EXPECT_GE(a.launch_overhead_min_ns, 0.0);

  Builder serial;  // back to back: nothing to say
  serial.kernel("qkv", 7, 0, 1000, 0);
  serial.kernel("attn", 7, 1000, 2000, 100);
  const Analysis s = analyze(serial.done());
  EXPECT_EQ(s.kernel_overlap_fraction, 0.0);
  EXPECT_FALSE(any_contains(s.findings, "Kernels overlapped"));
  EXPECT_EQ(format_analysis(s).find("kernels overlapped"), std::string::npos);
}

TEST(TraceAnalysis, LaunchesIssuedAheadOfTheGpuAreQueuedNotSlowToLaunch) {
  // The host issues five launches 1 us apart; each kernel runs 10 us, back to back from 5 us on.
  Builder b;
  for (int i = 0; i < 5; ++i)
    b.kernel("step", 7, 5000 + 10000ull * i, 15000 + 10000ull * i, 1000ull * i);
  const Analysis a = analyze(b.done());
  ASSERT_EQ(a.launch_latency_count, 5u);
  // Latency 5000 + 9000 i; all of it queued behind the previous kernel except the first launch's.
  EXPECT_DOUBLE_EQ(a.launch_latency_median_ns, 23000.0);
  EXPECT_DOUBLE_EQ(a.launch_latency_max_ns, 41000.0);
  EXPECT_EQ(a.launches_queued, 4u);
  EXPECT_DOUBLE_EQ(a.launch_queued_median_ns, 23000.0);
  EXPECT_DOUBLE_EQ(a.launch_queued_max_ns, 41000.0);
  EXPECT_DOUBLE_EQ(a.launch_overhead_median_ns, 0.0);
  EXPECT_DOUBLE_EQ(a.launch_overhead_max_ns, 5000.0);
  EXPECT_NEAR(a.launch_queued_mean_ns + a.launch_overhead_mean_ns, a.launch_latency_mean_ns, 1e-9);
  EXPECT_TRUE(any_contains(a.findings, "4 of 5 launches were issued while their stream was still busy"));
  const std::string text = format_analysis(a);
  EXPECT_NE(text.find("queued behind earlier work on the stream: median 23.00 us"), std::string::npos) << text;
  EXPECT_NE(text.find("launch overhead (the rest): median 0.0 ns"), std::string::npos) << text;

  // Work on another stream does not queue a launch.
  Builder two;
  two.kernel("long", 7, 1000, 50000, 0);
  two.kernel("short", 8, 3000, 4000, 1000);
  const Analysis t = analyze(two.done());
  EXPECT_EQ(t.launches_queued, 0u);
  EXPECT_DOUBLE_EQ(t.launch_overhead_max_ns, 2000.0);

  // A copy earlier on the same stream queues the kernel behind it.
  Builder copy;
  copy.copy(MemcpyKind::host_to_device, 1 << 20, 2000, 30000, "cudaMemcpyAsync");
  copy.kernel("after_copy", 7, 31000, 32000, 5000);
  const Analysis c = analyze(copy.done());
  EXPECT_EQ(c.launches_queued, 1u);
  EXPECT_DOUBLE_EQ(c.launch_queued_max_ns, 25000.0);
  EXPECT_DOUBLE_EQ(c.launch_overhead_max_ns, 1000.0);
}

TEST(TraceAnalysis, AStepWindowDoesNotCallTimeQueuedBehindCutOutWarmUpLaunchOverhead) {
  // The report's profile: three un-synchronized warm-up launches of one 320 us persistent kernel,
  // then the "step" launch, issued while the GPU still runs them. The step window cuts the warm-up
  // out, so nothing in it shows the stream was busy: 950 us used to read as launch overhead.
  Builder b;
  for (int i = 0; i < 3; ++i) b.kernel("fused_step", 7, 10000 + 320000ull * i, 330000 + 320000ull * i, 1000ull * i);
  b.range("step", 5000, 8000);
  b.kernel("fused_step", 7, 970000, 1290000, 5000);
  const Trace whole = b.done();
  const Analysis all = analyze(whole);
  EXPECT_EQ(all.launches_not_split, 0u);  // the whole trace shows the warm-up kernels: the wait is queued
  EXPECT_DOUBLE_EQ(all.launch_queued_max_ns, 965000.0);

  const Trace step = apply_window(whole, Window{.nvtx_range = "step"});
  ASSERT_EQ(step.kernels.size(), 1u);
  const Analysis a = analyze(step, AnalysisOptions{.step_range = "step"});
  ASSERT_EQ(a.launch_latency_count, 1u);
  EXPECT_DOUBLE_EQ(a.launch_latency_median_ns, 965000.0);
  EXPECT_EQ(a.launches_not_split, 1u);
  EXPECT_EQ(a.launches_split(), 0u);
  EXPECT_DOUBLE_EQ(a.launch_overhead_median_ns, 0.0);  // not 965 us of "overhead"
  EXPECT_EQ(launch_split_text(a), "not split (latency 965.00 us: the first launch on its stream in the window)");
  const std::string text = format_analysis(a);
  EXPECT_EQ(text.find("launch overhead (the rest)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 launch(es) not split into queued and overhead"), std::string::npos) << text;

  // Later launches in the same window are split as before; the first one is counted apart.
  Builder two;
  two.range("step", 0, 10000);
  two.kernel("a", 7, 500000, 510000, 1000);
  two.kernel("b", 7, 512000, 520000, 2000);
  const Analysis s = analyze(apply_window(two.done(), Window{.nvtx_range = "step"}));
  EXPECT_EQ(s.launch_latency_count, 2u);
  EXPECT_EQ(s.launches_not_split, 1u);
  EXPECT_DOUBLE_EQ(s.launch_queued_median_ns, 508000.0);  // b waited behind a
  EXPECT_EQ(launch_split_text(s), "508.00 us / 2.00 us (1 of 2 not split)");
}

TEST(TraceAnalysis, AStepsGpuShareIsOfItsGpuSpanWhenLaunchesRunAheadOfTheGpu) {
  // Launches return before the GPU runs them: each step's host range is short, its kernels run later.
  Builder b;
  b.range("step", 0, 10000);
  b.kernel("a", 7, 20000, 50000, 1000);
  b.kernel("b", 7, 50000, 80000, 2000);
  b.range("step", 10000, 20000);
  b.kernel("a", 7, 80000, 90000, 11000);
  b.kernel("b", 7, 95000, 100000, 12000);
  const Analysis a = analyze(b.done(), AnalysisOptions{.step_range = "step"});
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].gpu_start_ns, 20000u);
  EXPECT_EQ(a.steps[0].gpu_span_ns, 60000u);
  EXPECT_EQ(a.steps[0].gpu_busy_ns, 60000u);
  EXPECT_EQ(a.steps[1].gpu_start_ns, 80000u);
  EXPECT_EQ(a.steps[1].gpu_span_ns, 20000u);
  EXPECT_EQ(a.steps[1].gpu_busy_ns, 15000u);
  EXPECT_DOUBLE_EQ(a.step_time_median_ns, 10000.0);
  EXPECT_DOUBLE_EQ(a.step_gpu_span_median_ns, 40000.0);
  EXPECT_DOUBLE_EQ(a.step_busy_fraction_of_gpu_span_median, (1.0 + 0.75) / 2);
  EXPECT_EQ(a.steps_gpu_outlasting_host, 2u);
  EXPECT_TRUE(any_contains(a.findings, "In 2 of 2 steps the GPU worked past the end of the step's host range"));
  const std::string text = format_analysis(a);
  EXPECT_NE(text.find("host range 10.00 us, GPU span 40.00 us"), std::string::npos) << text;
  EXPECT_NE(text.find("= 87.5% of the GPU span"), std::string::npos) << text;
  for (double p : percentages(text)) EXPECT_LE(p, 100.0) << text;  // busy 37.5 us per 10 us host step: no 375%
}

TEST(TraceWindow, TheSteadyStateStartsAtTheFirstStepAndTheFindingsSaySo) {
  // Start-up: a kernel, then 1 ms of the GPU idle while the host loads weights; then 10 steps.
  Builder b;
  b.kernel("init", 7, 1000, 2000, 0);
  for (int i = 0; i < 10; ++i) {
    const Nanoseconds t0 = 1000000 + 20000ull * i;
    b.range("step", t0, t0 + 15000);
    b.kernel("work", 7, t0 + 5000, t0 + 15000, t0 + 1000);
  }
  const Trace t = b.done();
  const Analysis whole = analyze(t, AnalysisOptions{.step_range = "step"});
  EXPECT_TRUE(whole.window.empty());
  EXPECT_EQ(whole.idle_waiting_on_host_before_first_step_ns, 1000000u - 2000 + 5000 - 5000);  // 2 us .. 1.005 ms, cut at 1 ms
  EXPECT_TRUE(any_contains(whole.findings, "Over the whole trace (start-up included)"));
  EXPECT_TRUE(any_contains(whole.findings, "came before the first \"step\" step"));
  EXPECT_NE(format_analysis(whole).find("Window: the whole trace, start-up included"), std::string::npos);

  Window steady;
  steady.from_range = "step";
  const Trace s = apply_window(t, steady);
  EXPECT_EQ(s.kernels.size(), 10u);
  const Analysis a = analyze(s, AnalysisOptions{.step_range = "step"});
  EXPECT_NE(a.window.find("from the first NVTX range named \"step\" on"), std::string::npos) << a.window;
  EXPECT_EQ(a.idle_waiting_on_host_before_first_step_ns, 0u);
  EXPECT_FALSE(any_contains(a.findings, "start-up included"));
  EXPECT_LT(a.idle_waiting_on_host_ns, whole.idle_waiting_on_host_ns);
  EXPECT_NE(format_analysis(a).find("Window: from the first NVTX range named"), std::string::npos);

  Window skip;  // the same steady state by time
  skip.skip_seconds = 0.0009;
  EXPECT_EQ(apply_window(t, skip).kernels.size(), 10u);

  Window missing;
  missing.from_range = "nothere";
  const Trace none = apply_window(t, missing);
  EXPECT_TRUE(none.kernels.empty());
  EXPECT_NE(none.window.find("no NVTX range named \"nothere\""), std::string::npos) << none.window;
}

// ---- hostile trace input: reported, never turned into garbage spans ------------------------------

namespace {
std::string one_kernel(const std::string& ts, const std::string& dur) {
  return R"({"traceEvents":[
    {"ph":"X","cat":"kernel","name":"fine","pid":0,"tid":7,"ts":100,"dur":5,"args":{"stream":7}},
    {"ph":"X","cat":"kernel","name":"odd","pid":0,"tid":7,"ts":)" + ts + R"(,"dur":)" + dur + R"(,"args":{"stream":7}}]})";
}

std::string usage_error(const std::string& text) {
  try {
    parse_chrome_json(text, "user.json");
  } catch (const ridge::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(TraceChrome, NegativeDurationsAreDroppedCountedAndReported) {
  const Trace t = parse_chrome_json(one_kernel("200", "-3"), "user.json");
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.strings.at(t.kernels[0].name), "fine");
  ASSERT_EQ(t.rejected_events.size(), 1u);
  EXPECT_EQ(t.rejected_events[0].count, 1u);
  EXPECT_NE(t.rejected_events[0].reason.find("negative duration"), std::string::npos);
  const Analysis a = analyze(t);
  EXPECT_EQ(a.kernel_time_ns, 5000u);
  EXPECT_TRUE(any_contains(a.findings, "1 event dropped: Chrome trace events with a negative duration"));
  // Written again and re-read, the count stays.
  EXPECT_EQ(parse_chrome_json(to_chrome_json(t)).rejected_events, t.rejected_events);
}

TEST(TraceChrome, TimesThatAreNotNumbersOrOutOfRangeAreUsageErrorsNamingFileAndPath) {
  EXPECT_EQ(usage_error(one_kernel("\"soon\"", "1")),
            "user.json: traceEvents[1].ts: expected a number of microseconds, got \"soon\"");
  EXPECT_EQ(usage_error(one_kernel("1", "null")), "user.json: traceEvents[1].dur: expected a number of microseconds, got null");
  EXPECT_NE(usage_error(one_kernel("1e300", "1")).find("user.json: traceEvents[1].ts: 1e+300 us is out of range"),
            std::string::npos);
  EXPECT_NE(usage_error(one_kernel("1", "1e17")).find("traceEvents[1].dur:"), std::string::npos);
  EXPECT_NE(usage_error(one_kernel("18446744073709551615", "1")).find("out of range"), std::string::npos);
  EXPECT_NE(usage_error(one_kernel("-1e300", "1")).find("out of range"), std::string::npos);
  EXPECT_NE(usage_error(one_kernel("1e999", "1")), "(no error)");  // infinite: not valid JSON, or out of range
  EXPECT_NE(usage_error(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","dur":1}]})").find("traceEvents[0].ts: missing"),
            std::string::npos);
  EXPECT_NE(usage_error(R"([{"ph":"X","cat":"kernel","name":"k","ts":{},"dur":1}])").find("user.json: [0].ts"),
            std::string::npos);
  EXPECT_NE(usage_error(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"grid":["a",1,1]}}]})")
                .find("user.json: traceEvents[0]: malformed event"),
            std::string::npos);
  EXPECT_NE(usage_error(R"({"ridge":{"origin_ns":"late"},"traceEvents":[]})").find("user.json: ridge: malformed metadata"),
            std::string::npos);
  EXPECT_NE(usage_error(R"({"records":[]})").find("user.json: not a Chrome trace"), std::string::npos);
  // Events ridge does not read are not checked: a profiler's CPU op with odd fields is skipped.
  EXPECT_NO_THROW(parse_chrome_json(R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","ts":"x","dur":-1}]})"));
}

namespace {
/// What reading `text` gives: the trace written again, or the error.
std::string read_outcome(const std::string& text, bool through_dom) {
  try {
    const Trace t = through_dom ? ridge::detail::parse_chrome_json_through_dom(text, "user.json")
                                : parse_chrome_json(text, "user.json");
    return to_chrome_json(t);
  } catch (const ridge::UsageError& e) {
    return std::string("UsageError: ") + e.what();
  }
}
}  // namespace

TEST(TraceChrome, TheFastReaderReadsEveryEventAsTheDomReaderDoes) {
  // Events are read straight from the parser's tokens, and only unusual ones through a DOM: both
  // ways must give the same trace, or the same error, on every shape of field.
  const std::string usual = R"(,"name":"k","pid":3,"tid":7,"ts":10.5,"dur":2.25)";
  auto event = [](const std::string& cat, const std::string& fields) {
    return R"({"traceEvents":[{"ph":"X","cat":")" + cat + "\"" + fields + "}]}";
  };
  std::vector<std::string> texts = {to_chrome_json(rich_trace()), one_kernel("200", "-3"), one_kernel("1", "1e17")};
  for (const std::string cat : {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cuda_sync",
                                "user_annotation", "cpu_op"}) {
    for (const std::string args : {
             R"()", R"(,"args":{})", R"(,"args":[])", R"(,"args":null)",
             R"(,"args":{"correlation":5,"External id":9,"device":1,"stream":4,"bytes":4096})",
             R"(,"args":{"grid":[4,2,1],"block":[128,1,1],"registers per thread":32,"shared memory":1024,"graph id":2,"queued ns before start":500})",
             R"(,"args":{"grid":[4,2],"block":[128,1,1,1]})", R"(,"args":{"grid":[-1,1,1]})",
             R"(,"args":{"grid":[2147483648,1,1]})", R"(,"args":{"grid":[1.0,1,1]})", R"(,"args":{"grid":{"x":1}})",
             R"(,"args":{"correlation":3.0,"stream":"stream 9","device":"7x"})",
             R"(,"args":{"correlation":1e300})", R"(,"args":{"correlation":"none"})", R"(,"args":{"bytes":true})",
             R"(,"args":{"correlation":18446744073709551615,"External id":-4})",
             R"(,"args":{"correlation":1,"correlation":2})", R"(,"args":{"stream":1},"args":{"stream":2})",
             R"(,"args":{"nested":{"correlation":1,"deep":[[{"a":null}]]},"stream":5})",
         }) {
      texts.push_back(event(cat, usual + args));
    }
    for (const std::string fields : {
             R"(,"name":"k","pid":"4","tid":"stream 11","ts":1)", R"(,"name":"k","pid":1.5,"tid":-2,"ts":1)",
             R"(,"pid":1e30,"ts":1)", R"(,"tid":null,"ts":1)", R"(,"name":7,"ts":1)", R"(,"name":null,"ts":1)",
             R"x(,"name":"Memcpy DtoH (Device -> Pinned)","ts":1,"dur":3)x", R"(,"name":"cudaDeviceSynchronize","ts":1)",
             R"(,"name":"\u00e9 \"quoted\"","ts":1)", R"(,"ts":"1")", R"(,"ts":null)", R"(,"ts":-4,"dur":1)",
             R"(,"ts":18446744073709551615)", R"(,"ts":1,"dur":-1)", R"(,"ts":1,"dur":"2")", R"(,"ts":1,"dur":0)",
             R"(,"ts":1,"ts":2)", R"(,"ts":1,"ph":"i")", R"(,"ts":1,"ph":"I","s":"t")", R"(,"ts":1,"ph":"B")",
             R"(,"ts":1,"ph":5)", R"(,"ts":1,"cat":["kernel"])", R"(,"ts":1,"cat":"kernel","cat":"cpu_op")",
         }) {
      texts.push_back(event(cat, fields));
    }
  }
  // Without "ts", and a bare array of events.
  texts.push_back(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","dur":1}]})");
  texts.push_back(R"([{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"stream":2}},7,[1],{"ph":"X"}])");
  for (const auto& text : texts) EXPECT_EQ(read_outcome(text, false), read_outcome(text, true)) << text;
  // Both ways really were tried: the plain events read, the odd ones failed with the DOM's message.
  EXPECT_EQ(read_outcome(event("kernel", usual + R"(,"args":{"grid":[1,"2",1]})"), false)
                .rfind("UsageError: user.json: traceEvents[0]", 0),
            0u);
  EXPECT_EQ(parse_chrome_json(event("kernel", usual + R"(,"args":{"grid":[4,2,1],"stream":5})")).kernels.at(0).grid.y, 2);
}

TEST(TraceChrome, NegativeTimestampsAreValidAndShiftedToZero) {
  const Trace t = parse_chrome_json(R"({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":-10,"dur":2,"args":{"correlation":5}},
    {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":-4,"dur":3,"args":{"stream":7,"correlation":5}}]})");
  ASSERT_EQ(t.kernels.size(), 1u);
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].start, 0u);
  EXPECT_EQ(t.api_calls[0].end, 2000u);
  EXPECT_EQ(t.kernels[0].start, 6000u);
  EXPECT_EQ(t.kernels[0].end, 9000u);
  EXPECT_TRUE(t.rejected_events.empty());
  EXPECT_DOUBLE_EQ(analyze(t).launch_latency_median_ns, 6000.0);
}

TEST(TraceModel, CuptiRecordTimesAreCompleteMissingOrReversed) {
  using ridge::detail::RecordTimes;
  using ridge::detail::classify_record_times;
  EXPECT_EQ(classify_record_times(100, 200), RecordTimes::complete);
  EXPECT_EQ(classify_record_times(100, 100), RecordTimes::complete);
  EXPECT_EQ(classify_record_times(0, 200), RecordTimes::missing);
  EXPECT_EQ(classify_record_times(100, 0), RecordTimes::missing);
  EXPECT_EQ(classify_record_times(200, 100), RecordTimes::reversed);
  Trace t;
  t.count_rejected(ridge::detail::reversed_gpu_records);
  t.count_rejected(ridge::detail::reversed_host_records, 2);
  t.count_rejected(ridge::detail::reversed_gpu_records, 4);
  ASSERT_EQ(t.rejected_events.size(), 2u);
  EXPECT_EQ(t.rejected_events[0].count, 5u);
  EXPECT_EQ(t.rejected_events[1].count, 2u);
  const Analysis a = analyze(t);
  EXPECT_TRUE(any_contains(a.findings, "5 events dropped: CUPTI kernel, copy or memset records that end before they begin"));
}

// ---- pinned output: analysis JSON and the printed summary, byte for byte --------------------------

#include "golden.hpp"

namespace {
std::string pinned(const Trace& t, const AnalysisOptions& options) {
  const Analysis a = analyze(t, options);
  return format_analysis(a) + "\n" + to_json(a).dump(1) + "\n";
}
}  // namespace

TEST(TraceGolden, AnalysisOfSyntheticTraces) {
  expect_matches_golden("analysis_rich.txt", pinned(rich_trace(), {.top = 10, .step_range = "step"}));

  Builder host_bound;  // gaps, hidden syncs, ranges on two threads, a missing step name
  for (int i = 0; i < 6; ++i) {
    const Nanoseconds t0 = 100000 * i;
    host_bound.range("step", t0, t0 + 90000);
    host_bound.range("attn", t0 + 100, t0 + 40000, tid + 1);
    host_bound.kernel(i % 2 ? "gemm" : "softmax", 7, t0 + 30000, t0 + 35000, t0 + 29000);
    host_bound.kernel("gemm", 8, t0 + 31000, t0 + 33000, t0 + 1000, tid + 1);
    host_bound.copy(MemcpyKind::device_to_host, 4, t0 + 50000, t0 + 51000, "cudaMemcpyAsync");
    host_bound.api("cudaDeviceSynchronize", t0 + 60000, t0 + 70000);
  }
  Kernel orphan;
  orphan.name = host_bound.t.strings.intern("orphan");
  orphan.start = 700000;
  orphan.end = 705000;
  host_bound.t.kernels.push_back(orphan);
  host_bound.t.incomplete_records = 2;
  host_bound.t.window = "skip 0 kernels";
  const Trace t = host_bound.done();
  expect_matches_golden("analysis_host_bound.txt", pinned(t, {.top = 2, .step_range = "step"}));
  expect_matches_golden("analysis_no_step.txt", pinned(t, {.top = 10, .step_range = "nothere"}));
  expect_matches_golden("analysis_empty.txt", pinned(Builder().done(), {}));
  expect_matches_golden("analysis_pytorch.txt",
                        pinned(load_chrome_trace(std::string(RIDGE_SOURCE_DIR) + "/tests/cli/data/tiny_pytorch_trace.json"),
                               {.top = 10, .step_range = "step"}));
}

// ---- trace_program / analyze_trace_file: the library behind `ridge trace` ---------------------------
// A shell stands in for the traced program: the CUDA driver never loads the injection library
// into it, so it writes (or does not write) the summary itself, as libridge_inject.so would.

namespace {
ProgramTraceOptions shell(const std::string& script) {
  ProgramTraceOptions o;
  o.command = {"sh", "-c", script};
  o.output = "";
  o.inject_library = "/nonexistent/libridge_inject.so";  // never loaded: sh runs no CUDA
  return o;
}
}  // namespace

TEST(TraceProgram, OptionsThatContradictEachOtherAreUsageErrors) {
  ProgramTraceOptions o;
  EXPECT_NO_THROW(o.validate());
  o.collection.nvtx = false;
  o.analysis.step_range = "step";
  EXPECT_THROW(o.validate(), ridge::UsageError);
  o = {};
  o.collection.api_calls = ApiCalls::none;
  o.window.profiler_range = true;
  EXPECT_THROW(o.validate(), ridge::UsageError);
  EXPECT_THROW(api_calls_from_string("everything"), ridge::UsageError);
  o = {};
  o.collection.buffer_bytes = 0;
  EXPECT_THROW(o.validate(), ridge::UsageError);
  o.collection.buffer_bytes = CollectionOptions::max_buffer_bytes + 1;
  EXPECT_THROW(o.validate(), ridge::UsageError);
  EXPECT_THROW(trace_program(ProgramTraceOptions{}), ridge::UsageError);  // nothing to trace
  auto missing = shell("");
  missing.command = {"/no/such/program"};
  EXPECT_THROW(trace_program(missing), ridge::UsageError);
}

TEST(CollectionOptions, TheInjectionLibraryReadsBackWhatTraceProgramWrites) {
  namespace env = ridge::detail::inject_env;
  CollectionOptions o = CollectionOptions::for_program();
  EXPECT_FALSE(o.synchronization);  // a whole program: CUPTI must not hook every runtime call
  o.api_calls = ApiCalls::most;
  o.launch_calls = false;
  o.memcpy = false;
  o.buffer_bytes = std::size_t{4} << 20;
  o.counters = CounterOptions{};
  o.counters->steps = std::pair<std::uint64_t, std::uint64_t>{2, 4};
  o.counters->step_range = "step";
  o.schedule = TraceSchedule{};
  o.schedule->wait = 9;
  o.schedule->step_range = "step";
  const auto settings = env::collection_environment(o);
  for (const auto& [name, value] : settings) ASSERT_EQ(::setenv(name.c_str(), value.c_str(), 1), 0);
  const CollectionOptions back = env::collection_from_environment();
  EXPECT_EQ(back.api_calls, ApiCalls::most);
  EXPECT_FALSE(back.synchronization);
  EXPECT_FALSE(back.launch_calls);
  EXPECT_TRUE(back.nvtx);
  EXPECT_FALSE(back.memcpy);
  EXPECT_EQ(back.buffer_bytes, o.buffer_bytes);
  ASSERT_TRUE(back.counters && back.schedule);
  EXPECT_EQ(to_json(*back.counters), to_json(*o.counters));
  EXPECT_EQ(to_json(*back.schedule), to_json(*o.schedule));
  // Malformed values are usage errors, not silent defaults.
  ::setenv(env::api, "everything", 1);
  EXPECT_THROW(env::collection_from_environment(), ridge::UsageError);
  ::setenv(env::api, "most", 1);
  ::setenv(env::buffer_bytes, "lots", 1);
  EXPECT_THROW(env::collection_from_environment(), ridge::UsageError);
  // Nothing set: a traced program's defaults.
  for (const auto& setting : settings) ::unsetenv(setting.first.c_str());
  const CollectionOptions defaults = env::collection_from_environment();
  EXPECT_EQ(defaults.api_calls, ApiCalls::selected);
  EXPECT_EQ(defaults.buffer_bytes, CollectionOptions::for_program().buffer_bytes);
  EXPECT_FALSE(defaults.counters || defaults.schedule);
}

TEST(TraceProgram, AProgramThatLeavesNoTraceKeepsItsExitCode) {
  const ProgramTrace failed = trace_program(shell("exit 5"));
  EXPECT_EQ(failed.program.exit_code, 5);
  EXPECT_EQ(failed.program.signal, 0);
  EXPECT_NE(failed.error.find("no trace was written"), std::string::npos);
  EXPECT_EQ(failed.exit_code(), 5);
  // Exit code 0 but no trace: tracing failed, a runtime error.
  EXPECT_EQ(trace_program(shell("true")).exit_code(), 1);
  const ProgramTrace killed = trace_program(shell("kill -TERM $$"));
  EXPECT_EQ(killed.program.signal, 15);
  EXPECT_EQ(killed.program.exit_code, 128 + 15);
}

TEST(TraceProgram, ReadsTheSummaryTheProgramWrote) {
  // The options reach the program as the environment libridge_inject.so reads (inject_env.hpp).
  auto o = shell(
      "printf '%s' '{\"kernel_count\": 3, \"dropped_records\": 2, \"events\": 42, \"write_seconds\": 0.5, "
      "\"end\": \"signal\", \"collector_stats\": {\"profiler_gated\": true, \"profiler_windows\": 2}}' "
      "> \"$RIDGE_TRACE_SUMMARY\"; test \"$RIDGE_TRACE_API\" = all && test \"$RIDGE_TRACE_SYNC\" = 0 && "
      "test \"$RIDGE_TRACE_BUFFER_BYTES\" = 33554432 && "
      "test \"$RIDGE_TRACE_TOP\" = 3 && test -z \"$NVTX_INJECTION64_PATH\" && exit 7");
  o.collection.api_calls = ApiCalls::all;
  o.analysis.top = 3;
  o.collection.nvtx = false;
  const ProgramTrace ok = trace_program(o);
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_EQ(ok.program.exit_code, 7);
  EXPECT_EQ(ok.exit_code(), 7);
  EXPECT_EQ(ok.analysis.kernel_count, 3u);
  EXPECT_EQ(ok.analysis.dropped_records, 2u);
  EXPECT_EQ(ok.events, 42u);
  EXPECT_EQ(ok.end, "signal");
  EXPECT_TRUE(ok.profiler_gated);
  EXPECT_EQ(ok.profiler_windows, 2u);
  EXPECT_EQ(ok.summary["program"]["exit_code"], 7);
  EXPECT_EQ(ok.summary["program"]["command"][0], "sh");
}

TEST(TraceProgram, AnErrorSummaryMeansTracingFailedInsideTheProgram) {
  const ProgramTrace t = trace_program(shell("printf '{\"error\": \"no CUPTI\"}' > \"$RIDGE_TRACE_SUMMARY\""));
  EXPECT_EQ(t.error, "tracing failed inside the program: no CUPTI");
  EXPECT_EQ(t.exit_code(), 1);
  const ProgramTrace garbled = trace_program(shell("printf 'not json' > \"$RIDGE_TRACE_SUMMARY\"; exit 3"));
  ASSERT_EQ(garbled.notes.size(), 1u);
  EXPECT_NE(garbled.notes[0].find("unreadable"), std::string::npos);
  EXPECT_EQ(garbled.exit_code(), 3);
}

// ---- signals: `ridge trace` forwarding them, the injection library flushing on them -----------

namespace {
/// Sends `sig` to this process once the program has created `ready` (so it runs, with its trap set).
std::thread signal_when_ready(const std::filesystem::path& ready, int sig) {
  return std::thread([ready, sig] {
    for (int i = 0; i < 1000 && !std::filesystem::exists(ready); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (std::filesystem::exists(ready)) ::kill(::getpid(), sig);  // else the test fails on its own
  });
}

/// A program that, like one running libridge_inject.so, writes its summary when SIGTERM arrives
/// and then dies of it (or exits normally, when `then` says so).
std::string trap_term(const std::filesystem::path& ready, const std::string& summary, const std::string& then) {
  return fmt::format("trap 'printf %s \"{}\" > \"$RIDGE_TRACE_SUMMARY\"; {}' TERM; : > '{}'; "
                     "i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 9",
                     summary, then, ready.string());
}

std::filesystem::path fresh_ready_file(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / fmt::format("ridge-{}-{}", name, ::getpid());
  std::filesystem::remove(path);
  return path;
}
}  // namespace

TEST(TraceSignals, FatalSignalsAreFlushedAndRaisedAgainEvenWhenTheProgramHandlesThem) {
  using ridge::detail::action_for;
  using ridge::detail::PreviousHandler;
  using ridge::detail::SignalAction;
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL})
    for (auto previous : {PreviousHandler::default_action, PreviousHandler::function, PreviousHandler::ignored})
      EXPECT_EQ(action_for(sig, previous), SignalAction::flush_and_reraise) << sig;
  EXPECT_EQ(action_for(SIGINT, PreviousHandler::function), SignalAction::chain);  // Python's KeyboardInterrupt
  EXPECT_EQ(action_for(SIGTERM, PreviousHandler::ignored), SignalAction::ignore);
  EXPECT_EQ(action_for(SIGTERM, PreviousHandler::default_action), SignalAction::flush_and_reraise);
  EXPECT_EQ(action_for(SIGINT, PreviousHandler::default_action), SignalAction::flush_and_reraise);
  EXPECT_STREQ(ridge::detail::end_reason(SIGSEGV), "crash");
  EXPECT_STREQ(ridge::detail::end_reason(SIGABRT), "crash");
  EXPECT_STREQ(ridge::detail::end_reason(SIGTERM), "signal");
}

TEST(TraceSignals, ACtrlCAtTheTerminalIsForwardedOnlyToAProgramInAGroupOfItsOwn) {
  using ridge::detail::forward_to_program;
  EXPECT_TRUE(forward_to_program(SIGTERM, false, false));  // kill <ridge>: the program never saw it
  EXPECT_TRUE(forward_to_program(SIGINT, false, false));
  EXPECT_FALSE(forward_to_program(SIGINT, true, false));  // the terminal sent it to the program already
  EXPECT_TRUE(forward_to_program(SIGINT, true, true));    // ... unless the program left our group
  EXPECT_TRUE(forward_to_program(SIGHUP, false, false));
  EXPECT_FALSE(forward_to_program(SIGUSR1, false, false));
  EXPECT_FALSE(forward_to_program(SIGCHLD, false, false));
}

TEST(TraceSignals, APartialTraceSaysWhyItEndedEarly) {
  using ridge::detail::partial_trace_note;
  EXPECT_EQ(partial_trace_note("exit", 0, 0), "");
  const std::string crash = partial_trace_note("crash", SIGSEGV, 0);
  EXPECT_NE(crash.find("crashed"), std::string::npos) << crash;
  EXPECT_NE(crash.find(fmt::format("signal {}", SIGSEGV)), std::string::npos) << crash;
  EXPECT_NE(crash.find("until then"), std::string::npos) << crash;
  const std::string interrupted = partial_trace_note("signal", SIGTERM, SIGTERM);
  EXPECT_NE(interrupted.find("interrupted"), std::string::npos) << interrupted;
  EXPECT_NE(interrupted.find("passed signal 15"), std::string::npos) << interrupted;
  const std::string handled = partial_trace_note("exit", 0, SIGINT);
  EXPECT_NE(handled.find("passed signal 2"), std::string::npos) << handled;
  EXPECT_NE(handled.find("exited"), std::string::npos) << handled;
}

TEST(TraceProgram, ForwardsSigtermAndReadsWhatTheProgramWroteBeforeDying) {
  const auto ready = fresh_ready_file("forward-term");
  std::thread sender = signal_when_ready(ready, SIGTERM);
  const ProgramTrace t = trace_program(shell(trap_term(
      ready, R"({\"kernel_count\": 2, \"end\": \"signal\", \"end_signal\": 15})", "trap - TERM; kill -TERM $$")));
  sender.join();
  std::filesystem::remove(ready);
  ASSERT_TRUE(t.error.empty()) << t.error;
  EXPECT_EQ(t.program.forwarded_signal, SIGTERM);
  EXPECT_EQ(t.program.signal, SIGTERM);
  EXPECT_EQ(t.exit_code(), 128 + SIGTERM);
  EXPECT_EQ(t.analysis.kernel_count, 2u);
  EXPECT_EQ(t.end, "signal");
  EXPECT_EQ(t.end_signal, SIGTERM);
  EXPECT_EQ(t.summary["program"]["forwarded_signal"], SIGTERM);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("interrupted by signal 15"), std::string::npos) << t.notes[0];
  // Our own disposition is back: SIGTERM would end this test process again.
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(TraceProgram, AProgramThatHandlesTheForwardedSignalKeepsItsExitCode) {
  const auto ready = fresh_ready_file("forward-handled");
  std::thread sender = signal_when_ready(ready, SIGTERM);
  const ProgramTrace t =
      trace_program(shell(trap_term(ready, R"({\"kernel_count\": 1, \"end\": \"exit\"})", "exit 0")));
  sender.join();
  std::filesystem::remove(ready);
  ASSERT_TRUE(t.error.empty()) << t.error;
  EXPECT_EQ(t.program.forwarded_signal, SIGTERM);
  EXPECT_EQ(t.program.signal, 0);
  EXPECT_EQ(t.exit_code(), 0);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("passed signal 15"), std::string::npos) << t.notes[0];
}

TEST(TraceProgram, ForwardsToTheWholeGroupOfAProgramThatLeadsOne) {
  // setsid makes the shell a group leader; its child gets the signal too, so the trap runs at once.
  // The child itself says it is ready: a signal sent between the shell's fork and its child's exec
  // would otherwise reach a child still running the shell's trap, and be lost with that exec.
  const auto ready = fresh_ready_file("forward-group");
  std::thread sender = signal_when_ready(ready, SIGINT);
  auto o = shell(fmt::format("trap 'exit 4' INT; sh -c \": > '{}'; exec sleep 10\"; exit 9", ready.string()));
  o.command.insert(o.command.begin(), "setsid");
  const auto start = std::chrono::steady_clock::now();
  const ProgramTrace t = trace_program(o);
  sender.join();
  std::filesystem::remove(ready);
  EXPECT_EQ(t.program.forwarded_signal, SIGINT);
  EXPECT_EQ(t.program.exit_code, 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));  // sleep was interrupted
}

TEST(TraceProgram, ASignalIgnoredByTheCallerStaysIgnoredForTheProgram) {
  // nohup ridge trace ...: a hangup must not end the program.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGHUP, &ignore, &previous);
  const ProgramTrace t = trace_program(shell("kill -HUP $$; exit 3"));
  struct sigaction after {};
  sigaction(SIGHUP, &previous, &after);
  EXPECT_EQ(t.program.exit_code, 3);
  EXPECT_EQ(t.program.signal, 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN) << "trace_program must put the caller's disposition back";
}

TEST(TraceProgram, AnalyzesASavedTraceThroughAWindow) {
  const std::string file = std::string(RIDGE_SOURCE_DIR) + "/tests/cli/data/tiny_pytorch_trace.json";
  const TraceFileAnalysis all = analyze_trace_file(file, {}, {.top = 10, .step_range = "step"});
  EXPECT_EQ(all.file, file);
  EXPECT_EQ(all.analysis.kernels_per_step_median, 2);
  const nlohmann::json j = to_json(all);
  EXPECT_EQ(j["trace_file"], file);
  EXPECT_EQ(j["command"], all.command);
  EXPECT_EQ(j["kernel_count"], all.analysis.kernel_count) << "the analysis' own fields stay";
  Window skip;
  skip.skip_kernels = 1;
  const TraceFileAnalysis later = analyze_trace_file(file, skip);
  EXPECT_LT(later.analysis.kernel_count, all.analysis.kernel_count);
  EXPECT_FALSE(later.analysis.window.empty());
  EXPECT_THROW(analyze_trace_file("/no/such/trace.json"), ridge::UsageError);
}
