// `ridge profile`: the profile-one-step exercise. Warms up, traces one GPT-2 decode step
// eagerly and one replayed as a CUDA graph, writes the traces and prints what they show: top
// kernels and operators, the kernel count, GPU busy time and the share of the step spent in
// launch gaps.
#include <filesystem>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gpt2/model.hpp"
#include "ridge/tracer.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

std::string graph_trace_path(const std::string& eager_path) {
  std::filesystem::path p(eager_path);
  return (p.parent_path() / (p.stem().string() + "-graph" + p.extension().string())).string();
}

struct ModeProfile {
  std::string mode;
  trace::Analysis analysis;
  std::string trace_path;
};

ModeProfile profile_mode(gpt2::Decoder& decoder, gpt2::Mode mode, const std::string& path) {
  const std::string name = mode == gpt2::Mode::eager ? "eager" : "graph";
  decoder.warmup(mode, 3);
  // CUPTI pays one-time costs for the first launches it sees after it starts recording: run
  // three steps under the tracer first, and keep only the last, inside its own "step" range.
  // Every API call: the step's window keeps the kernels whose launch call lies inside it.
  Tracer tracer(TracerOptions{.all_api_calls = true});
  tracer.start();
  for (int i = 0; i < 3; ++i) {
    NvtxRange warm("warm-up step");
    decoder.step(mode, nullptr);
  }
  {
    NvtxRange step("step");
    decoder.step(mode, nullptr);
  }
  tracer.stop();
  const trace::Trace& all = tracer.events();
  if (!all.strings.find("step"))
    throw Error(
        "ridge profile: the tracer saw no NVTX range named \"step\", so it cannot cut one step out of the trace. "
        "NVTX was initialised before the tracer could route it to CUPTI (an NVTX call ran before "
        "enable_nvtx_capture()), or NVTX_INJECTION64_PATH points to another tool; unset it and retry.");
  trace::Window window;
  window.nvtx_range = "step";
  trace::Trace one_step = trace::apply_window(all, window);
  trace::write_chrome_trace(one_step, path);
  trace::AnalysisOptions options;
  options.step_range = "step";
  options.top = 8;
  return {name, trace::analyze(one_step, options), path};
}

