// The GPU side of the three-clocks timing exercise: both matmuls checked, then timed by each method
// while a ClockMonitor watches the clocks. The comparison is CPU code (src/measure/timing_demo.cpp).
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "measure/cuda/probes.hpp"
#include "ridge/detail/gemm.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/sweep.hpp"
#include "ridge/timing.hpp"

namespace ridge {

namespace {

detail::GemmCheck checked(detail::Gemm& gemm) {
  detail::GemmCheck check = gemm.verify();
  if (!check.passed)
    throw VerificationError(fmt::format("the {} GEMM {}x{}x{} gave wrong results: {}", to_string(gemm.dtype()),
                                        gemm.shape().m, gemm.shape().n, gemm.shape().k, check.summary()));
  return check;
}

TimingCase describe_case(const detail::Gemm& gemm, const detail::GemmCheck& check) {
  TimingCase c;
  c.shape = gemm.shape();
  c.dtype = gemm.dtype();
  c.algorithm = gemm.algorithm();
  c.check = check.summary();
  c.flops = gemm.flops();
  return c;
}

// One row of a table before it is timed: the method and what its number means.
struct RowPlan {
  InterleavedMethod method;
  std::string meaning;
};

double nvml_sm_mhz(int device) {
  const ClockReading c = read_clocks(device);
  return c.source == "nvml" ? c.sm_mhz : -1.0;
}

// Times a case's rows interleaved (one sample of each in turn, the SM clock read between turns)
// while a ClockMonitor watches the clocks, and makes their records.
std::vector<TimedMethod> timed_interleaved(int device, detail::Gemm& gemm, const detail::GemmCheck& check, const char* which,
                                           std::vector<RowPlan> plan, int samples, int warmup) {
  std::vector<InterleavedMethod> methods;
  for (const auto& row : plan) methods.push_back(row.method);
  const ClockReading start = read_clocks(device);
  ClockMonitor monitor(device);
  InterleaveOptions options;
  options.samples = samples;
  options.warmup = warmup;
  options.read_sm_mhz = [device] { return nvml_sm_mhz(device); };
  const std::vector<Measurement> measured = measure_interleaved(methods, options);
  const ClockActivity clocks = monitor.stop();
  const ClockReading end = read_clocks(device);
  std::vector<TimedMethod> rows;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const Measurement& m = measured[i];
    nlohmann::json params = gemm_params(gemm.shape());
    params[param_key::timing_case] = which;
    Record r = to_record(m, "timing", gemm.dtype(), params, gemm.bytes(), gemm.flops());
    extra_key::clocks_during.set(r, clocks.to_json());
    extra_key::interleaved.set(r, true);
    r.verification = check.passed ? "passed" : "failed";
    extra_key::algorithm.set(r, gemm.algorithm());
    extra_key::check.set(r, check.summary());
    extra_key::meaning.set(r, describe(m.method));
    r.clocks_start = start;
    r.clocks_end = end;
    rows.push_back(TimedMethod{std::move(r), std::move(plan[i].meaning), {}});
  }
  return rows;
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
  demo.rated_sm_mhz = describe_device(o.device).max_sm_clock_mhz;

  // --- the large case: naive vs synchronized wall clock vs events ---------------------------
  detail::Gemm gemm({o.n, o.n, o.n}, dtype, 1, backend);
  const detail::GemmCheck check = checked(gemm);
  demo.large = describe_case(gemm, check);
  const double slowdown_ns = o.inject_slowdown_us * 1e3;
  auto run = [&](cuda_stream s) {
    gemm.run(s);
    if (slowdown_ns > 0) launch_busy_wait(s, slowdown_ns);
  };
  status("timing: unsynchronized wall clock, synchronized wall clock and CUDA events, interleaved");
  std::vector<RowPlan> large_rows;
  large_rows.push_back({{"wall_naive", [&](int samples, int warmup) {
                           return measure_naive([&] { run(nullptr); }, samples, warmup);
                         }},
                        "WRONG: the time to queue the launch; the GPU ran the work later"});
  large_rows.push_back({{"wall_sync", [&](int samples, int warmup) {
                           return measure_wall([&] { run(nullptr); }, WallOptions{samples, warmup, true});
                         }},
                        "synchronized before and after: what the caller waits"});
  large_rows.push_back({{"cuda_events", [&](int samples, int warmup) {
                           return measure_cuda(run, CudaOptions{.warmup = warmup, .samples = samples,
                                                                .repeats = o.repeats});
                         }},
                        "GPU clock between two events: the kernel's time"});
  demo.large.methods = timed_interleaved(o.device, gemm, check, "large", std::move(large_rows), o.samples, o.warmup);

  // --- the small case: per-sample events vs the launch-free methods --------------------------
  detail::Gemm small({o.small_n, o.small_n, o.small_n}, small_dtype, 7, backend);
  const detail::GemmCheck small_check = checked(small);
  demo.small = describe_case(small, small_check);
  auto run_small = [&](cuda_stream s) { small.run(s); };
  status("timing: small case, interleaved");
  const int small_samples = std::max(o.samples, 50);
  int graph_repeats = 0;  // chosen on the first (warm-up) turn, then kept, so every sample is alike
  auto one_call = [](int samples, int warmup) {
    return CudaOptions{.warmup = warmup, .samples = samples, .repeats = 1};
  };
  std::vector<RowPlan> small_rows;
  small_rows.push_back({{"cuda_events", [&](int samples, int warmup) {
                           return measure_cuda(run_small, one_call(samples, warmup));
                         }},
                        "per-sample events: include the host's launch latency"});
  small_rows.push_back({{"spin_hold", [&](int samples, int warmup) {
                           return measure_spin(run_small, one_call(samples, warmup));
                         }},
                        "stream held by a spin kernel while the sample is queued: GPU time only"});
  small_rows.push_back({{"graph_replay", [&](int samples, int warmup) {
                           Measurement m = measure_graph(
                               run_small, CudaOptions{.warmup = warmup, .samples = samples, .repeats = graph_repeats});
                           graph_repeats = m.repeats_per_sample;
                           return m;
                         }},
                        ""});
  demo.small.methods =
      timed_interleaved(o.device, small, small_check, "small", std::move(small_rows), small_samples, o.warmup);
  auto& graph = demo.small.methods.back();
  graph.meaning = fmt::format("{} calls in one CUDA graph: GPU time per call", graph.record.repeats_per_sample);
  status("");
  analyze_timing_demo(demo);
  return demo;
}

}  // namespace ridge
