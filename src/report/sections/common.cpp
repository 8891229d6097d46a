// The report's list of sections, and the helpers sections share: records, warnings and findings
// as Markdown.
#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/format.hpp"
#include "ridge/sweep.hpp"
#include "ridge/writers.hpp"

namespace ridge::detail {

const std::vector<ReportSection>& report_sections() {
  // Report order. Later sections read what earlier ones left in the context: the ceilings feed
  // the matmul knee, the roofline and the decode ceiling; every measurement feeds the predictions.
  static const std::vector<ReportSection> all{
      {"info", "Device", SectionMode::gpu, info_section},
      {"timing", "Timing: three clocks, one matmul", SectionMode::gpu, timing_section},
      {"ceilings", "Measured ceilings", SectionMode::gpu, ceilings_section},
      {"bandwidth", "Bandwidth: x + y from 2^10 to 2^28", SectionMode::gpu, bandwidth_section},
      {"matmul", "Matmul: BF16, speed at a size", SectionMode::gpu, matmul_section},
      {"roofline", "Roofline", SectionMode::gpu, roofline_section},
      {"decode", "Decode: GPT-2 eager vs CUDA graph", SectionMode::gpu, decode_section},
      {"profile", "Profile of one decode step", SectionMode::gpu, profile_section},
      {"model_roofline", "Roofline (datasheet model)", SectionMode::model_only, model_roofline_section},
      {"decode_ceilings", "Decode ceilings", SectionMode::always, decode_ceilings_section},
      {"amdahl", "Amdahl's law", SectionMode::always, amdahl_section},
      {"predictions", "Predictions", SectionMode::always, predictions_section},
  };
  return all;
}

std::string records_markdown(const std::vector<Record>& records) {
  std::string out =
      "| record | params | dtype | method | median | min | max | CV | GB/s | TFLOP/s | check |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& r : records) {
    const auto& s = r.summary;
    out += fmt::format("| {} | {} | {} | `{}` | {} | {} | {} | {:.1f}% | {} | {} | {} |\n", r.name,
                       params_text(r.params), to_string(r.dtype), to_string(r.method), format_ms(s.median), format_ms(s.min),
                       format_ms(s.max), s.cv * 100,
                       r.bytes > 0 ? fmt::format("{:.1f}", r.bytes_per_s() / 1e9) : "",
                       r.flops > 0 ? fmt::format("{:.2f}", r.flops_per_s() / 1e12) : "", r.verification);
  }
  return out + "\n";
}

std::string warnings_markdown(const std::vector<Record>& records) {
  // One line per kind of warning, with the rows it covers; each row keeps its own warnings in
  // results.json.
  const auto row = [&](std::size_t i) {
    const Record& r = records[i];
    return fmt::format("{} `{}` ({})", r.name, to_string(r.method), params_text(r.params));
  };
  std::string out;
  for (const auto& g : group_warnings(records)) {
    std::string example = g.example;
    if (example.rfind(g.kind + ": ", 0) == 0) example = example.substr(g.kind.size() + 2);
    if (g.rows.size() == 1)
      out += fmt::format("- **{}**, {}: {}\n", g.kind, row(g.rows.front()), example);
    else
      out += fmt::format("- **{}**, {} of {} rows, {} to {}; the last: {}\n", g.kind, g.rows.size(), g.of_rows,
                         row(g.rows.front()), row(g.rows.back()), example);
  }
  return out.empty() ? out : "Warnings (by kind; every row keeps its own in results.json):\n\n" + out + "\n";
}

std::string findings_markdown(const std::vector<Finding>& findings) {
  std::string md;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    md += f.level > 0 ? fmt::format("- {}\n", f.text) : fmt::format("{}\n", f.text);
    const bool next_is_detail = i + 1 < findings.size() && findings[i + 1].level > 0;
    if (f.level == 0 && next_is_detail) md += "\n";
    if (!next_is_detail) md += "\n";
  }
  return md;
}

}  // namespace ridge::detail
