// The report sections that need no GPU: the catalog roofline (model-only reports), decode
// ceilings, Amdahl's law and the predictions. Everything here is arithmetic on the context's ceilings.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/report.hpp"
#include "ridge/roofline.hpp"

namespace ridge::detail {

namespace {

// 12345.6 -> "12,346": tokens/s read better with separators.
std::string grouped(double value) {
  std::string digits = fmt::format("{:.0f}", value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

// ---- 110: the catalog device's roofline (model-only) ---------------------------------------------

struct ExampleOp {
  std::string name;
  std::string dtype;  ///< which roof applies
  double flops, bytes;
};
}  // namespace

SectionOutput model_roofline_section(ReportContext& ctx) {
  SectionOutput out;
  std::string& md = out.markdown;
  if (!ctx.datasheet || ctx.ceilings.memory_bytes_per_s <= 0) {
    md += "No catalog entry: no model roofline.\n\n";
    return out;
  }
  const CatalogEntry& e = *ctx.datasheet;
  const DeviceCeilings& c = e.ceilings;
  md += fmt::format("Datasheet figures of the **{}** (dense, no sparsity){}:\n\n", e.name,
                    e.source.empty() ? "" : "; source: " + e.source);
  md += "| figure | value | ridge point (FLOP/byte) |\n|---|---:|---:|\n";
  md += fmt::format("| HBM bandwidth | {} | |\n| memory | {} | |\n", format_bytes_per_s(c.memory_bytes_per_s),
                    format_bytes(e.memory_bytes));
  for (const auto& [dtype, flops] : c.peak_flops_per_s)
    md += fmt::format("| {} peak | {} | {:.0f} |\n", dtype, format_flops(flops), c.ridge_point(dtype));
  md += "\n";

  // The chapter's example operations, placed on the roof (what the best possible kernel would reach).
  const double k = 4096;
  std::vector<ExampleOp> ops{
      {"x + y, FP32 (any size)", "fp32", 1, 12},
      {"decode: [1,4096] @ [4096,4096] BF16", "bf16", matmul_flops(1, k, k), matmul_bytes(1, k, k)},
      {"batched decode, B = 8", "bf16", matmul_flops(8, k, k), matmul_bytes(8, k, k)},
      {"batched decode, B = 128", "bf16", matmul_flops(128, k, k), matmul_bytes(128, k, k)},
      {"batched decode, B = 512", "bf16", matmul_flops(512, k, k), matmul_bytes(512, k, k)},
      {"prefill: 4096^3 BF16 GEMM", "bf16", matmul_flops(k, k, k), matmul_bytes(k, k, k)},
  };
  std::vector<RooflineOperation> points;
  md += "Example operations placed on it. These are not measurements: each sits on the roof, the most any "
        "kernel could reach.\n\n";
  md += "| operation | intensity (FLOP/byte) | bound | attainable | of that dtype's peak | fastest possible time |\n"
        "|---|---:|---|---:|---:|---:|\n";
  for (const auto& op : ops) {
    const double peak = c.peak_flops(op.dtype);
    if (!(peak > 0)) continue;
    // At the roof: the attainable rate is the rate the operation is placed at.
    RooflineOperation point{.dtype = op.dtype, .intensity_flop_per_byte = op.flops / op.bytes};
    point.flops_per_s = attainable_flops(point.intensity_flop_per_byte, peak, c.memory_bytes_per_s);
    const auto placed = place_on_roofline(c, point);
    const double floor_s = roofline_floor_s(op.bytes, op.flops, peak, c.memory_bytes_per_s);
    md += fmt::format("| {} | {:.3g} | {} | {} | {} | {} |\n", op.name, point.intensity_flop_per_byte,
                      to_string(placed.bound), format_flops(placed.attainable_flops_per_s),
                      format_percent(placed.attainable_flops_per_s / peak, 1),
                      op.name.rfind("x + y", 0) == 0 ? "-" : format_ms(floor_s * 1e3));
    std::string label = op.name.substr(0, op.name.find(':'));
    if (label.rfind("batched decode, ", 0) == 0) label = label.substr(16);
    if (label.rfind("x + y", 0) == 0) label = "x + y";
    point.label = label;
    point.series = "example operations (best possible)";
    points.push_back(point);
  }
  const Plot plot = roofline_plot(c, points,
                                  {.title = fmt::format("Roofline of the {} (datasheet)", e.name),
                                   .dtypes = {"fp8_e4m3", "bf16", "tf32", "fp32"},
                                   .x_min = 0.05,
                                   .x_max = 5000});
  out.svgs.push_back({"roofline-model.svg", render_svg(plot)});
  md += "\n![roofline of the catalog device with example operations](roofline-model.svg)\n\n";
  const double bf16_ridge = c.ridge_point("bf16");
  md += fmt::format("Below the BF16 ridge point ({:.0f} FLOP/byte) no kernel can use the tensor cores fully: decode at "
                    "batch 1 is memory-bound by a factor of about {:.0f}.\n\n",
                    bf16_ridge, bf16_ridge / matmul_intensity(1, k, k));
  out.data = {{"catalog_key", e.key},
              {"bandwidth_bytes_per_s", c.memory_bytes_per_s},
              {"peak_flops", c.peak_flops_per_s},
              {"ceilings", to_json(c)}};
  return out;
}

// ---- 120: decode ceilings ------------------------------------------------------------------------

SectionOutput decode_ceilings_section(ReportContext& ctx) {
  SectionOutput out;
  std::string& md = out.markdown;
  const double bw = ctx.ceilings.memory_bytes_per_s;
  if (bw <= 0) {
    md += "No bandwidth is known for this GPU: no decode ceilings.\n\n";
    return out;
  }
  const std::vector<int> batches{1, 8, 32, 128};
  md += fmt::format(
      "`decode_ceiling(weight_bytes, bandwidth, batch, kv_bytes_per_sequence)`: the most tokens/s a decode step can "
      "produce when it must read every weight once (shared by the batch) plus each sequence's own KV cache, at {} "
      "({}). Tokens/s are summed over the batch; every sequence holds a full context of the stated length "
      "(tokens).\n\n",
      format_bytes_per_s(bw), ctx.ceilings.source_text);
  md += "| model | dtype | weights / step | KV / sequence | context |";
  for (int b : batches) md += fmt::format(" batch {} |", b);
  md += "\n|---|---|---:|---:|---:|";
  for (std::size_t i = 0; i < batches.size(); ++i) md += "---:|";
  md += "\n";
  bool any_compute_bound = false, any_too_big = false;
  nlohmann::json data = nlohmann::json::array();
  Plot plot;
  plot.title = fmt::format("Decode ceilings at {}", format_bytes_per_s(bw));
  plot.x_label = "batch (sequences)";
  plot.y_label = "tokens/s (whole batch)";
  for (const auto& m : reference_models()) {
    const double kv = m.kv_bytes_per_sequence();
    md += fmt::format("| {} | {} | {} | {} | {} |", m.name, m.dtype, format_bytes(m.weight_bytes_read()),
                      format_bytes(kv), m.context);
    const double peak = ctx.ceilings.peak_flops(m.dtype);
    nlohmann::json row{{"model", m.name}, {"dtype", m.dtype}, {"weight_bytes_read", m.weight_bytes_read()},
                       {"kv_bytes_per_sequence", kv}, {"context", m.context}};
    for (int b : batches) {
      const double resident = m.weight_bytes_resident() + b * kv;
      if (ctx.memory_bytes > 0 && resident > ctx.memory_bytes) {
        md += fmt::format(" too big ({:.0f} GB) |", resident / 1e9);
        any_too_big = true;
        row["tokens_per_s"][std::to_string(b)] = nullptr;
        continue;
      }
      const double tps = decode_ceiling(m.weight_bytes_read(), bw, b, kv);
      // Compute time of the step at the dtype's peak: 2 FLOPs per weight per token.
      const bool compute_bound = peak > 0 &&
                                 2 * m.parameters_read_per_step * b / peak >
                                     (m.weight_bytes_read() + b * kv) / bw;
      any_compute_bound |= compute_bound;
      md += fmt::format(" {}{} |", grouped(tps), compute_bound ? " †" : "");
      row["tokens_per_s"][std::to_string(b)] = tps;
    }
    md += "\n";
    data.push_back(row);
    PlotSeries s{.name = m.name};
    for (int b = 1; b <= 256; b *= 2) {
      if (ctx.memory_bytes > 0 && m.weight_bytes_resident() + b * kv > ctx.memory_bytes) break;
      s.points.push_back({double(b), decode_ceiling(m.weight_bytes_read(), bw, b, kv), ""});
    }
    if (!s.points.empty()) plot.series.push_back(std::move(s));
  }
  md += "\n";
  if (any_compute_bound)
    md += "† at this batch the arithmetic (2 FLOPs per weight per token at the dtype's peak) takes longer than the "
          "memory traffic: the compute roof, not this ceiling, is the limit.\n\n";
  if (any_too_big)
    md += fmt::format("\"too big\": weights plus the batch's KV cache exceed the {} of device memory.\n\n",
                      format_bytes(ctx.memory_bytes));
  md += "Weights read per step: GPT-2 ties its output layer to the token embedding, so every parameter is read; "
        "Llama-3.1 8B/70B only gather B rows of their input embedding table, which is left out. KV per sequence = "
        "2 (K and V) x layers x KV width x context x bytes per element.\n\n";
  if (!plot.series.empty()) {
    out.svgs.push_back({"decode-ceilings.svg", render_svg(plot)});
    md += "![decode ceilings over batch size](decode-ceilings.svg)\n\n";
  }
  out.data = {{"bandwidth_bytes_per_s", bw}, {"source", ctx.ceilings.source_text}, {"models", data}};
  return out;
}

// ---- 130: Amdahl's law ---------------------------------------------------------------------------

SectionOutput amdahl_section(ReportContext&) {
  SectionOutput out;
  std::string& md = out.markdown;
  const double inf = std::numeric_limits<double>::infinity();
  struct Example {
    double f, s;
    std::string note;
  };
  const std::vector<Example> examples{
      {0.10, inf, "a 10% operation made infinitely fast"},
      {0.30, 3, "a kernel taking 30% made 3x faster"},
      {0.50, 2, ""},
      {0.90, 10, ""},
      {0.90, inf, ""},
  };
  md += "If a fraction f of the time runs s times faster, the whole program speeds up by 1 / ((1 - f) + f / s). "
        "Profile first, then optimize the biggest bar.\n\n";
  md += "| fraction f | part made faster by s | whole program | limit (s = infinity) | |\n|---:|---:|---:|---:|---|\n";
  nlohmann::json data = nlohmann::json::array();
  for (const auto& ex : examples) {
    const double whole = amdahl_speedup(ex.f, ex.s);
    md += fmt::format("| {:.0f}% | {} | **{:.2f}x** | {:.2f}x | {} |\n", ex.f * 100,
                      std::isinf(ex.s) ? std::string("infinitely") : fmt::format("{:g}x", ex.s), whole,
                      amdahl_limit(ex.f), ex.note);
    data.push_back({{"fraction", ex.f}, {"speedup", std::isinf(ex.s) ? -1 : ex.s}, {"whole", whole}});
  }
  md += "\n";
  if (auto need = amdahl_required_speedup(0.30, 1.2))
    md += fmt::format("For the whole program to run 1.2x faster, a 30% part must become {:.2f}x faster; a 10% part "
                      "cannot get there at all (its limit is {:.2f}x).\n\n",
                      *need, amdahl_limit(0.10));
  Plot plot;
  plot.title = "Amdahl's law";
  plot.x_label = "speedup of the part (s)";
  plot.y_label = "speedup of the whole program";
  // Log y too: the 10% and 30% curves (the classic examples) stay readable next to the 90% one.
  plot.y_min = 1;
  plot.y_max = 10;
  for (double f : {0.1, 0.3, 0.5, 0.9}) {
    PlotSeries s{.name = fmt::format("f = {:.0f}% (limit {:.2f}x)", f * 100, amdahl_limit(f)), .markers = false};
    for (double e = 0; e <= 3.0001; e += 0.125) {
      const double sp = std::pow(10.0, e);
      s.points.push_back({sp, amdahl_speedup(f, sp), ""});
    }
    plot.series.push_back(std::move(s));
  }
  out.svgs.push_back({"amdahl.svg", render_svg(plot)});
  md += "![whole-program speedup against the speedup of one part](amdahl.svg)\n\n";
  out.data = {{"examples", data}};
  return out;
}

// ---- 200: predictions ----------------------------------------------------------------------------

SectionOutput predictions_section(ReportContext& ctx) {
  SectionOutput out;
  const auto outcomes = evaluate_predictions(ctx.results->context.predictions, ctx.measured);
  if (!ctx.gpu && !outcomes.empty())
    out.markdown += "Model-only report: nothing was measured, so no prediction can be scored here.\n\n";
  out.markdown += predictions_markdown(outcomes);
  nlohmann::json data = nlohmann::json::array();
  for (const auto& o : outcomes) {
    nlohmann::json row{{"key", o.key}, {"predicted", o.predicted}, {"known", o.known}};
    row["measured"] = o.measured ? nlohmann::json(*o.measured) : nlohmann::json(nullptr);
    const auto err = o.relative_error();
    row["relative_error"] = err ? nlohmann::json(*err) : nlohmann::json(nullptr);
    data.push_back(row);
  }
  out.data = {{"predictions", data}};
  return out;
}

}  // namespace ridge::detail
