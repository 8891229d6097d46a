// `ridge profile`: the profile-one-step exercise. gpt2::run_profile traces one GPT-2 decode step
// eagerly and one replayed as a CUDA graph and writes the traces; this file prints what they show:
// top kernels and operators, the kernel count, GPU busy time and the share of the step spent in
// launch gaps.
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
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"

namespace ridge::cli {

namespace {

double ms(trace::Nanoseconds ns) { return static_cast<double>(ns) / 1e6; }

gpt2::ProfileRun run_profile(const gpt2::ProfileOptions& o, std::FILE* out) {
  o.validate();
  require_gpu(o.device);
  const gpt2::ProfileRun run = gpt2::run_profile(o);
  fmt::print(out, "GPT-2 {} {} decode step, batch {}, context {}, {} kernels: the last of four traced steps\n\n",
             o.model, to_string(o.dtype), o.batch, o.context, to_string(run.kernel));
  const auto& profiles = run.profiles;
  fmt::print(out, "{:<34} {:>14} {:>14}\n", "", "eager", "graph");
  auto row = [&](const char* label, auto value) {
    fmt::print(out, "{:<34} {:>14} {:>14}\n", label, value(profiles[0].analysis), value(profiles[1].analysis));
  };
  row("kernels in the step", [](const trace::Analysis& a) { return fmt::format("{}", a.kernel_count); });
  row("step wall time (trace span)", [](const trace::Analysis& a) { return format_ms(ms(a.trace_span_ns)); });
  row("first to last kernel", [](const trace::Analysis& a) { return format_ms(ms(a.kernel_span_ns)); });
  row("GPU busy (union of kernels)", [](const trace::Analysis& a) { return format_ms(ms(a.gpu_busy_ns)); });
  row("kernel times summed", [](const trace::Analysis& a) { return format_ms(ms(a.kernel_time_ns)); });
  row("overlap share of kernel time", [](const trace::Analysis& a) {
    return fmt::format("{:.1f}%", 100.0 * a.kernel_overlap_fraction);
  });
  row("GPU idle between kernels", [](const trace::Analysis& a) { return format_ms(ms(a.idle_time_ns)); });
  fmt::print(out, "{:<34} {:>14} {:>14}\n", "launch-gap share of kernel span",
             fmt::format("{:.1f}%", 100 * profiles[0].launch_gap_fraction()),
             fmt::format("{:.1f}%", 100 * profiles[1].launch_gap_fraction()));
  row("idle waiting on the host", [](const trace::Analysis& a) {
    return fmt::format("{:.1f}%", 100.0 * a.host_bound_fraction_of_idle);
  });
  row("launch latency (median)", [](const trace::Analysis& a) {
    return a.launch_latency_count ? format_ms(a.launch_latency_median_ns / 1e6) : std::string("-");
  });
  row("  queued behind earlier work", [](const trace::Analysis& a) {
    return a.launches_split() ? format_ms(a.launch_queued_median_ns / 1e6) : std::string("not split");
  });
  row("  launch overhead", [](const trace::Analysis& a) {
    return a.launches_split() ? format_ms(a.launch_overhead_median_ns / 1e6) : std::string("not split");
  });
  row("CUPTI records dropped", [](const trace::Analysis& a) { return fmt::format("{}", a.dropped_records); });

  for (const auto& p : profiles) {
    fmt::print(out, "\nTop kernels ({}){}:\n", to_string(p.mode),
               p.analysis.kernel_times_overlap()
                   ? fmt::format(" - they overlapped: totals sum to {} against {} busy", format_ms(ms(p.analysis.kernel_time_ns)),
                                 format_ms(ms(p.analysis.gpu_busy_ns)))
                   : std::string());
    fmt::print(out, "  {:>6} {:>11} {:>11} {:>6}  {}\n", "count", "total", "mean", "% GPU", "kernel");
    for (const auto& k : p.analysis.top_kernels)
      fmt::print(out, "  {:>6} {:>11} {:>11} {:>5.1f}%  {}\n", k.time.count, format_ms(ms(k.time.total_ns)),
                 format_ms(k.time.mean_ns / 1e6), k.percent_of_kernel_time, k.name.substr(0, 90));
    if (!p.analysis.top_ranges.empty()) {
      fmt::print(out, "Top operators (NVTX, {}):\n", to_string(p.mode));
      for (const auto& r : p.analysis.top_ranges)
        fmt::print(out, "  {:>6} {:>11} host, {:>4} kernels {:>11} GPU  {}\n", r.time.count,
                   format_ms(ms(r.time.total_ns)), r.kernels, format_ms(ms(r.kernel_time_ns)), r.name);
    }
  }
  const auto& e = profiles[0].analysis;
  fmt::print(out,
             "\nThe eager step launches {} kernels; the GPU is busy {} of its {} kernel span, so {:.0f}% of the\n"
             "step is launch gaps. Replayed as a graph the gaps shrink to {:.0f}%. Traces: {} and {} (open in\n"
             "https://ui.perfetto.dev).\n",
             e.kernel_count, format_ms(ms(e.gpu_busy_ns)), format_ms(ms(e.kernel_span_ns)),
             100 * profiles[0].launch_gap_fraction(), 100 * profiles[1].launch_gap_fraction(), profiles[0].trace_path,
             profiles[1].trace_path);
  for (const auto& p : profiles)
    for (const auto& f : p.analysis.findings) fmt::print(out, "{}: {}\n", to_string(p.mode), f);

  return run;
}

struct ProfileCommand {
  gpt2::ProfileOptions options;
  std::string dtype = "bf16", kernel = "auto";
  ExportOptions exports;
};

int profile_command(ProfileCommand& c) {
  c.options.dtype = dtype_from_string(c.dtype);
  c.options.kernel = gpt2::step_kernel_from_string(c.kernel);
  c.options.validate();
  measure_and_export(c.exports, c.options.device, [&](std::FILE* out) {
    require_gpu(c.options.device);
    return run_profile(c.options, out).records;
  });
  return 0;
}

RIDGE_REGISTER_COMMAND(Command{
    "profile", "trace one GPT-2 decode step (eager and graph): top kernels, kernel count, launch-gap share", 75,
    [](CLI::App& app) {
      auto c = std::make_shared<ProfileCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--model", o.model, "GPT-2 preset: tiny, small, medium, large, xl")->default_val("small");
      app.add_option("--dtype", c->dtype, "weights: fp32 or bf16")->default_val("bf16");
      app.add_option("--batch", o.batch, "sequences decoded together")->default_val(1);
      app.add_option("--context", o.context, "tokens per sequence after the step")->default_val(128);
      app.add_option("--kernel", c->kernel,
                     "the step's kernels: auto (one persistent kernel where it fits), barrier (that kernel), chain "
                     "(one kernel per operation: the launch gaps show)")
          ->default_val("auto");
      app.add_option("-o,--trace", o.trace_path, "Chrome/Perfetto trace of the eager step (the graph step gets -graph)")
          ->default_val("runs/trace.json");
      c->exports.add_to(app);
      return [c] { return profile_command(*c); };
    }});

}  // namespace
}  // namespace ridge::cli
