// `ridge decode`: the reference workload. One GPT-2 decode step in C++/CUDA, timed eager and as a
// CUDA graph, against decode_ceiling at the measured HBM bandwidth. The work is
// gpt2::run_decode (src/workloads/gpt2); this file parses, calls and prints.
#include <filesystem>

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
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

void print_ready(const gpt2::DecodeRun& run, std::FILE* out) {
  const auto& c = run.config;
  fmt::print(out, "GPT-2 {} ({} layers, {} heads, width {}, vocabulary {}), {} weights {}, {:.1f}M parameters, "
                  "{} on the GPU\n",
             run.model_name, c.layers, c.heads, c.width, c.vocab, to_string(run.dtype), run.weights_source,
             gpt2::parameter_count(c) / 1e6, format_bytes(run.device_bytes));
  if (run.reference_check) {
    const auto& check = *run.reference_check;
    const auto& cmp = check.comparison;
    fmt::print(out, "Logits check against {} ({}): batch {}, {} tokens (cache {} + 1): relative L2 error {:.3e} "
                    "(tolerance {:.0e}), max |diff| {:.3e}, greedy token agrees in {}/{} sequences: {}\n",
               check.path, check.kind, check.batch, check.length, check.length - 1, cmp.relative_l2_error,
               cmp.tolerance, cmp.max_abs_error, cmp.argmax_agree, check.batch, cmp.passed ? "PASSED" : "FAILED");
    if (check.error_vs_reference_bf16)
      fmt::print(out, "  (for scale: vs the reference run in bf16 the error is {:.3e})\n", *check.error_vs_reference_bf16);
  }
  fmt::print(out, "HBM bandwidth for the ceiling: {} ({}); device {}\n\n",
             format_bytes_per_s(run.ceilings.memory_bytes_per_s), run.ceilings.source_text, run.device_name);
  fmt::print(out, "{:>5} {:>7} {:>5} {:<11} {:>10} {:>10} {:>10} {:>9} {:>10} {:>7}  {}\n", "batch", "context", "mode",
             "method", "ms/step", "tokens/s", "bytes", "FLOP/B", "ceiling", "% ceil", "kernels, backend");
}

void print_record(const Record& r, const gpt2::DecodeConfiguration& point, bool pdl, std::FILE* out) {
  const double tokens_per_s = extra_key::tokens_per_s.get(r);
  fmt::print(out, "{:>5} {:>7} {:>5} {:<11} {:>10.4f} {:>10.0f} {:>10} {:>9.1f} {:>10.0f} {:>6.1f}%  {}, {} {}{}\n",
             point.batch, point.context, r.params.value(param_key::mode, ""), to_string(r.method), r.summary.median,
             tokens_per_s, format_bytes(point.cost.bytes()), point.cost.intensity(), point.ceiling_tokens_per_s,
             100 * tokens_per_s / point.ceiling_tokens_per_s, point.kernels_per_step, to_string(point.gemm),
             to_string(point.kernel), pdl ? "+pdl" : "");
  for (const auto& w : r.warnings) fmt::print(out, "      warning: {}\n", w);
}

std::string path_with_suffix(const std::string& path, const std::string& suffix) {
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + suffix + p.extension().string())).string();
}

void write_plots(const gpt2::DecodeRun& run, const std::string& path, std::FILE* out) {
  const Plot roofline = gpt2::decode_roofline_plot(run);
  if (roofline.series.empty()) return;
  write_text(path, render_svg(roofline));
  const std::string tokens_path = path_with_suffix(path, "-tokens");
  write_text(tokens_path, render_svg(gpt2::decode_tokens_plot(run)));
  fmt::print(out, "plots written: {} (roofline), {} (tokens/s vs batch)\n", path, tokens_path);
}

gpt2::DecodeRun run_decode(const gpt2::DecodeOptions& o, const std::string& svg, std::FILE* out) {
  gpt2::DecodeCallbacks callbacks;
  callbacks.on_progress = [](const std::string& line) { line.empty() ? progress_done() : progress(line); };
  callbacks.on_ready = [out](const gpt2::DecodeRun& run) { print_ready(run, out); };
  callbacks.on_record = [&o, out](const Record& r, const gpt2::DecodeConfiguration& point) {
    print_record(r, point, o.pdl, out);
  };
  gpt2::DecodeRun run = gpt2::run_decode(o, callbacks);
  progress_done();
  fmt::print(out, "\nbytes: weights read once per step ({}) + each sequence's KV cache up to its context; ceiling: "
                  "decode_ceiling in tokens/s at {}.\n",
             format_bytes(run.weight_bytes_per_step), format_bytes_per_s(run.ceilings.memory_bytes_per_s));
  fmt::print(out, "cuda_events: per-step events (include the host's launch time); spin_hold: queue held while the "
                  "step is launched (GPU time); graph_replay: the step captured once, replayed.\n");
  for (const auto& point : run.configurations)
    if (auto speedup = point.graph_speedup())
      fmt::print(out, "batch {}, context {}: graph replay is {:.2f}x faster per step than eager launches\n",
                 point.batch, point.context, *speedup);
  if (!o.timeline_path.empty()) fmt::print(out, "phase timeline of the last timed step: {}\n", o.timeline_path);
  if (!svg.empty()) write_plots(run, svg, out);
  return run;
}