double ms(trace::Nanoseconds ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

ResultSet run_profile(const ProfileOptions& o, std::FILE* out) {
  const gpt2::Config config = gpt2::preset(o.model);
  const DType dtype = dtype_from_string(o.dtype);
  const gpt2::StepKernel kernel = gpt2::step_kernel_from_string(o.kernel);
  if (o.batch < 1) throw UsageError(fmt::format("--batch must be >= 1, got {}", o.batch));
  if (o.context < 1 || o.context > config.context)
    throw UsageError(fmt::format("--context must be within [1, {}] for GPT-2 {}, got {}", config.context, o.model,
                                 o.context));
  require_gpu(o.device);
  // The decoder's NVTX ranges must reach CUPTI: route NVTX before its first call initialises it.
  enable_nvtx_capture();
  ResultSet set = new_result_set(o.device);

  auto model = gpt2::Model::random(config, dtype);
  gpt2::DecoderOptions decoder_options;
  decoder_options.batch = o.batch;
  decoder_options.max_context = config.context;
  decoder_options.kernel = kernel;
  gpt2::Decoder decoder(*model, decoder_options);
  // `context` tokens in the sequence after the step: context-1 cached, as `ridge decode` counts.
  decoder.fill_random_cache(o.context - 1);

  fmt::print(out, "GPT-2 {} {} decode step, batch {}, context {}, {} kernels: the last of four traced steps\n\n",
             o.model, to_string(dtype), o.batch, o.context, to_string(decoder.kernel()));
  std::vector<ModeProfile> profiles;
  profiles.push_back(profile_mode(decoder, gpt2::Mode::eager, o.trace));
  profiles.push_back(profile_mode(decoder, gpt2::Mode::graph, graph_trace_path(o.trace)));

  fmt::print(out, "{:<34} {:>14} {:>14}\n", "", "eager", "graph");
  auto row = [&](const char* label, auto value) {
    fmt::print(out, "{:<34} {:>14} {:>14}\n", label, value(profiles[0].analysis), value(profiles[1].analysis));
  };
  row("kernels in the step", [](const trace::Analysis& a) { return fmt::format("{}", a.kernel_count); });
  row("step wall time (trace span)", [](const trace::Analysis& a) { return format_ms(ms(a.trace_span_ns)); });
  row("first to last kernel", [](const trace::Analysis& a) { return format_ms(ms(a.kernel_span_ns)); });
  row("GPU busy (union of kernels)", [](const trace::Analysis& a) { return format_ms(ms(a.gpu_busy_ns)); });
  row("GPU idle between kernels", [](const trace::Analysis& a) { return format_ms(ms(a.idle_time_ns)); });
  row("launch-gap share of kernel span", [](const trace::Analysis& a) {
    return fmt::format("{:.1f}%", a.kernel_span_ns ? 100.0 * double(a.idle_time_ns) / double(a.kernel_span_ns) : 0.0);
  });
  row("idle waiting on the host", [](const trace::Analysis& a) {
    return fmt::format("{:.1f}%", 100.0 * a.host_bound_fraction_of_idle);
  });
  row("launch latency (median)", [](const trace::Analysis& a) {
    return a.launch_latency_count ? format_ms(a.launch_latency_median_ns / 1e6) : std::string("-");
  });
  row("CUPTI records dropped", [](const trace::Analysis& a) { return fmt::format("{}", a.dropped_records); });

  for (const auto& p : profiles) {
    fmt::print(out, "\nTop kernels ({}):\n", p.mode);
    fmt::print(out, "  {:>6} {:>11} {:>11} {:>6}  {}\n", "count", "total", "mean", "% GPU", "kernel");
    for (const auto& k : p.analysis.top_kernels)
      fmt::print(out, "  {:>6} {:>11} {:>11} {:>5.1f}%  {}\n", k.time.count, format_ms(ms(k.time.total_ns)),
                 format_ms(k.time.mean_ns / 1e6), k.percent_of_kernel_time, k.name.substr(0, 90));
    if (!p.analysis.top_ranges.empty()) {
      fmt::print(out, "Top operators (NVTX, {}):\n", p.mode);
      for (const auto& r : p.analysis.top_ranges)
        fmt::print(out, "  {:>6} {:>11} host, {:>4} kernels {:>11} GPU  {}\n", r.time.count,
                   format_ms(ms(r.time.total_ns)), r.kernels, format_ms(ms(r.kernel_time_ns)), r.name);
    }
  }
  const auto& e = profiles[0].analysis;
  const auto& g = profiles[1].analysis;
  fmt::print(out,
             "\nThe eager step launches {} kernels; the GPU is busy {} of its {} kernel span, so {:.0f}% of the\n"
             "step is launch gaps. Replayed as a graph the gaps shrink to {:.0f}%. Traces: {} and {} (open in\n"
             "https://ui.perfetto.dev).\n",
             e.kernel_count, format_ms(ms(e.gpu_busy_ns)), format_ms(ms(e.kernel_span_ns)),
             e.kernel_span_ns ? 100.0 * double(e.idle_time_ns) / double(e.kernel_span_ns) : 0.0,
             g.kernel_span_ns ? 100.0 * double(g.idle_time_ns) / double(g.kernel_span_ns) : 0.0, profiles[0].trace_path,
             profiles[1].trace_path);

  for (const auto& p : profiles) {
    Record r;
    r.name = "profile.decode_step";
    r.method = "cupti_trace";
    r.dtype = to_string(dtype);
    r.params = {{"model", o.model}, {"batch", o.batch}, {"context", o.context}, {"mode", p.mode},
                {"kernel", to_string(decoder.kernel())}};
    r.samples_ms = {ms(p.analysis.kernel_span_ns)};
    finalize(r);
    r.extra["analysis"] = trace::to_json(p.analysis);
    r.extra["trace_path"] = p.trace_path;
    set.records.push_back(std::move(r));
  }
  finish_result_set(set, o.device);
  return set;
}

namespace {

struct ProfileCommand {
  ProfileOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "profile", "trace one GPT-2 decode step (eager and graph): top kernels, kernel count, launch-gap share", 75,
    [](CLI::App& app) {
      auto c = std::make_shared<ProfileCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--model", o.model, "GPT-2 preset: tiny, small, medium, large, xl")->default_val("small");
      app.add_option("--dtype", o.dtype, "weights: fp32 or bf16")->default_val("bf16");
      app.add_option("--batch", o.batch, "sequences decoded together")->default_val(1);
      app.add_option("--context", o.context, "tokens per sequence after the step")->default_val(128);
      app.add_option("--kernel", o.kernel,
                     "the step's kernels: auto (one persistent kernel where it fits), barrier (that kernel), chain "
                     "(one kernel per operation: the launch gaps show)")
          ->default_val("auto");
      app.add_option("-o,--trace", o.trace, "Chrome/Perfetto trace of the eager step (the graph step gets -graph)")
          ->default_val("runs/trace.json");
      c->exports.add_to(app);
      return run_and_export(c, run_profile);
    }});

}  // namespace
}  // namespace ridge::cli
