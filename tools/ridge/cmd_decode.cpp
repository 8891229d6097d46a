// `ridge decode`: the reference workload. One GPT-2 decode step in C++/CUDA, timed eager and as a
// CUDA graph, against decode_ceiling at the measured HBM bandwidth.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/ceilings.hpp"
#include "measure/cuda/cuda_check.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gpt2/model.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/plot.hpp"
#include "ridge/roofline.hpp"
#include "ridge/gpt2/safetensors.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

double logits_tolerance(DType dtype) { return dtype == DType::fp32 ? 1e-4 : 2e-2; }

struct Bandwidth {
  double bytes_per_s = 0;
  std::string source;
  std::optional<double> peak_flops;  ///< measured tensor/FP32 peak for the dtype, when known
};

// The one place the measured ceilings are asked for (they are cached per device after the first
// measurement, which takes tens of seconds).
Bandwidth decode_bandwidth(int device, double override_gb_per_s, DType dtype) {
  if (override_gb_per_s > 0) return {override_gb_per_s * 1e9, "--bandwidth", std::nullopt};
  progress("decode: measured ceilings (cached after the first run)");
  const MeasuredCeilings c = measured_ceilings(device);
  progress_done();
  if (!(c.ceilings.memory_bytes_per_s > 0))
    throw Error("the measured HBM bandwidth is missing or zero; pass --bandwidth GB/s");
  Bandwidth b{c.ceilings.memory_bytes_per_s,
              fmt::format("measured ({})", c.hbm_kernel.empty() ? "ceilings" : c.hbm_kernel), {}};
  if (auto peak = c.ceilings.peak(dtype)) b.peak_flops = *peak;
  return b;
}

std::vector<float> logits_row(const std::vector<float>& all, int b, int vocab) {
  return {all.begin() + static_cast<std::ptrdiff_t>(b) * vocab, all.begin() + static_cast<std::ptrdiff_t>(b + 1) * vocab};
}

// The CPU reference's weights for the GPU model (generated lazily: for xl that is 6 GB of floats).
class ReferenceWeights {
 public:
  ReferenceWeights(const gpt2::Config& config, DType dtype, std::uint64_t seed, std::optional<gpt2::Weights> loaded)
      : config_(config), dtype_(dtype), seed_(seed), weights_(std::move(loaded)) {
    if (weights_ && dtype_ == DType::bf16) gpt2::round_matrices_to_bf16(*weights_);
  }
  const gpt2::Weights& get() {
    if (!weights_) {
      progress("decode: CPU reference weights");
      weights_ = gpt2::random_weights(config_, seed_);
      if (dtype_ == DType::bf16) gpt2::round_matrices_to_bf16(*weights_);
      progress_done();
    }
    return *weights_;
  }

 private:
  gpt2::Config config_;
  DType dtype_;
  std::uint64_t seed_;
  std::optional<gpt2::Weights> weights_;
};

struct StepCheck {
  double worst_error = 0;
  std::vector<int> sequences;
  double graph_vs_eager = 0;
  bool passed = false;
  std::string summary;
};

// One eager step at the decoder's random cache compared with the CPU reference for the first and
// last sequence; then one graph step compared with the eager one.
StepCheck check_step(gpt2::Decoder& decoder, ReferenceWeights& reference, DType dtype, int cached, std::uint64_t seed) {
  const auto& config = reference.get().config;
  const int batch = decoder.options().batch;
  StepCheck check;
  decoder.fill_random_cache(cached, seed);
  decoder.step(gpt2::Mode::eager);
  const auto eager = decoder.logits();
  decoder.step(gpt2::Mode::graph);  // rewrites the same cache slot with the same values
  const auto graph = decoder.logits();
  check.graph_vs_eager = gpt2::relative_l2_error(graph, eager);
  check.sequences = batch > 1 ? std::vector<int>{0, batch - 1} : std::vector<int>{0};
  // Which token each sequence was given: fill_random_cache chose them; read them back by
  // replaying its rule is fragile, so recompute the reference with the tokens set explicitly.
  std::vector<int> tokens(batch);
  for (int b = 0; b < batch; ++b) tokens[b] = (b * 7919 + 13) % config.vocab;
  decoder.set_tokens(tokens);
  decoder.step(gpt2::Mode::eager);
  const auto logits = decoder.logits();
  for (int b : check.sequences) {
    gpt2::Sequence seq(config);
    gpt2::fill_random_cache(config, seed, b, cached, dtype == DType::bf16, seq);
    const auto expected = gpt2::reference_step(reference.get(), seq, tokens[b]);
    check.worst_error = std::max(check.worst_error, gpt2::relative_l2_error(logits_row(logits, b, config.vocab), expected));
  }
  check.passed = check.worst_error <= logits_tolerance(dtype) && check.graph_vs_eager <= 1e-5;
  check.summary = fmt::format("{}: logits vs CPU reference (sequences {}) rel. L2 error {:.2e} (tolerance {:.0e}); "
                              "graph vs eager {:.1e}",
                              check.passed ? "passed" : "FAILED", fmt::join(check.sequences, ","), check.worst_error,
                              logits_tolerance(dtype), check.graph_vs_eager);
  return check;
}

