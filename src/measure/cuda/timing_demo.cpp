// The GPU side of the three-clocks timing exercise: both matmuls checked, then timed by each method
// while a ClockMonitor watches the clocks. The comparison is CPU code (src/measure/timing_demo.cpp).
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "measure/cuda/probes.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/sweep.hpp"
#include "ridge/timing.hpp"

namespace ridge {

namespace {

GemmCheck checked(Gemm& gemm) {
  GemmCheck check = gemm.verify();
  if (!check.passed)
    throw VerificationError(fmt::format("the {} GEMM {}x{}x{} gave wrong results: {}", to_string(gemm.dtype()),
                                        gemm.shape().m, gemm.shape().n, gemm.shape().k, check.summary()));
  return check;
}

TimingCase describe_case(const Gemm& gemm, const GemmCheck& check) {
  TimingCase c;
  c.shape = gemm.shape();
  c.dtype = gemm.dtype();
  c.algorithm = gemm.algorithm();
  c.check = check.summary();
  c.flops = gemm.flops();
  return c;
}

// Runs one measurement while a ClockMonitor watches the clocks, and makes its record.
template <typename F>
TimedMethod timed(int device, Gemm& gemm, const GemmCheck& check, const char* which, const ClockReading& start,
                  std::string meaning, F&& measure_fn) {
  ClockMonitor monitor(device);
  const Measurement m = measure_fn();
  const ClockActivity clocks = monitor.stop();
  nlohmann::json params = gemm_params(gemm.shape());
  params[std::string(param_key::timing_case)] = which;
  Record r = to_record(m, "timing", to_string(gemm.dtype()), params, gemm.bytes(), gemm.flops());
  r.extra["clocks_during"] = clocks.to_json();
  r.verification = check.passed ? "passed" : "failed";
  r.extra["algorithm"] = gemm.algorithm();
  r.extra["check"] = check.summary();
  r.extra["meaning"] = describe(m.method);
  r.clocks_start = start;
  r.clocks_end = read_clocks(device);
  return TimedMethod{std::move(r), std::move(meaning)};
}

}  // namespace

TimingDemo run_timing_demo(const TimingDemoOptions& o, const std::function<void(const std::string&)>& on_status) {
  o.validate();
  const DType dtype = dtype_from_string(o.dtype);
  const DType small_dtype = dtype_from_string(o.small_dtype);
  const GemmBackend backend = gemm_backend_from_string(o.backend);
  require_gpu(o.device);
  auto status = [&](const std::string& line) {
    if (on_status) on_status(line);
  };
  TimingDemo demo;
  demo.options = o;

  // --- the large case: naive vs synchronized wall clock vs events ---------------------------
  Gemm gemm({o.n, o.n, o.n}, dtype, 1, backend);
  const GemmCheck check = checked(gemm);
  demo.large = describe_case(gemm, check);
  const double slowdown_ns = o.inject_slowdown_us * 1e3;
  auto run = [&](cuda_stream s) {
    gemm.run(s);
    if (slowdown_ns > 0) launch_busy_wait(s, slowdown_ns);
  };
  status("timing: unsynchronized wall clock");
  ClockReading start = read_clocks(o.device);
  demo.large.methods.push_back(timed(o.device, gemm, check, "large", start,
                                     "WRONG: the time to queue the launch; the GPU ran the work later",
                                     [&] { return measure_naive([&] { run(nullptr); }, o.samples, o.warmup); }));
  status("timing: synchronized wall clock");
  demo.large.methods.push_back(timed(o.device, gemm, check, "large", start,
                                     "synchronized before and after: what the caller waits", [&] {
                                       return measure_wall([&] { run(nullptr); }, WallOptions{o.samples, o.warmup, true});
                                     }));
  status("timing: CUDA events");
  demo.large.methods.push_back(timed(o.device, gemm, check, "large", start,
                                     "GPU clock between two events: the kernel's time", [&] {
                                       return measure_cuda(run, CudaOptions{.warmup = o.warmup, .samples = o.samples,
                                                                            .repeats = o.repeats});
                                     }));

  // --- the small case: per-sample events vs the launch-free methods --------------------------
  Gemm small({o.small_n, o.small_n, o.small_n}, small_dtype, 7, backend);
  const GemmCheck small_check = checked(small);
  demo.small = describe_case(small, small_check);
  auto run_small = [&](cuda_stream s) { small.run(s); };
  status("timing: small case");
  start = read_clocks(o.device);
  const int small_samples = std::max(o.samples, 50);
  demo.small.methods.push_back(timed(o.device, small, small_check, "small", start,
                                     "per-sample events: include the host's launch latency", [&] {
                                       return measure_cuda(run_small, CudaOptions{.warmup = o.warmup,
                                                                                  .samples = small_samples, .repeats = 1});
                                     }));
  demo.small.methods.push_back(timed(o.device, small, small_check, "small", start,
                                     "stream held by a spin kernel while the sample is queued: GPU time only", [&] {
                                       return measure_spin(run_small, CudaOptions{.warmup = o.warmup,
                                                                                  .samples = small_samples, .repeats = 1});
                                     }));
  demo.small.methods.push_back(timed(o.device, small, small_check, "small", start, "", [&] {
    return measure_graph(run_small, CudaOptions{.warmup = o.warmup, .samples = small_samples, .repeats = 0});
  }));
  auto& graph = demo.small.methods.back();
  graph.meaning = fmt::format("{} calls in one CUDA graph: GPU time per call", graph.record.repeats_per_sample);
  status("");
  analyze_timing_demo(demo);
  return demo;
}

}  // namespace ridge
