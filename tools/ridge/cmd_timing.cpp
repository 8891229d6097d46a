// `ridge timing`: the three-clocks timing exercise: one matmul timed three ways, plus the small
// case where the host's launch latency dominates per-sample events.
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"
#include "measure/cuda/probes.hpp"

namespace ridge::cli {

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void print_row(std::FILE* out, const Record& r, const std::string& note) {
  fmt::print(out, "  {:<13} {:>10} {:>10} {:>10} {:>11.2f}  {}\n", r.method, format_ms(r.summary.median),
             format_ms(r.summary.min), format_ms(r.summary.max), r.flops_per_s() / 1e12, note);
}

void print_header(std::FILE* out) {
  fmt::print(out, "  {:<13} {:>10} {:>10} {:>10} {:>11}  {}\n", "method", "median", "min", "max", "TFLOP/s",
             "what the number means");
}

// Runs one measurement while a ClockMonitor watches the clocks.
template <typename F>
std::pair<Measurement, ClockActivity> monitored(int device, F&& measure_fn) {
  ClockMonitor monitor(device);
  Measurement m = measure_fn();
  return {std::move(m), monitor.stop()};
}

Record verified_gemm_record(Gemm& gemm, const std::pair<Measurement, ClockActivity>& measured,
                            const nlohmann::json& params, const GemmCheck& check, int device) {
  const Measurement& m = measured.first;
  Record r = to_record(m, "timing", to_string(gemm.dtype()), params, gemm.bytes(), gemm.flops());
  r.extra["clocks_during"] = measured.second.to_json();
  r.verification = check.passed ? "passed" : "failed";
  r.extra["algorithm"] = gemm.algorithm();
  r.extra["check"] = check.summary();
  r.extra["meaning"] = describe(m.method);
  r.clocks_end = read_clocks(device);
  return r;
}

GemmCheck checked(Gemm& gemm) {
  GemmCheck check = gemm.verify();
  if (!check.passed)
    throw VerificationError(fmt::format("the {} GEMM {}x{}x{} gave wrong results: {}", to_string(gemm.dtype()),
                                        gemm.shape().m, gemm.shape().n, gemm.shape().k, check.summary()));
  return check;
}

// RIDGE_TEST_SLOWDOWN_US: a hidden test hook that makes every call of the large case slower by a GPU
// busy-wait of that many microseconds, so `ridge compare` can be shown to flag a real slowdown.
double test_slowdown_ns() {
  const char* text = std::getenv("RIDGE_TEST_SLOWDOWN_US");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const double us = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(us >= 0) || !std::isfinite(us))
    throw UsageError(fmt::format("RIDGE_TEST_SLOWDOWN_US='{}': expected a number of microseconds >= 0", text));
  return us * 1e3;
}

}  // namespace