// --check-logits: prefill the reference's prompt step by step and compare the last step's logits.
Record check_reference_logits(const gpt2::Model& model, const std::string& path, std::FILE* out) {
  gpt2::SafetensorsFile file(path);
  const auto& tokens_entry = file.entry("tokens");
  if (tokens_entry.shape.size() != 2 || tokens_entry.shape[0] < 1 || tokens_entry.shape[1] < 1)
    throw UsageError(fmt::format("'{}': tensor 'tokens' has shape {}; expected [batch, length]", path,
                                 gpt2::shape_string(tokens_entry.shape)));
  const int batch = static_cast<int>(tokens_entry.shape[0]), length = static_cast<int>(tokens_entry.shape[1]);
  const auto& config = model.config();
  const auto& logits_entry = file.entry("logits");
  if (logits_entry.shape != std::vector<std::int64_t>{batch, config.vocab})
    throw UsageError(fmt::format("'{}': tensor 'logits' has shape {}; expected [{}, {}]", path,
                                 gpt2::shape_string(logits_entry.shape), batch, config.vocab));
  if (length > config.context)
    throw UsageError(fmt::format("'{}': {} tokens exceed the model's context of {}", path, length, config.context));
  const auto tokens = file.read_ints("tokens");
  const auto expected = file.read_floats("logits");
  gpt2::Decoder decoder(model, {.batch = batch, .max_context = length});
  for (int t = 0; t < length; ++t) {
    if (t % 64 == 0) progress(fmt::format("decode: prefilling the reference prompt, token {}/{}", t, length));
    std::vector<int> column(batch);
    for (int b = 0; b < batch; ++b) column[b] = tokens[static_cast<std::size_t>(b) * length + t];
    decoder.set_tokens(column);
    decoder.set_positions(std::vector<int>(batch, t));
    decoder.step(gpt2::Mode::graph);
  }
  progress_done();
  const auto got = decoder.logits();
  const double error = gpt2::relative_l2_error(got, expected);
  double max_abs = 0;
  int argmax_agree = 0;
  for (int b = 0; b < batch; ++b) {
    const auto g = logits_row(got, b, config.vocab), e = logits_row(expected, b, config.vocab);
    argmax_agree += gpt2::argmax(g) == gpt2::argmax(e);
    for (int v = 0; v < config.vocab; ++v) max_abs = std::max(max_abs, std::abs(double(g[v]) - e[v]));
  }
  const double tolerance = logits_tolerance(model.dtype());
  const bool passed = error <= tolerance;
  std::string reference_kind = file.metadata().count("reference") ? file.metadata().at("reference") : "reference";
  fmt::print(out, "Logits check against {} ({}): batch {}, {} tokens (cache {} + 1): relative L2 error {:.3e} "
                  "(tolerance {:.0e}), max |diff| {:.3e}, greedy token agrees in {}/{} sequences: {}\n",
             path, reference_kind, batch, length, length - 1, error, tolerance, max_abs, argmax_agree, batch,
             passed ? "PASSED" : "FAILED");
  Record r;
  r.name = "decode.check_logits";
  r.method = "none";
  r.dtype = to_string(model.dtype());
  r.params = {{"batch", batch}, {"context", length}, {"reference_file", path}, {"reference", reference_kind}};
  r.samples_ms = {0.0};
  finalize(r);
  r.verification = passed ? "passed" : "failed";
  r.extra = {{"relative_l2_error", error}, {"tolerance", tolerance}, {"max_abs_error", max_abs},
             {"argmax_agree", argmax_agree}};
  if (file.contains("logits_bf16")) {
    const double e16 = gpt2::relative_l2_error(got, file.read_floats("logits_bf16"));
    r.extra["relative_l2_error_vs_reference_bf16"] = e16;
    fmt::print(out, "  (for scale: vs the reference run in bf16 the error is {:.3e})\n", e16);
  }
  if (!passed)
    throw VerificationError(fmt::format("GPT-2 logits differ from the reference in '{}': relative error {:.3e} > {:.0e}",
                                        path, error, tolerance));
  return r;
}

