// The report's one set of ceilings: a measured peak that a record of the run beat is raised once
// (raise_to_attained), and every section that prints a peak (the ceilings table, the roofline)
// is rendered from the raised figure. CPU-only, so the tests render them from stored records.
#include <algorithm>

#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

namespace ridge::detail {

std::vector<std::string> raise_report_ceilings(ReportContext& ctx, const std::vector<Record>& records) {
  std::vector<std::string> notes = raise_to_attained(ctx.ceilings, records);
  const double bf16 = ctx.ceilings.peak_flops("bf16");
  // The summary and the predictions read these: they follow the raised peak.
  if (!notes.empty() && bf16 > 0 && ctx.measured.count(prediction::bf16_tflop_per_s)) {
    ctx.measured[prediction::bf16_tflop_per_s] = bf16 / 1e12;
    if (ctx.ceilings.memory_bytes_per_s > 0) ctx.measured[prediction::ridge_point_bf16] = ctx.ceilings.ridge_point("bf16");
  }
  return notes;
}

std::string raised_peak_note(const DeviceCeilings& measured, const DeviceCeilings& report, const std::string& dtype,
                             const std::vector<Record>& records) {
  const double before = measured.peak_flops(dtype), after = report.peak_flops(dtype);
  if (!(before > 0) || !(after > before)) return "";
  // raise_to_attained sets the peak to the best record's rate, so that record has it exactly.
  const auto by = std::find_if(records.begin(), records.end(), [&](const Record& r) {
    return r.dtype && to_string(*r.dtype) == dtype && r.flops > 0 && r.flops_per_s() == after;
  });
  std::string who = "a record of this run";
  if (by != records.end())
    who = by->params.contains(param_key::n) ? fmt::format("{} n={}", by->name, by->params[param_key::n].dump())
                                            : fmt::format("{} ({})", by->name, params_text(by->params));
  return fmt::format("raised from {}: {} reached {}", format_flops(before), who, format_flops(after));
}

namespace {
// The comparison's rows under the names this report has always used.
std::string ceilings_row_name(const CeilingComparison& row, const MeasuredCeilings& m) {
  if (row.ceiling == "memory bandwidth") return fmt::format("HBM bandwidth ({})", m.hbm_kernel);
  if (row.bandwidth) return row.ceiling;
  if (row.dtype == "fp32") return "FP32 (FMA)";
  return row.dtype + " tensor (GEMM)";
}
}  // namespace

std::string ceilings_markdown(const MeasuredCeilings& m, const std::optional<CatalogEntry>& datasheet,
                              const DeviceCeilings& report, const std::vector<Record>& records) {
  std::string md;
  if (m.from_cache)
    md += fmt::format("What this GPU's memory and arithmetic units deliver, **carried over from the per-GPU cache: "
                      "measured {}**, not in this run (`ridge report` with remeasure-ceilings, or "
                      "`ridge.ceilings(refresh=True)`, measures them again).\n\n",
                      m.measured_at_utc);
  else
    md += fmt::format("What this GPU's memory and arithmetic units deliver, measured in this run ({}; cached per GPU "
                      "for later runs).\n\n",
                      m.measured_at_utc);
  md += fmt::format("| ceiling | {} | datasheet | measured / datasheet |\n|---|---:|---:|---:|\n",
                    m.from_cache ? "measured " + m.measured_at_utc.substr(0, 10) + " (cache)" : std::string("measured now"));
  // Rows with nothing measured (e.g. the datasheet's FP64) are left out: the section is about what
  // was measured. A peak the run beat shows the report's raised figure, saying so.
  for (const auto& row : compare_ceilings(datasheet, m)) {
    if (!(row.measured > 0) && !row.bandwidth) continue;
    const auto f = [&](double v) {
      if (!(v > 0)) return std::string("-");
      return row.bandwidth ? format_bytes_per_s(v) : format_flops(v);
    };
    const std::string raised = row.bandwidth ? "" : raised_peak_note(m.ceilings, report, row.dtype, records);
    const double value = raised.empty() ? row.measured : report.peak_flops(row.dtype);
    md += fmt::format("| {} | {}{} | {} | {} |\n", ceilings_row_name(row, m), f(value),
                      raised.empty() ? "" : " (" + raised + ")", f(row.datasheet),
                      format_percent(raised.empty() || !(row.datasheet > 0) ? row.fraction_of_datasheet() : value / row.datasheet, 0));
  }
  md += fmt::format("\nAn empty kernel takes {:.2f} us (launch-free timing).\n\n", m.ceilings.empty_launch_us);
  if (const double ridge = report.ridge_point("bf16"); ridge > 0)
    md += fmt::format("Measured BF16 ridge point: **{:.0f} FLOP/byte**: below it an operation is memory-bound.\n\n", ridge);
  return md;
}

SectionOutput roofline_output(const DeviceCeilings& c, const std::vector<Record>& records, std::size_t count) {
  SectionOutput out;
  std::string& md = out.markdown;
  if (!c.usable()) {
    md += "No ceilings are known for this GPU (nothing measured, no datasheet match): no roofline.\n\n";
    return out;
  }
  // Every record with counted FLOPs and bytes, one plot series per name, method and dtype.
  std::vector<RooflineOperation> operations;
  std::vector<const Record*> placed;
  RooflinePlotOptions plot_options{.title = fmt::format("Roofline ({})", c.source_text),
                                   .dtypes = {"fp8_e4m3", "bf16", "tf32", "fp32"},
                                   .x_min = 0.05,
                                   .x_max = 2000};
  for (std::size_t i = 0; i < records.size() && i < count; ++i) {
    const Record& r = records[i];
    auto op = roofline_operation(r);
    if (!op) continue;
    op->series = fmt::format("{} {}{}{}", r.name, to_string(r.method), r.dtype ? " " : "", to_string(r.dtype));
    op->label = r.params.contains(param_key::n) ? "n=" + r.params[param_key::n].dump() : "";
    plot_options.x_min = std::min(plot_options.x_min, op->intensity_flop_per_byte / 2);
    plot_options.x_max = std::max(plot_options.x_max, op->intensity_flop_per_byte * 2);
    operations.push_back(*op);
    placed.push_back(&r);
  }
  out.svgs.push_back({"roofline.svg", render_svg(roofline_plot(c, operations, plot_options))});
  md += fmt::format("Ceilings: {}. Every measured record with counted FLOPs and bytes is placed at its intensity.\n\n",
                    c.source_text);
  md += "![roofline with every measured point](roofline.svg)\n\n";
  if (placed.empty()) return out;
  md += "| record | params | intensity (FLOP/byte) | achieved | attainable | of the roof |\n|---|---|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < placed.size(); ++i) {
    const Record* r = placed[i];
    if (!r->dtype || !c.peak(*r->dtype)) continue;  // no roof of its own dtype: not placed (the plot warns)
    const auto p = place_on_roofline(c, operations[i]);
    md += fmt::format("| {} `{}` | {} | {:.1f} | {} | {} | {}{} |\n", r->name, to_string(r->method),
                      r->params.contains(param_key::n) ? "n=" + r->params[param_key::n].dump() : r->params.dump(),
                      p.operation.intensity_flop_per_byte, format_flops(p.operation.flops_per_s),
                      format_flops(p.attainable_flops_per_s), format_percent(p.efficiency, 0),
                      p.above_roof() ? " (**impossible**: above the roof)" : "");
  }
  md += "\n";
  return out;
}

}  // namespace ridge::detail