ResultSet run_timing(const TimingOptions& o, std::FILE* out) {
  if (o.n <= 0) throw UsageError(fmt::format("--n must be > 0, got {}", o.n));
  if (o.small_n <= 0) throw UsageError(fmt::format("--small-n must be > 0, got {}", o.small_n));
  if (o.samples < 1) throw UsageError(fmt::format("--samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  if (o.repeats < 1) throw UsageError(fmt::format("--repeats must be >= 1, got {}", o.repeats));
  const DType dtype = dtype_from_string(o.dtype);
  const DType small_dtype = dtype_from_string(o.small_dtype);
  require_gpu(o.device);
  ResultSet set = new_result_set(o.device);

  // --- the large case: naive vs synchronized wall clock vs events ---------------------------
  const GemmBackend backend = gemm_backend_from_string(o.backend);
  Gemm gemm({o.n, o.n, o.n}, dtype, 1, backend);
  const GemmCheck check = checked(gemm);
  fmt::print(out, "{} matmul {}x{}x{} ({:.1f} GFLOP), {}, random inputs; output check {}\n\n",
             upper(to_string(dtype)), o.n, o.n, o.n, gemm.flops() / 1e9, gemm.algorithm(), check.summary());
  const nlohmann::json large{{"n", o.n}, {"m", o.n}, {"k", o.n}, {"case", "large"}};
  const double slowdown_ns = test_slowdown_ns();
  auto run = [&](cuda_stream s) {
    gemm.run(s);
    if (slowdown_ns > 0) launch_busy_wait(s, slowdown_ns);
  };

  progress("timing: unsynchronized wall clock");
  ClockReading start = read_clocks(o.device);
  auto naive = monitored(o.device, [&] { return measure_naive([&] { run(nullptr); }, o.samples, o.warmup); });
  progress("timing: synchronized wall clock");
  auto wall = monitored(o.device,
                        [&] { return measure_wall([&] { run(nullptr); }, WallOptions{o.samples, o.warmup, true}); });
  progress("timing: CUDA events");
  auto events = monitored(o.device, [&] {
    return measure_cuda(run, CudaOptions{.warmup = o.warmup, .samples = o.samples, .repeats = o.repeats});
  });
  progress_done();

  Record r_naive = verified_gemm_record(gemm, naive, large, check, o.device);
  Record r_wall = verified_gemm_record(gemm, wall, large, check, o.device);
  Record r_events = verified_gemm_record(gemm, events, large, check, o.device);
  for (Record* r : {&r_naive, &r_wall, &r_events}) {
    r->clocks_start = start;
    if (slowdown_ns > 0)
      r->warnings.push_back(fmt::format("deliberately slowed by RIDGE_TEST_SLOWDOWN_US: {:.1f} us of GPU busy-wait per call",
                                        slowdown_ns / 1e3));
  }

  const double impossible_above = fastest_known_peak_flops(dtype);
  const double naive_rate = r_naive.flops_per_s();
  const bool naive_impossible = naive_rate > impossible_above;
  if (naive_impossible)
    r_naive.warnings.push_back(fmt::format(
        "impossible: implies {} while the fastest GPU known peaks at {} for {}; this timed the launch queue, not the work",
        format_flops(naive_rate), format_flops(impossible_above), to_string(dtype)));
  r_naive.warnings.push_back("wrong method: no synchronization, so the work had not run when the clock stopped");
  add_plausibility_warnings(r_wall, std::nullopt);
  add_plausibility_warnings(r_events, std::nullopt);

  print_header(out);
  print_row(out, r_naive, "WRONG: time to queue the launch; the GPU ran it later");
  print_row(out, r_wall, "synchronized before and after: what the caller waits");
  print_row(out, r_events, "GPU clock between two events: the kernel's time");
  fmt::print(out, "\n");
  const double ratio = r_wall.summary.median / r_naive.summary.median;
  const double agree = std::abs(r_wall.summary.median - r_events.summary.median) / r_events.summary.median;
  if (naive_impossible)
    fmt::print(out,
               "The unsynchronized reading implies {}, above the {} peak of any GPU ({}): physically impossible.\n"
               "CUDA launches are asynchronous; the call returned once the work was queued.\n",
               format_flops(naive_rate), to_string(dtype), format_flops(impossible_above));
  fmt::print(out, "Synchronized wall clock is {:.0f}x the unsynchronized reading; it and the events agree within {:.1f}%.\n",
             ratio, agree * 100);
  r_events.extra["wall_sync_vs_events_relative_difference"] = agree;
  r_naive.extra["wall_sync_over_naive"] = ratio;

  // --- the small case: per-sample events vs the launch-free methods --------------------------
  Gemm small({o.small_n, o.small_n, o.small_n}, small_dtype, 7, backend);
  const GemmCheck small_check = checked(small);
  const nlohmann::json small_params{{"n", o.small_n}, {"m", o.small_n}, {"k", o.small_n}, {"case", "small"}};
  auto run_small = [&](cuda_stream s) { small.run(s); };
  fmt::print(out, "\nSmall case: {} matmul {}x{}x{} ({:.1f} MFLOP); output check {}\n\n", upper(to_string(small_dtype)),
             o.small_n, o.small_n, o.small_n, small.flops() / 1e6, small_check.summary());
  progress("timing: small case");
  start = read_clocks(o.device);
  const int small_samples = std::max(o.samples, 50);
  auto s_events = monitored(o.device, [&] {
    return measure_cuda(run_small, CudaOptions{.warmup = o.warmup, .samples = small_samples, .repeats = 1});
  });
  auto s_spin = monitored(o.device, [&] {
    return measure_spin(run_small, CudaOptions{.warmup = o.warmup, .samples = small_samples, .repeats = 1});
  });
  auto s_graph = monitored(o.device, [&] {
    return measure_graph(run_small, CudaOptions{.warmup = o.warmup, .samples = small_samples, .repeats = 0});
  });
  progress_done();
  Record q_events = verified_gemm_record(small, s_events, small_params, small_check, o.device);
  Record q_spin = verified_gemm_record(small, s_spin, small_params, small_check, o.device);
  Record q_graph = verified_gemm_record(small, s_graph, small_params, small_check, o.device);
  for (Record* r : {&q_events, &q_spin, &q_graph}) {
    r->clocks_start = start;
    add_plausibility_warnings(*r, std::nullopt);
  }
  print_header(out);
  print_row(out, q_events, "per-sample events: include the host's launch latency");
  print_row(out, q_spin, "stream held by a spin kernel while queued: GPU time only");
  print_row(out, q_graph, fmt::format("{} calls in one CUDA graph: GPU time per call", q_graph.repeats_per_sample));
  const double launch_free = std::min(q_spin.summary.median, q_graph.summary.median);
  fmt::print(out,
             "\nPer-sample events read {} more than the launch-free methods ({:.1f}x): at this size the host's launch\n"
             "latency, not the GPU, sets the per-sample number. A kernel has no speed, only a speed at a size.\n",
             format_ms(q_events.summary.median - launch_free), q_events.summary.median / launch_free);

  for (Record* r : {&r_naive, &r_wall, &r_events, &q_events, &q_spin, &q_graph}) set.records.push_back(*r);
  finish_result_set(set, o.device);
  return set;
}

namespace {

struct TimingCommand {
  TimingOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "timing", "one matmul timed three ways (naive, synchronized wall clock, CUDA events), and why they differ", 20,
    [](CLI::App& app) {
      auto c = std::make_shared<TimingCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--n", o.n, "matrix size of the main case (n x n x n)")->default_val(4096);
      app.add_option("--dtype", o.dtype, "main case dtype: fp32, tf32, fp16, bf16, fp8")->default_val("fp32");
      app.add_option("--backend", o.backend, "GEMM library path: cublaslt, or cublas (the call PyTorch's a @ b makes)")
          ->default_val("cublaslt");
      app.add_option("--small-n", o.small_n, "matrix size of the small, launch-bound case")->default_val(256);
      app.add_option("--small-dtype", o.small_dtype, "small case dtype")->default_val("bf16");
      app.add_option("--samples", o.samples, "timed samples per method (median reported)")->default_val(20);
      app.add_option("--warmup", o.warmup, "untimed calls before sampling")->default_val(5);
      app.add_option("--repeats", o.repeats, "calls per event pair for the events method (time per call reported)")
          ->default_val(1);
      c->exports.add_to(app);
      return run_and_export(c, run_timing);
    }});

}  // namespace
}  // namespace ridge::cli
