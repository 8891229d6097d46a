// `ridge decode` as a library call, CPU part: options and their validation, list parsing, the
// plots. The run itself is in cuda/decode.cpp.
#include "ridge/gpt2/decode.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/roofline.hpp"

namespace ridge::gpt2 {

void DecodeOptions::validate() const {
  if (dtype != DType::fp32 && dtype != DType::bf16)
    throw UsageError(fmt::format("dtype must be fp32 or bf16 for decode, got {}", to_string(dtype)));
  if (batches.empty()) throw UsageError("batches needs at least one value");
  if (contexts.empty()) throw UsageError("contexts needs at least one value");
  for (int b : batches)
    if (b < 1) throw UsageError(fmt::format("batches: {} is not a positive integer", b));
  for (int c : contexts)
    if (c < 1) throw UsageError(fmt::format("contexts: {} is not a positive integer", c));
  if (modes.empty()) throw UsageError("modes needs eager, graph or both");
  if (samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", samples));
  if (warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", warmup));
  if (!(bandwidth_bytes_per_s >= 0 && std::isfinite(bandwidth_bytes_per_s)))
    throw UsageError(fmt::format("bandwidth_bytes_per_s must be a finite number >= 0 (0: the measured ceiling), got {}",
                                 bandwidth_bytes_per_s));
  if (heads < 0) throw UsageError(fmt::format("heads must be >= 0 (0: width/64), got {}", heads));
  if (!weights.empty() && !std::filesystem::exists(weights))
    throw UsageError(fmt::format("weights: file '{}' does not exist", weights));
  // The weights file's header is read here, so a malformed file is refused before any GPU work.
  const Config config = weights.empty() ? preset(model)
                                        : check_weights_file(weights, heads > 0 ? std::optional<int>(heads)
                                                                                : std::nullopt);
  const std::string model_name = weights.empty() ? "GPT-2 " + config.name : "the weights in '" + weights + "'";
  for (int c : contexts)
    if (c > config.context)
      throw UsageError(fmt::format("contexts: {} exceeds {}'s {} positions", c, model_name, config.context));
  if (!check_logits.empty() && !std::filesystem::exists(check_logits))
    throw UsageError(fmt::format("check_logits: file '{}' does not exist", check_logits));
  if (!check_logits.empty()) check_reference_logits_file(check_logits, config);
  if (!timeline_path.empty() && batches.size() * contexts.size() != 1)
    throw UsageError(fmt::format("timeline_path records one configuration's step; got {} batches x {} contexts",
                                 batches.size(), contexts.size()));
}

DecodeOptions DecodeOptions::quick(int device) {
  DecodeOptions o;
  o.device = device;
  o.batches = {1, 8};
  o.samples = 10;
  o.warmup = 3;
  return o;
}

std::vector<int> parse_positive_ints(const std::string& text, const std::string& what) {
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
      throw UsageError(fmt::format("{}: '{}' is not a positive integer (give a comma-separated list, e.g. 1,8,64)",
                                   what, item));
    }
  }
  if (values.empty()) throw UsageError(fmt::format("{} needs at least one value", what));
  return values;
}

std::vector<Mode> parse_modes(const std::string& text) {
  std::vector<Mode> modes;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) modes.push_back(mode_from_string(item));
  if (modes.empty()) throw UsageError("modes needs eager, graph or both");
  return modes;
}

std::optional<double> DecodeConfiguration::graph_speedup() const {
  if (eager_ms > 0 && graph_ms > 0) return eager_ms / graph_ms;
  return std::nullopt;
}

namespace {

void sort_by_x(PlotSeries& s) {
  std::sort(s.points.begin(), s.points.end(), [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
}

bool is_plotted(const Record& r) { return r.name == "decode" && r.method != Method::spin_hold; }

std::string series_key(const Record& r) {
  return fmt::format("{} ({}), context {}", r.params.value(param_key::mode, ""), to_string(r.method),
                     r.params.value(param_key::context, 0));
}

}  // namespace

Plot decode_roofline_plot(const DecodeRun& run) {
  std::vector<const Record*> plotted;
  for (const auto& r : run.records)
    if (is_plotted(r)) plotted.push_back(&r);
  if (plotted.empty()) return Plot{};
  // Series in key order, each left to right.
  std::stable_sort(plotted.begin(), plotted.end(), [](const Record* a, const Record* b) {
    const std::string ka = series_key(*a), kb = series_key(*b);
    return ka != kb ? ka < kb : a->intensity_flop_per_byte() < b->intensity_flop_per_byte();
  });
  std::vector<RooflineOperation> operations;
  for (const Record* r : plotted)
    operations.push_back({fmt::format("B={}", r->params.value(param_key::batch, 0)), to_string(r->dtype),
                          r->intensity_flop_per_byte(), r->flops_per_s(), series_key(*r), ""});
  // Without a measured peak (e.g. --bandwidth) the roof is the fastest known GPU's.
  DeviceCeilings ceilings = run.ceilings;
  const std::string dtype = to_string(run.dtype);
  if (!(ceilings.peak_flops(dtype) > 0)) ceilings.peak_flops_per_s[dtype] = fastest_known_peak_flops(run.dtype);
  RooflinePlotOptions options;
  options.title = fmt::format("GPT-2 decode on the roofline ({} at {}, peak {})", dtype,
                              format_bytes_per_s(ceilings.memory_bytes_per_s), format_flops(ceilings.peak_flops(dtype)));
  options.dtypes = {dtype};
  Plot roof = roofline_plot(ceilings, operations, options);
  roof.y_label = "achieved (FLOP/s)";
  return roof;
}

Plot decode_tokens_plot(const DecodeRun& run) {
  Plot tokens;
  tokens.title = "GPT-2 decode: tokens/s against batch";
  tokens.x_label = "batch (sequences)";
  tokens.y_label = "tokens/s";
  std::map<std::string, PlotSeries> measured, ceilings;
  for (const auto& r : run.records) {
    if (!is_plotted(r)) continue;
    const double batch = r.params.value(param_key::batch, 1);
    auto& s = measured[series_key(r)];
    s.name = series_key(r);
    s.points.push_back({batch, extra_key::tokens_per_s.get(r), ""});
    const std::string ckey = fmt::format("decode_ceiling, context {}", r.params.value(param_key::context, 0));
    auto& c = ceilings[ckey];
    c.name = ckey;
    c.dashed = true;
    c.markers = false;
    c.points.push_back({batch, extra_key::decode_ceiling_tokens_per_s.get(r), ""});
  }
  for (auto& [key, s] : measured) {
    sort_by_x(s);
    tokens.series.push_back(s);
  }
  for (auto& [key, s] : ceilings) {
    sort_by_x(s);
    s.points.erase(std::unique(s.points.begin(), s.points.end(), [](auto& a, auto& b) { return a.x == b.x; }),
                   s.points.end());
    tokens.series.push_back(s);
  }
  return tokens;
}

}  // namespace ridge::gpt2
