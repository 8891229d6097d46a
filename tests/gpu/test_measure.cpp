// GPU tests of the timers against a calibration kernel of known duration.
#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

#include "gpu_test_util.hpp"
#include "ridge/detail/gemm.hpp"
#include "ridge/errors.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"
#include "ridge/timing.hpp"
#include "measure/cuda/probes.hpp"

using namespace ridge;
using ridge::detail::Gemm;

TEST(Measure, WallWorksWithoutGpuWork) {
  // CPU-only work: measure_wall must time it on any machine.
  auto m = measure_wall([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); },
                        WallOptions{.samples = 5, .warmup = 1, .cuda = false});
  EXPECT_EQ(m.method, Method::cpu_wall);
  EXPECT_EQ(m.samples_ms.size(), 5u);
  EXPECT_GE(m.summary.median, 2.0);
  EXPECT_LT(m.summary.median, 20.0);
}

// The dispatcher refuses the methods no timer produces before it runs anything.
TEST(Measure, DispatcherRefusesNonTimers) {
  int calls = 0;
  for (Method m : {Method::cupti_trace, Method::none}) {
    try {
      measure(m, [&](cuda_stream) { ++calls; });
      ADD_FAILURE() << to_string(m) << " was timed";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("method: " + to_string(m) + " is not a timer", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(calls, 0);
}

TEST(Measure, EventsMatchOneMillisecondCalibration) {
  RIDGE_REQUIRE_GPU();
  const double ns = 1e6;
  auto m = measure_cuda([&](cuda_stream s) { launch_busy_wait(s, ns); }, CudaOptions{.warmup = 3, .samples = 30});
  EXPECT_EQ(m.method, Method::cuda_events);
  EXPECT_NEAR(m.summary.median, 1.0, 0.02) << "events should read the 1 ms busy-wait within 2%";
}

TEST(Measure, LaunchFreeMethodsMatchFiveMicroseconds) {
  RIDGE_REQUIRE_GPU();
  const double ns = 5000;
  auto work = [&](cuda_stream s) { launch_busy_wait(s, ns); };
  auto spin = measure_spin(work, CudaOptions{.warmup = 5, .samples = 50, .repeats = 20});
  auto spin_one = measure_spin(work, CudaOptions{.warmup = 5, .samples = 50, .repeats = 1});
  auto graph = measure_graph(work, CudaOptions{.warmup = 5, .samples = 50, .repeats = 20});
  auto events = measure_cuda(work, CudaOptions{.warmup = 5, .samples = 50, .repeats = 1});
  std::printf("5 us busy-wait: events %.2f us, spin x20 %.2f us, spin x1 %.2f us, graph x20 %.2f us\n",
              events.summary.median * 1e3, spin.summary.median * 1e3, spin_one.summary.median * 1e3,
              graph.summary.median * 1e3);
  EXPECT_EQ(spin.method, Method::spin_hold);
  EXPECT_EQ(graph.method, Method::graph_replay);
  // Queued launches still pay the GPU front end's per-kernel cost (~1.4 us on an H200, measured);
  // the graph removes most of it.
  EXPECT_NEAR(spin.summary.median * 1e3, 5.0, 2.0);
  EXPECT_NEAR(graph.summary.median * 1e3, 5.0, 1.0);
  // Per-sample events after a sync include the host's launch latency.
  EXPECT_GT(events.summary.median, spin_one.summary.median);
  // One call per event pair still pays the GPU front end's per-launch cost, but no host latency.
  EXPECT_LT(spin_one.summary.median * 1e3, 5.0 + 4.0);
}

TEST(Measure, NaiveVsSynchronizedOnLargeMatmul) {
  RIDGE_REQUIRE_GPU();
  Gemm gemm({4096, 4096, 4096}, DType::fp32);
  ASSERT_TRUE(gemm.verify().passed);
  auto naive = measure_naive([&] { gemm.run(nullptr); }, 10, 3);
  auto wall = measure_wall([&] { gemm.run(nullptr); }, WallOptions{.samples = 10, .warmup = 3, .cuda = true});
  EXPECT_EQ(wall.method, Method::wall_sync);
  EXPECT_GT(wall.summary.median / naive.summary.median, 10.0);
}

TEST(Measure, AdaptiveStopConverges) {
  RIDGE_REQUIRE_GPU();
  auto m = measure_cuda([&](cuda_stream s) { launch_busy_wait(s, 100000); },
                        CudaOptions{.warmup = 2, .samples = 10, .target_ci_relative = 0.01, .time_budget_s = 5});
  EXPECT_EQ(m.stop_reason, "converged");
  EXPECT_LE(m.summary.median_ci_relative(), 0.01);
}

TEST(Measure, ColdCacheFlushIsRecorded) {
  RIDGE_REQUIRE_GPU();
  auto m = measure_spin([&](cuda_stream s) { launch_busy_wait(s, 10000); },
                        CudaOptions{.warmup = 1, .samples = 5, .flush_l2 = true});
  EXPECT_TRUE(m.l2_flushed);
  // One call per sample (the flush sits between samples): 10 us plus the per-launch front-end cost.
  EXPECT_EQ(m.repeats_per_sample, 1);
  EXPECT_GE(m.summary.median * 1e3, 9.5);
  EXPECT_LT(m.summary.median * 1e3, 15.0);
}

TEST(Measure, GraphCaptureOfUncapturableWorkFailsClearly) {
  RIDGE_REQUIRE_GPU();
  // Synchronizing inside captured work is illegal: the error must say what to do.
  try {
    measure_graph([&](cuda_stream s) {
      launch_busy_wait(s, 1000);
      if (cudaStreamSynchronize(s) != cudaSuccess) throw Error("sync inside capture failed");
    }, CudaOptions{.warmup = 0, .samples = 2, .repeats = 2});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    SUCCEED() << e.what();
  }
  cudaGetLastError();
}

TEST(Measure, WorkThatThrowsWhileTheStreamIsHeldReleasesIt) {
  RIDGE_REQUIRE_GPU();
  // Calls 1-2 warm up and call 3 is counted on a scratch stream; call 12 falls inside the first
  // held batch. The error must come back with the stream released at once (not after the 60 s
  // spin timeout), and the stream must work afterwards.
  int calls = 0;
  auto flaky = [&](cuda_stream s) {
    if (++calls == 12) throw Error("failing on purpose, call 12");
    launch_busy_wait(s, 2000);
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(measure_spin(flaky, CudaOptions{.warmup = 2, .samples = 50, .repeats = 1, .spin_timeout_s = 60}), Error);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(calls, 12);
  EXPECT_LT(took_s, 30.0) << "the held stream waited for its spin timeout";
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  const auto after = measure_spin([&](cuda_stream s) { launch_busy_wait(s, 5000); },
                                  CudaOptions{.warmup = 1, .samples = 10, .repeats = 1});
  EXPECT_NEAR(after.summary.median * 1e3, 5.0, 4.0);
}

TEST(Measure, BadOptionsAreUsageErrors) {
  EXPECT_THROW(measure_cuda([](cuda_stream) {}, CudaOptions{.samples = 0}), UsageError);
  EXPECT_THROW(measure_wall([] {}, WallOptions{.samples = 0}), UsageError);
}

TEST(Gemm, EveryDtypeVerifies) {
  RIDGE_REQUIRE_GPU();
  for (DType t : {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3}) {
    for (std::int64_t n : {128, 1008, 2048}) {
      Gemm g({n, n + 16, n + 32}, t);
      const auto check = g.verify();
      EXPECT_TRUE(check.passed) << to_string(t) << " n=" << n << ": " << check.summary();
      if (t == DType::fp8_e4m3) continue;
      Gemm torch_like({n, n + 16, n + 32}, t, 3, GemmBackend::cublas_rowmajor);
      const auto check2 = torch_like.verify();
      EXPECT_TRUE(check2.passed) << "cublas row-major " << to_string(t) << " n=" << n << ": " << check2.summary();
    }
  }
}


// The three-clocks exercise as a library call, and its test seam: an injected slowdown shows up
// in the events reading and is labelled on every record it touches.
TEST(TimingDemo, InjectedSlowdownIsMeasuredAndLabelled) {
  RIDGE_REQUIRE_GPU();
  TimingDemoOptions o;
  o.n = 1024;
  o.small_n = 128;
  o.samples = 5;
  o.warmup = 2;
  const TimingDemo plain = run_timing_demo(o);
  o.inject_slowdown_us = 500;
  const TimingDemo slowed = run_timing_demo(o);
  ASSERT_EQ(plain.records().size(), 6u);
  const double plain_ms = plain.large.find(Method::cuda_events)->summary.median;
  const double slowed_ms = slowed.large.find(Method::cuda_events)->summary.median;
  EXPECT_GT(slowed_ms - plain_ms, 0.45) << plain_ms << " ms vs " << slowed_ms << " ms";
  for (const auto& m : slowed.large.methods) {
    ASSERT_FALSE(m.record.warnings.empty());
    EXPECT_NE(m.record.warnings.front().find("inject_slowdown_us"), std::string::npos);
  }
  for (const auto& m : plain.large.methods)
    for (const auto& w : m.record.warnings) EXPECT_EQ(w.find("inject"), std::string::npos);
  EXPECT_GT(plain.wall_over_naive, 1);
  EXPECT_GT(plain.launch_overhead_ms, -1e-3);
}

// Interleaved sampling on the GPU: events, spin hold and graph replay of a 20 us busy-wait take
// their samples in turns; the launch-free ones read the calibration, the graph keeps one repeat
// count, and where NVML reads the clock every sample has one.
TEST(Measure, InterleavedMethodsEachReadTheCalibration) {
  RIDGE_REQUIRE_GPU();
  auto work = [](cuda_stream s) { launch_busy_wait(s, 20000); };
  int graph_repeats = 0;
  const std::vector<InterleavedMethod> methods{
      {"events", [&](int samples, int warmup) {
         return measure_cuda(work, CudaOptions{.warmup = warmup, .samples = samples, .repeats = 1});
       }},
      {"spin", [&](int samples, int warmup) {
         return measure_spin(work, CudaOptions{.warmup = warmup, .samples = samples, .repeats = 1});
       }},
      {"graph", [&](int samples, int warmup) {
         Measurement m = measure_graph(work, CudaOptions{.warmup = warmup, .samples = samples, .repeats = graph_repeats});
         graph_repeats = m.repeats_per_sample;
         return m;
       }}};
  InterleaveOptions o;
  o.samples = 15;
  o.warmup = 3;
  o.read_sm_mhz = [] {
    const ClockReading c = read_clocks(0);
    return c.source == "nvml" ? c.sm_mhz : -1.0;
  };
  const auto measured = measure_interleaved(methods, o);
  ASSERT_EQ(measured.size(), 3u);
  EXPECT_EQ(measured[0].method, Method::cuda_events);
  EXPECT_EQ(measured[1].method, Method::spin_hold);
  EXPECT_EQ(measured[2].method, Method::graph_replay);
  EXPECT_GT(measured[2].repeats_per_sample, 1);
  for (const auto& m : measured) {
    EXPECT_EQ(m.samples_ms.size(), 15u);
    // Per-sample events also carry the host's launch latency; the launch-free methods read 20 us.
    if (m.method == Method::cuda_events)
      EXPECT_GT(m.summary.median, 0.019);
    else
      EXPECT_NEAR(m.summary.median, 0.020, 0.004) << to_string(m.method);
    if (read_clocks(0).source == "nvml") {
      EXPECT_EQ(m.sample_sm_mhz.size(), 15u);
    }
  }
}