std::string plot_path_with_suffix(const std::string& path, const std::string& suffix) {
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + suffix + p.extension().string())).string();
}

void write_plots(const ResultSet& set, const std::string& path, const Bandwidth& bw, DType dtype, std::FILE* out) {
  // Roofline: achieved FLOP/s against intensity, one series per (mode, context).
  const double peak = bw.peak_flops.value_or(fastest_known_peak_flops(dtype));
  Plot roof;
  roof.title = fmt::format("GPT-2 decode on the roofline ({} at {}, peak {})", to_string(dtype),
                           format_bytes_per_s(bw.bytes_per_s), format_flops(peak));
  roof.x_label = "arithmetic intensity (FLOP/byte)";
  roof.y_label = "achieved (FLOP/s)";
  Plot tokens;
  tokens.title = "GPT-2 decode: tokens/s against batch";
  tokens.x_label = "batch (sequences)";
  tokens.y_label = "tokens/s";
  std::map<std::string, PlotSeries> roof_series, token_series, ceiling_series;
  double min_i = 1e9, max_i = 0;
  for (const auto& r : set.records) {
    if (r.name != "decode" || r.method == "spin_hold") continue;
    const std::string key = fmt::format("{} ({}), context {}", r.params.value("mode", ""), r.method,
                                        r.params.value("context", 0));
    const double intensity = r.intensity_flop_per_byte();
    min_i = std::min(min_i, intensity);
    max_i = std::max(max_i, intensity);
    roof_series[key].name = key;
    roof_series[key].points.push_back({intensity, r.flops_per_s(), fmt::format("B={}", r.params.value("batch", 0))});
    token_series[key].name = key;
    token_series[key].points.push_back(
        {static_cast<double>(r.params.value("batch", 1)), r.extra.value("tokens_per_s", 0.0), ""});
    const std::string ckey = fmt::format("decode_ceiling, context {}", r.params.value("context", 0));
    ceiling_series[ckey].name = ckey;
    ceiling_series[ckey].dashed = true;
    ceiling_series[ckey].markers = false;
    ceiling_series[ckey].points.push_back(
        {static_cast<double>(r.params.value("batch", 1)), r.extra.value("decode_ceiling_tokens_per_s", 0.0), ""});
  }
  if (roof_series.empty()) return;
  PlotSeries roofline{"roofline: min(peak, I x bandwidth)", {}, true, false, true, "#444"};
  const double lo = std::max(0.1, min_i / 2), hi = std::max(max_i * 2, 2 * ridge_point(peak, bw.bytes_per_s));
  for (double i = lo; i <= hi * 1.0001; i *= 1.25) roofline.points.push_back({i, attainable_flops(i, peak, bw.bytes_per_s), ""});
  roof.series.push_back(roofline);
  for (auto& [k, s] : roof_series) {
    std::sort(s.points.begin(), s.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
    roof.series.push_back(s);
  }
  for (auto& [k, s] : token_series) {
    std::sort(s.points.begin(), s.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
    tokens.series.push_back(s);
  }
  for (auto& [k, s] : ceiling_series) {
    std::sort(s.points.begin(), s.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
    s.points.erase(std::unique(s.points.begin(), s.points.end(), [](auto& a, auto& b) { return a.x == b.x; }),
                   s.points.end());
    tokens.series.push_back(s);
  }
  write_text(path, render_svg(roof));
  const std::string tokens_path = plot_path_with_suffix(path, "-tokens");
  write_text(tokens_path, render_svg(tokens));
  fmt::print(out, "plots written: {} (roofline), {} (tokens/s vs batch)\n", path, tokens_path);
}

std::vector<int> parse_int_list(const std::string& text, const char* flag) {
  std::vector<int> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      std::size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size() || v <= 0 || v > (1 << 20)) throw std::invalid_argument(item);
      values.push_back(static_cast<int>(v));
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}: '{}' is not a positive integer (give a comma-separated list, e.g. 1,8,64)", flag,
                                   item));
    }
  }
  if (values.empty()) throw UsageError(fmt::format("{} needs at least one value", flag));
  return values;
}

