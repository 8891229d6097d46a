#pragma once
// CPU-only building blocks of `ridge report`: the user's predictions, reference LLM sizes for the
// decode-ceiling table, and the Markdown -> self-contained HTML conversion.
// (Implementation: src/report/report.cpp, src/report/markdown_html.cpp.)
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge {

// ---- predictions -------------------------------------------------------------------------------

/// The keys of prediction_keys(), spelled once: sections store measurements under them
/// (ReportContext::measured) and users predict them (--predict KEY=VALUE).
namespace prediction {
inline constexpr const char* naive_over_sync = "naive_over_sync";
inline constexpr const char* matmul_fp32_4096_ms = "matmul_fp32_4096_ms";
inline constexpr const char* launch_overhead_us = "launch_overhead_us";
inline constexpr const char* hbm_tb_per_s = "hbm_tb_per_s";
inline constexpr const char* bf16_tflop_per_s = "bf16_tflop_per_s";
inline constexpr const char* ridge_point_bf16 = "ridge_point_bf16";
inline constexpr const char* add_tb_per_s = "add_tb_per_s";
inline constexpr const char* add_fraction_of_datasheet = "add_fraction_of_datasheet";
inline constexpr const char* matmul_70pct_n = "matmul_70pct_n";
inline constexpr const char* decode_tokens_per_s = "decode_tokens_per_s";
inline constexpr const char* decode_fraction_of_ceiling = "decode_fraction_of_ceiling";
inline constexpr const char* kernels_per_step = "kernels_per_step";
inline constexpr const char* launch_gap_fraction = "launch_gap_fraction";
}  // namespace prediction

/// A quantity the report can measure, which a user may predict with `--predict KEY=VALUE`.
struct PredictionKey {
  std::string key;          ///< e.g. "hbm_tb_per_s"
  std::string unit;         ///< e.g. "TB/s"
  std::string description;  ///< what exactly is measured
  std::string section;      ///< the report section that measures it
};

/// The keys the report knows, in display order.
const std::vector<PredictionKey>& prediction_keys();

/// Parses "KEY=VALUE" (VALUE a finite number). Throws UsageError saying what is wrong.
std::pair<std::string, double> parse_prediction(const std::string& text);

struct PredictionOutcome {
  std::string key;
  double predicted = 0;
  std::optional<double> measured;
  bool known = false;  ///< key is in prediction_keys()
  std::string unit, description;
  /// (predicted - measured) / measured; nullopt when not measured or measured == 0.
  std::optional<double> relative_error() const;
};

/// Joins predictions ({key: number}) with what was measured ({key: number}), in prediction order.
std::vector<PredictionOutcome> evaluate_predictions(const nlohmann::json& predictions,
                                                    const std::map<std::string, double>& measured);

/// Markdown table: prediction, measurement, error; unknown and unmeasured keys say so.
std::string predictions_markdown(const std::vector<PredictionOutcome>& outcomes);

// ---- reference models for decode ceilings ------------------------------------------------------

/// A decoder-only transformer, enough to bound its decode speed.
struct ReferenceModel {
  std::string name;               ///< e.g. "GPT-2 small"
  double parameters = 0;          ///< all parameters
  double parameters_read_per_step = 0;  ///< parameters every decode step must read (untied input embeddings excluded)
  std::string dtype;              ///< weight and KV-cache dtype, e.g. "bf16"
  double bytes_per_element = 2;
  int layers = 0;
  int kv_width = 0;  ///< key (= value) width per layer per token: kv heads * head dim
  int context = 0;   ///< tokens of KV cache per sequence assumed in the table
  std::string source;
  /// Bytes every step reads for the weights.
  double weight_bytes_read() const { return parameters_read_per_step * bytes_per_element; }
  /// Bytes of all weights resident in memory.
  double weight_bytes_resident() const { return parameters * bytes_per_element; }
  /// K and V of every layer for `context` tokens of one sequence, in bytes.
  double kv_bytes_per_sequence() const { return 2.0 * layers * kv_width * double(context) * bytes_per_element; }
};

/// GPT-2 small/medium/large/xl (fp32, context 1024) and Llama-3.2 1B, Llama-3.1 8B and 70B (bf16, context 4096).
const std::vector<ReferenceModel>& reference_models();

// ---- Markdown -> HTML --------------------------------------------------------------------------

/// An SVG document made safe to inline in HTML: no XML prolog or DOCTYPE, no namespace
/// declarations (HTML5 knows <svg>), and every id prefixed with `id_prefix` so several plots in
/// one page never share clip paths or markers.
std::string svg_for_inline(const std::string& svg, const std::string& id_prefix);

/// A self-contained HTML page (inline CSS, no scripts, no network) from the Markdown the report
/// writes: headings (h2s also listed in a contents bar), paragraphs, pipe tables (\| is a pipe
/// inside a cell), bullet and numbered lists, block quotes, fenced code, and inline `code`,
/// **bold**, *italics* / _italics_ (bold and italics may hold code spans), [links](target) and
/// backslash escapes; images on a line of their own. An image whose target is a key of `svgs` is
/// replaced by that SVG inline. Web links are cited as text without their scheme, so the page
/// references nothing on the network. <, > and & in text come out escaped.
std::string markdown_to_html(const std::string& markdown, const std::map<std::string, std::string>& svgs,
                             const std::string& title);

/// The inline part of markdown_to_html for one line of text: code spans, bold, italics, links,
/// backslash escapes, HTML escaping.
std::string markdown_inline_html(const std::string& text);

}  // namespace ridge
