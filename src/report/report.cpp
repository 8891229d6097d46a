#include "ridge/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/errors.hpp"

namespace ridge {

// ---- predictions -------------------------------------------------------------------------------

const std::vector<PredictionKey>& prediction_keys() {
  static const std::vector<PredictionKey> keys{
      {prediction::naive_over_sync, "ratio",
       "unsynchronized wall-clock reading / synchronized wall clock, FP32 4096^2 matmul (the three-clocks timing exercise)",
       "timing"},
      {prediction::matmul_fp32_4096_ms, "ms", "FP32 4096^2 matmul, median by CUDA events", "timing"},
      {prediction::launch_overhead_us, "us",
       "256^2 BF16 matmul: per-sample events minus the launch-free time (spin hold / graph replay)", "timing"},
      {prediction::hbm_tb_per_s, "TB/s", "measured HBM bandwidth, reads + writes counted", "ceilings"},
      {prediction::bf16_tflop_per_s, "TFLOP/s", "measured dense BF16 GEMM peak", "ceilings"},
      {prediction::ridge_point_bf16, "FLOP/byte", "measured BF16 peak / measured HBM bandwidth", "ceilings"},
      {prediction::add_tb_per_s, "TB/s", "x + y (FP32) at the largest size of the bandwidth sweep", "bandwidth"},
      {prediction::add_fraction_of_datasheet, "ratio", "x + y at the largest size / datasheet bandwidth", "bandwidth"},
      {prediction::matmul_70pct_n, "n", "smallest square size at which BF16 matmul reaches 70% of the measured peak",
       "matmul"},
      {prediction::decode_tokens_per_s, "tokens/s", "GPT-2 small decode, batch 1, CUDA graph", "decode"},
      {prediction::decode_fraction_of_ceiling, "ratio", "GPT-2 small decode tokens/s / decode_ceiling", "decode"},
      {prediction::kernels_per_step, "kernels", "kernels launched by one GPT-2 decode step", "profile"},
      {prediction::launch_gap_fraction, "ratio", "fraction of one decode step the GPU sat idle waiting for the host",
       "profile"},
  };
  return keys;
}

std::pair<std::string, double> parse_prediction(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("prediction '{}': expected KEY=VALUE, e.g. hbm_tb_per_s=4.2", text));
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  for (char c : key)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      throw UsageError(fmt::format("prediction '{}': keys are lower-case letters, digits and '_'", text));
  double number = 0;
  std::size_t used = 0;
  try {
    number = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (value.empty() || used != value.size() || !std::isfinite(number))
    throw UsageError(fmt::format("prediction '{}': VALUE must be a plain number (units are fixed per key)", text));
  return {key, number};
}

std::optional<double> PredictionOutcome::relative_error() const {
  if (!measured || *measured == 0) return std::nullopt;
  return (predicted - *measured) / *measured;
}

std::vector<PredictionOutcome> evaluate_predictions(const nlohmann::json& predictions,
                                                    const std::map<std::string, double>& measured) {
  std::vector<PredictionOutcome> out;
  if (!predictions.is_object()) return out;
  for (auto it = predictions.begin(); it != predictions.end(); ++it) {
    if (!it->is_number()) continue;
    PredictionOutcome o;
    o.key = it.key();
    o.predicted = it->get<double>();
    for (const auto& k : prediction_keys())
      if (k.key == o.key) {
        o.known = true;
        o.unit = k.unit;
        o.description = k.description;
      }
    if (auto m = measured.find(o.key); m != measured.end()) o.measured = m->second;
    out.push_back(std::move(o));
  }
  return out;
}

namespace {
std::string number_text(double v) {
  if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-3)) return fmt::format("{:.3g}", v);
  return fmt::format("{:.4g}", v);
}
}  // namespace

std::string predictions_markdown(const std::vector<PredictionOutcome>& outcomes) {
  std::ostringstream out;
  if (outcomes.empty()) {
    out << "No predictions were made. Commit a number before you run: next time, try\n"
           "predictions `matmul_70pct_n=2048` and `hbm_tb_per_s=4.0` (`ridge report` with predict, or\n"
           "`ridge.report(predictions={\"matmul_70pct_n\": 2048, \"hbm_tb_per_s\": 4.0})`).\n\n";
  } else {
    out << "| key | what | predicted | measured | error |\n|---|---|---:|---:|---:|\n";
    for (const auto& o : outcomes) {
      std::string measured = "not measured in this run", error = "-";
      if (!o.known) measured = "unknown key: not measured";
      if (o.measured) {
        if (auto e = o.relative_error()) error = fmt::format("{:+.1f}%", *e * 100);
      }
      const std::string unit = o.unit.empty() || o.unit == "ratio" ? "" : " " + o.unit;
      if (o.measured) measured = number_text(*o.measured) + unit;
      out << fmt::format("| `{}` | {} | {}{} | {} | {} |\n", o.key, o.known ? o.description : "(not a key ridge knows)",
                         number_text(o.predicted), unit, measured, error);
    }
    out << "\nError = (predicted - measured) / measured.\n\n";
  }
  out << "Keys ridge knows:\n\n| key | unit | what | measured by |\n|---|---|---|---|\n";
  for (const auto& k : prediction_keys())
    out << fmt::format("| `{}` | {} | {} | {} |\n", k.key, k.unit, k.description, k.section);
  return out.str();
}

void detail::use_datasheet_ceilings(ReportContext& ctx, const CatalogEntry& entry) {
  ctx.ceilings = entry.ceilings;
  if (ctx.memory_bytes <= 0) ctx.memory_bytes = entry.memory_bytes;
}

// ---- reference models ----------------------------------------------------------------------------

const std::vector<ReferenceModel>& reference_models() {
  // GPT-2 ties its output layer to the token embedding, so every parameter is read each step
  // (wpe is read one row at a time, negligible and counted anyway). Llama-3.1 8B/70B do not tie:
  // their input embedding table (vocab 128,256 x width) is only gathered, B rows per step.
  static const std::vector<ReferenceModel> models{
      {"GPT-2 small", 124'439'808, 124'439'808, "fp32", 4, 12, 768, 1024, "HF gpt2 config: 12 layers, width 768"},
      {"GPT-2 medium", 354'823'168, 354'823'168, "fp32", 4, 24, 1024, 1024, "HF gpt2-medium: 24 layers, width 1024"},
      {"GPT-2 large", 774'030'080, 774'030'080, "fp32", 4, 36, 1280, 1024, "HF gpt2-large: 36 layers, width 1280"},
      {"GPT-2 xl", 1'557'611'200, 1'557'611'200, "fp32", 4, 48, 1600, 1024, "HF gpt2-xl: 48 layers, width 1600"},
      {"Llama-3.2 1B", 1'235'814'400, 1'235'814'400, "bf16", 2, 16, 8 * 64, 4096,
       "16 layers, 8 KV heads x 64, tied embeddings"},
      {"Llama-3.1 8B", 8'030'261'248, 8'030'261'248 - 128'256.0 * 4096, "bf16", 2, 32, 8 * 128, 4096,
       "32 layers, 8 KV heads x 128 (GQA)"},
      {"Llama-3.1 70B", 70'553'706'496, 70'553'706'496 - 128'256.0 * 8192, "bf16", 2, 80, 8 * 128, 4096,
       "80 layers, 8 KV heads x 128 (GQA)"},
  };
  return models;
}

}  // namespace ridge