// The options as typed on the command line; converted to gpt2::DecodeOptions when the command runs.
struct DecodeCommand {
  gpt2::DecodeOptions options;
  std::string dtype = "bf16", batch = "1", context = "1024", mode = "eager,graph", gemm = "auto", kernel = "auto";
  bool no_pdl = false;
  double bandwidth_gb_per_s = 0;
  std::string svg;
  ExportOptions exports;
};

int decode_command(DecodeCommand& c) {
  gpt2::DecodeOptions& o = c.options;
  o.dtype = dtype_from_string(c.dtype);
  o.batches = gpt2::parse_positive_ints(c.batch, "--batch");
  o.contexts = gpt2::parse_positive_ints(c.context, "--context");
  o.modes = gpt2::parse_modes(c.mode);
  o.gemm = gpt2::gemm_path_from_string(c.gemm);
  o.kernel = gpt2::step_kernel_from_string(c.kernel);
  o.pdl = !c.no_pdl;
  o.bandwidth_bytes_per_s = c.bandwidth_gb_per_s * 1e9;
  o.validate();  // every usage error before the GPU is touched
  measure_and_export(c.exports, o.device, [&](std::FILE* out) {
    require_gpu(o.device);
    return run_decode(o, c.svg, out).records;
  });
  return 0;
}

RIDGE_REGISTER_COMMAND(Command{
    "decode", "the reference workload: GPT-2 decode steps in C++/CUDA against decode_ceiling", 60, [](CLI::App& app) {
      auto c = std::make_shared<DecodeCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--model", o.model, "GPT-2 preset: small (124M), medium, large, xl, tiny (tests)")
          ->default_val("small");
      app.add_option("--dtype", c->dtype, "weight and KV-cache type: bf16 or fp32 (fp32 accumulation either way)")
          ->default_val("bf16");
      app.add_option("--batch", c->batch, "comma-separated batch sizes (sequences per step)")->default_val("1");
      app.add_option("--context", c->context,
                     "comma-separated sequence lengths after the step, in tokens: N-1 cached plus the new one "
                     "(at most the model's positions, 1024 for GPT-2)")
          ->default_val("1024");
      app.add_option("--mode", c->mode, "eager, graph, or both (comma-separated)")->default_val("eager,graph");
      app.add_option("--gemm", c->gemm,
                     "matrix backend: auto (ridge's fused GEMV for batch <= 8, else cuBLASLt), gemv, cublas")
          ->default_val("auto");
      app.add_option("--kernel", c->kernel,
                     "how the gemv backend runs a step: auto (barrier where it fits, else chain), barrier (one "
                     "persistent kernel, grid barriers between phases), chain (one kernel per operation)")
          ->default_val("auto");
      app.add_flag("--no-pdl", c->no_pdl, "launch without programmatic dependent launch (no kernel overlap)");
      app.add_flag("--l2-prefetch", o.l2_prefetch,
                   "barrier kernel only: also bulk-prefetch each phase's weights into the L2 two phases ahead "
                   "(measured slower on the H200; default off)");
      app.add_option("--timeline", o.timeline_path,
                     "barrier kernel only, one batch and context: write the last timed step's per-block phase "
                     "timeline here (JSON: globaltimer ns and clock64 at four points of each phase; "
                     "bench/fused_timeline.py summarises it); default: none")
          ->type_name("FILE");
      app.add_option("--weights", o.weights,
                     "safetensors file with GPT-2 weights (HF names, optional 'transformer.' prefix); default: random "
                     "weights from --seed");
      app.add_option("--heads", o.heads, "attention heads for --weights (default width/64)")->default_val(0);
      app.add_option("--check-logits", o.check_logits,
                     "safetensors file with 'tokens' [B, N] and reference 'logits' [B, vocab] (bench/gpt2_export.py): "
                     "prefill the tokens, compare the last step's logits (fp32 <= 1e-4, bf16 <= 2e-2)");
      app.add_option("--seed", o.seed, "seed of the random weights and cache contents")->default_val(1);
      app.add_option("--samples", o.samples, "timed samples per method (median reported)")->default_val(20);
      app.add_option("--warmup", o.warmup, "untimed steps before sampling")->default_val(5);
      app.add_option("--bandwidth", c->bandwidth_gb_per_s,
                     "HBM bandwidth for decode_ceiling in GB/s (default: the measured ceiling, cached per device)")
          ->default_val(0);
      app.add_option("--svg", c->svg, "write the roofline plot here (and <name>-tokens.svg: tokens/s vs batch)");
      c->exports.add_to(app);
      return [c] { return decode_command(*c); };
    },
    {{"batches", "--batch"}, {"contexts", "--context"}, {"modes", "--mode"}, {"bandwidth_bytes_per_s", "--bandwidth"},
     {"timeline_path", "--timeline"}, {"pdl", "--no-pdl"}}});

}  // namespace
}  // namespace ridge::cli
