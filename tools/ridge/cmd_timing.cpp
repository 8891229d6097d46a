// `ridge timing`: the three-clocks timing exercise: one matmul timed three ways, plus the small
// case where the host's launch latency dominates per-sample events. The measuring and the
// comparison are run_timing_demo (ridge/timing.hpp); this file prints them.
#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/device.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/matmul.hpp"
#include "ridge/result.hpp"
#include "ridge/roofline.hpp"
#include "ridge/timing.hpp"
#include "ridge/format.hpp"
#include "ridge/timing.hpp"

namespace ridge::cli {

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string clock_cell(const RowClocks& clocks) {
  if (!clocks.known()) return "-";
  return fmt::format("{:.0f}{}", clocks.median_sm_mhz, clocks.reduced_count > 0 ? "*" : "");
}

void print_table(std::FILE* out, const TimingCase& c) {
  fmt::print(out, "  {:<13} {:>10} {:>10} {:>10} {:>11} {:>7}  {}\n", "method", "median", "min", "max", "TFLOP/s",
             "SM MHz", "what the number means");
  for (const auto& m : c.methods) {
    const Record& r = m.record;
    fmt::print(out, "  {:<13} {:>10} {:>10} {:>10} {:>11.2f} {:>7}  {}\n", to_string(r.method), format_ms(r.summary.median),
               format_ms(r.summary.min), format_ms(r.summary.max), r.flops_per_s() / 1e12, clock_cell(m.clocks),
               m.meaning);
  }
  fmt::print(out, "  (methods sampled in turns, one sample each; SM MHz: median clock over the row's samples, * some "
                  "at reduced clocks)\n");
  for (const auto& finding : c.clock_findings) fmt::print(out, "  clocks: {}\n", finding);
}

void print_demo(std::FILE* out, const TimingDemo& d) {
  const auto& large = d.large;
  fmt::print(out, "{} matmul {}x{}x{} ({:.1f} GFLOP), {}, random inputs; output check {}\n\n",
             upper(to_string(large.dtype)), large.shape.m, large.shape.n, large.shape.k, large.flops / 1e9,
             large.algorithm, large.check);
  if (d.options.inject_slowdown_us > 0)
    fmt::print(out, "DELIBERATELY SLOWED (--inject-slowdown-us {}, a testing aid): each large call adds a GPU busy-wait\n\n",
               d.options.inject_slowdown_us);
  print_table(out, large);
  fmt::print(out, "\n");
  if (d.naive_impossible)
    fmt::print(out,
               "The unsynchronized reading implies {}, above the {} peak of any GPU ({}): physically impossible.\n"
               "CUDA launches are asynchronous; the call returned once the work was queued.\n",
               format_flops(d.naive_flops_per_s), to_string(large.dtype), format_flops(d.impossible_above_flops_per_s));
  fmt::print(out, "Synchronized wall clock is {:.0f}x the unsynchronized reading; it and the events agree within {}.\n",
             d.wall_over_naive, format_percent(d.wall_vs_events_relative_difference));

  const auto& small = d.small;
  fmt::print(out, "\nSmall case: {} matmul {}x{}x{} ({:.1f} MFLOP); output check {}\n\n", upper(to_string(small.dtype)),
             small.shape.m, small.shape.n, small.shape.k, small.flops / 1e6, small.check);
  print_table(out, small);
  fmt::print(out,
             "\nPer-sample events read {} more than the launch-free methods ({:.1f}x): at this size the host's launch\n"
             "latency, not the GPU, sets the per-sample number. A kernel has no speed, only a speed at a size.\n",
             format_ms(d.launch_overhead_ms), d.events_over_launch_free);
}

TimingDemo run_timing_printed(const TimingDemoOptions& options, std::FILE* out) {
  const TimingDemo demo = run_timing_demo(options, [](const std::string& line) {
    if (line.empty())
      progress_done();
    else
      progress(line);
  });
  print_demo(out, demo);
  return demo;
}

ResultSet run_timing(const TimingDemoOptions& options, std::FILE* out) {
  options.validate();  // usage errors exit 2 before anything else
  ResultSet set = new_result_set(options.device);
  set.records = run_timing_printed(options, out).records();
  finish_result_set(set, options.device);
  return set;
}

struct TimingCommand {
  TimingDemoOptions options;
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
      app.add_option("--inject-slowdown-us", o.inject_slowdown_us,
                     "TESTING AID, not a measurement: add a GPU busy-wait of this many microseconds after every call "
                     "of the main case, to check that `ridge compare` flags a slowdown")
          ->default_val(0);
      c->exports.add_to(app);
      return run_and_export(c, run_timing);
    }});

}  // namespace
}  // namespace ridge::cli