std::vector<std::string> parse_list(const std::string& text) {
  std::vector<std::string> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) values.push_back(item);
  return values;
}

}  // namespace

ResultSet run_decode(const DecodeOptions& o, std::FILE* out) {
  // ---- everything that can be checked without a GPU -----------------------------------------
  const DType dtype = dtype_from_string(o.dtype);
  if (dtype != DType::fp32 && dtype != DType::bf16)
    throw UsageError(fmt::format("--dtype must be fp32 or bf16 for decode, got {}", o.dtype));
  const auto batches = parse_int_list(o.batch, "--batch");
  const auto contexts = parse_int_list(o.context, "--context");
  std::vector<gpt2::Mode> modes;
  for (const auto& m : parse_list(o.mode)) modes.push_back(gpt2::mode_from_string(m));
  if (modes.empty()) throw UsageError("--mode needs eager, graph or both");
  const gpt2::GemmPath gemm = gpt2::gemm_path_from_string(o.gemm);
  const gpt2::StepKernel kernel = gpt2::step_kernel_from_string(o.kernel);
  if (o.samples < 1) throw UsageError(fmt::format("--samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  if (o.bandwidth_gb_per_s < 0) throw UsageError("--bandwidth must be > 0 (GB/s)");
  std::optional<gpt2::Config> preset;
  if (o.weights.empty()) {
    preset = gpt2::preset(o.model);
    for (int c : contexts)
      if (c > preset->context)
        throw UsageError(fmt::format("--context {} exceeds GPT-2 {}'s {} positions", c, preset->name,
                                     preset->context));
  } else if (!std::filesystem::exists(o.weights)) {
    throw UsageError(fmt::format("--weights: file '{}' does not exist", o.weights));
  }
  if (!o.check_logits.empty() && !std::filesystem::exists(o.check_logits))
    throw UsageError(fmt::format("--check-logits: file '{}' does not exist", o.check_logits));

  require_gpu(o.device);
  ResultSet set = new_result_set(o.device);
  const DeviceDescription device = describe_device(o.device);

  // ---- the model --------------------------------------------------------------------------------
  progress("decode: building the model");
  std::optional<gpt2::Weights> loaded;
  std::unique_ptr<gpt2::Model> model;
  if (!o.weights.empty()) {
    loaded = gpt2::load_safetensors(o.weights, o.heads > 0 ? std::optional<int>(o.heads) : std::nullopt);
    model = gpt2::Model::from_weights(*loaded, dtype);
  } else {
    model = gpt2::Model::random(*preset, dtype, o.seed);
  }
  progress_done();
  const gpt2::Config& config = model->config();
  for (int c : contexts)
    if (c > config.context)
      throw UsageError(fmt::format("--context {} exceeds the model's {} positions", c, config.context));
  ReferenceWeights reference(config, dtype, o.seed, std::move(loaded));
  const std::string model_name = o.weights.empty() ? config.name : std::filesystem::path(o.weights).filename().string();
  fmt::print(out, "GPT-2 {} ({} layers, {} heads, width {}, vocabulary {}), {} weights {}, {:.1f}M parameters, "
                  "{} on the GPU\n",
             model_name, config.layers, config.heads, config.width, config.vocab, to_string(dtype),
             o.weights.empty() ? fmt::format("random (seed {})", o.seed) : "from " + o.weights,
             gpt2::parameter_count(config) / 1e6, format_bytes(model->device_bytes()));

  if (!o.check_logits.empty()) set.records.push_back(check_reference_logits(*model, o.check_logits, out));

  const Bandwidth bw = decode_bandwidth(o.device, o.bandwidth_gb_per_s, dtype);
  fmt::print(out, "HBM bandwidth for the ceiling: {} ({}); device {}\n\n", format_bytes_per_s(bw.bytes_per_s),
             bw.source, device.name);
  std::optional<DeviceCeilings> ceilings;
  if (bw.peak_flops)
    ceilings = DeviceCeilings{.source_text = bw.source,
                              .memory_bytes_per_s = bw.bytes_per_s,
                              .peak_flops_per_s = {{to_string(dtype), *bw.peak_flops}}};

  fmt::print(out, "{:>5} {:>7} {:>5} {:<11} {:>10} {:>10} {:>10} {:>9} {:>10} {:>7}  {}\n", "batch", "context", "mode",
             "method", "ms/step", "tokens/s", "bytes", "FLOP/B", "ceiling", "% ceil", "kernels, backend");
  // Steps run on a stream of their own (as an engine's would), not the legacy default stream.
  struct OwnedStream {
    cudaStream_t s = nullptr;
    OwnedStream() { RIDGE_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
    ~OwnedStream() {
      if (s) cudaStreamDestroy(s);
    }
  } stream;
  struct ModeTimes {
    double eager = 0, graph = 0;
  };
  std::map<std::pair<int, int>, ModeTimes> by_point;
  for (int batch : batches) {
    for (int context : contexts) {
      const int cached = context - 1;
      progress(fmt::format("decode: batch {}, context {}", batch, context));
      gpt2::Decoder decoder(*model,
                          {.batch = batch, .max_context = context, .gemm = gemm, .kernel = kernel, .pdl = !o.no_pdl});
      const StepCheck check = check_step(decoder, reference, dtype, cached, o.seed);
      if (!check.passed) {
        progress_done();
        throw VerificationError(fmt::format("GPT-2 decode at batch {}, context {} gave wrong logits: {}", batch, context,
                                            check.summary));
      }
      decoder.fill_random_cache(cached, o.seed);
      const gpt2::StepCost cost = decoder.cost(cached);
      const double ceiling = decode_ceiling(cost.weight_bytes, bw.bytes_per_s, batch, cost.kv_bytes_per_sequence);
      const nlohmann::json params{{"model", model_name},        {"batch", batch},
                                  {"context", context},         {"cached_tokens", cached},
                                  {"layers", config.layers},    {"heads", config.heads},
                                  {"width", config.width},      {"vocab", config.vocab},
                                  {"gemm", to_string(decoder.gemm())}, {"kernel", to_string(decoder.kernel())},
                                  {"pdl", !o.no_pdl},
                                  {"working_set_bytes", cost.bytes()}};
      auto eager_fn = [&](cuda_stream s) { decoder.launch_step(s); };
      const CudaOptions timing{.warmup = o.warmup, .samples = o.samples, .repeats = 1, .stream = stream.s};
      std::vector<std::pair<gpt2::Mode, Measurement>> measured;
      for (gpt2::Mode mode : modes) {
        if (mode == gpt2::Mode::eager) {
          measured.emplace_back(mode, measure_cuda(eager_fn, timing));
          // measure_spin counts a step's launches and never queues more than the driver holds.
          measured.emplace_back(mode, measure_spin(eager_fn, timing));
        } else {
          CudaOptions graph_timing = timing;
          graph_timing.repeats = 0;  // several steps per graph, a sample of about half a millisecond
          measured.emplace_back(mode, measure_graph(eager_fn, graph_timing));
        }
      }
      for (auto& [mode, m] : measured) {
        nlohmann::json p = params;
        p["mode"] = to_string(mode);
        Record r = to_record(m, "decode", to_string(dtype), p, cost.bytes(), cost.flops);
        r.verification = "passed";
        const double tokens_per_s = batch / r.median_s();
        r.extra = {{"tokens_per_s", tokens_per_s},
                   {"ms_per_step", r.summary.median},
                   {"decode_ceiling_tokens_per_s", ceiling},
                   {"fraction_of_ceiling", tokens_per_s / ceiling},
                   {"weight_bytes", cost.weight_bytes},
                   {"kv_bytes_per_sequence", cost.kv_bytes_per_sequence},
                   {"intensity_flop_per_byte", cost.intensity()},
                   {"bandwidth_bytes_per_s", bw.bytes_per_s},
                   {"bandwidth_source", bw.source},
                   {"kernels_per_step", decoder.kernels_per_step()},
                   {"check", check.summary},
                   {"meaning", describe(m.method)}};
        r.clocks_end = read_clocks(o.device);
        add_plausibility_warnings(r, ceilings, static_cast<double>(device.l2_bytes));
        if (tokens_per_s > ceiling * 1.02)
          r.warnings.push_back(fmt::format("impossible: {:.0f} tokens/s is above decode_ceiling ({:.0f}) at {}; the "
                                           "timer did not see the work",
                                           tokens_per_s, ceiling, format_bytes_per_s(bw.bytes_per_s)));
        if (mode == gpt2::Mode::eager && m.method == Method::cuda_events) by_point[{batch, context}].eager = r.summary.median;
        if (mode == gpt2::Mode::graph) by_point[{batch, context}].graph = r.summary.median;
        progress_done();
        fmt::print(out, "{:>5} {:>7} {:>5} {:<11} {:>10.4f} {:>10.0f} {:>10} {:>9.1f} {:>10.0f} {:>6.1f}%  {}, {} {}{}\n",
                   batch, context, to_string(mode), r.method, r.summary.median, tokens_per_s, format_bytes(cost.bytes()),
                   cost.intensity(), ceiling, 100 * tokens_per_s / ceiling, decoder.kernels_per_step(),
                   to_string(decoder.gemm()), to_string(decoder.kernel()), o.no_pdl ? "" : "+pdl");
        for (const auto& w : r.warnings) fmt::print(out, "      warning: {}\n", w);
        set.records.push_back(std::move(r));
      }
    }
  }
  progress_done();
  fmt::print(out, "\nbytes: weights read once per step ({}) + each sequence's KV cache up to its context; ceiling: "
                  "decode_ceiling in tokens/s at {}.\n",
             format_bytes(gpt2::step_cost(config, dtype == DType::fp32 ? 4 : 2, dtype == DType::fp32 ? 4 : 2, 1, 0)
                              .weight_bytes),
             format_bytes_per_s(bw.bytes_per_s));
  fmt::print(out, "cuda_events: per-step events (include the host's launch time); spin_hold: queue held while the "
                  "step is launched (GPU time); graph_replay: the step captured once, replayed.\n");
  for (const auto& [point, t] : by_point)
    if (t.eager > 0 && t.graph > 0)
      fmt::print(out, "batch {}, context {}: graph replay is {:.2f}x faster per step than eager launches\n",
                 point.first, point.second, t.eager / t.graph);
  if (!o.svg.empty()) write_plots(set, o.svg, bw, dtype, out);
  finish_result_set(set, o.device);
  return set;
}

namespace {

struct DecodeCommand {
  DecodeOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "decode", "the reference workload: GPT-2 decode steps in C++/CUDA against decode_ceiling", 60, [](CLI::App& app) {
      auto c = std::make_shared<DecodeCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--model", o.model, "GPT-2 preset: small (124M), medium, large, xl, tiny (tests)")
          ->default_val("small");
      app.add_option("--dtype", o.dtype, "weight and KV-cache type: bf16 or fp32 (fp32 accumulation either way)")
          ->default_val("bf16");
      app.add_option("--batch", o.batch, "comma-separated batch sizes (sequences per step)")->default_val("1");
      app.add_option("--context", o.context,
                     "comma-separated sequence lengths after the step, in tokens: N-1 cached plus the new one "
                     "(at most the model's positions, 1024 for GPT-2)")
          ->default_val("1024");
      app.add_option("--mode", o.mode, "eager, graph, or both (comma-separated)")->default_val("eager,graph");
      app.add_option("--gemm", o.gemm,
                     "matrix backend: auto (ridge's fused GEMV for batch <= 8, else cuBLASLt), gemv, cublas")
          ->default_val("auto");
      app.add_option("--kernel", o.kernel,
                     "how the gemv backend runs a step: auto (barrier where it fits, else chain), barrier (one "
                     "persistent kernel, grid barriers between phases), chain (one kernel per operation)")
          ->default_val("auto");
      app.add_flag("--no-pdl", o.no_pdl, "launch without programmatic dependent launch (no kernel overlap)");
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
      app.add_option("--bandwidth", o.bandwidth_gb_per_s,
                     "HBM bandwidth for decode_ceiling in GB/s (default: the measured ceiling, cached per device)")
          ->default_val(0);
      app.add_option("--svg", o.svg, "write the roofline plot here (and <name>-tokens.svg: tokens/s vs batch)");
      c->exports.add_to(app);
      return run_and_export(c, run_decode);
    }});

}  // namespace
}  // namespace ridge::cli
