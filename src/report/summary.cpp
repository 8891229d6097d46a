// The report's summary: the few numbers that describe this GPU and build, each against its
// reference, and the findings that need action; and the records' warnings grouped by kind.
#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "ridge/format.hpp"
#include "ridge/report.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

// NVML clock-event reasons that slow the work down: SW power cap, HW slowdown, SW and HW thermal
// slowdown, HW power brake (idle, application clocks and sync boost are not throttling).
constexpr std::int64_t throttling_reasons = 0x4 | 0x8 | 0x40 | 0x80 | 0x100;

// Kinds of warning a reader must act on; the rest (cache-resident, wrong method in the timing
// demonstration) explain a number and stay in their section.
const char* const action_kinds[] = {"impossible", "launch-bound", "clocks moved", "high spread"};

std::string percent_of(double fraction, const std::string& of) {
  return fmt::format("{} of {}", format_percent(fraction, 0), of);
}

std::optional<double> value(const std::map<std::string, double>& m, const char* key) {
  const auto it = m.find(key);
  return it == m.end() || !std::isfinite(it->second) ? std::nullopt : std::optional<double>(it->second);
}

/// A summary number's value with its unit, by its key (value in the key's unit).
std::string value_text(const std::string& key, double v) {
  if (key == prediction::hbm_tb_per_s || key == prediction::add_tb_per_s) return format_bytes_per_s(v * 1e12);
  if (key == prediction::bf16_tflop_per_s) return format_flops(v * 1e12);
  if (key == prediction::ridge_point_bf16) return fmt::format("{:.0f} FLOP/byte", v);
  if (key == prediction::matmul_70pct_n) return fmt::format("at n = {:.0f}", v);
  if (key == prediction::decode_tokens_per_s) return fmt::format("{:.0f} tokens/s", v);
  if (key == prediction::launch_overhead_us) return fmt::format("{:.1f} us", v);
  if (key == prediction::launch_gap_fraction) return format_percent(v, 0);
  return fmt::format("{:g}", v);
}

/// The section a prediction key is measured in, by its title in this run (the key when it did not run).
std::string section_title(const std::vector<SectionRun>& sections, const std::string& key) {
  std::string section_key = key;
  for (const auto& k : prediction_keys())
    if (k.key == key) section_key = k.section;
  for (const auto& s : sections)
    if (s.key == section_key) return s.title;
  return section_key;
}

void add_numbers(ReportSummary& out, const std::map<std::string, double>& m, const std::optional<CatalogEntry>& datasheet,
                 const std::vector<SectionRun>& sections) {
  const DeviceCeilings* sheet = datasheet ? &datasheet->ceilings : nullptr;
  const std::string sheet_name = datasheet ? "the datasheet's" : "";
  auto add = [&](const char* key, std::string what, std::optional<double> fraction, std::string reference) {
    const double v = value(m, key).value_or(0);
    out.numbers.push_back({key, std::move(what), v, value_text(key, v), fraction, std::move(reference),
                           section_title(sections, key)});
  };
  const double sheet_bw = sheet ? sheet->memory_bytes_per_s : 0, sheet_bf16 = sheet ? sheet->peak_flops("bf16") : 0;
  if (auto hbm = value(m, prediction::hbm_tb_per_s)) {
    const std::optional<double> f = sheet_bw > 0 ? std::optional(*hbm * 1e12 / sheet_bw) : std::nullopt;
    add(prediction::hbm_tb_per_s, "HBM bandwidth", f,
        f ? percent_of(*f, sheet_name + " " + format_bytes_per_s(sheet_bw)) : "");
  }
  if (auto bf16 = value(m, prediction::bf16_tflop_per_s)) {
    const std::optional<double> f = sheet_bf16 > 0 ? std::optional(*bf16 * 1e12 / sheet_bf16) : std::nullopt;
    add(prediction::bf16_tflop_per_s, "BF16 matmul peak", f,
        f ? percent_of(*f, sheet_name + " dense " + format_flops(sheet_bf16)) : "");
  }
  if (auto ridge = value(m, prediction::ridge_point_bf16)) {
    const double sheet_ridge = sheet_bw > 0 && sheet_bf16 > 0 ? sheet_bf16 / sheet_bw : 0;
    add(prediction::ridge_point_bf16, "BF16 ridge point", sheet_ridge > 0 ? std::optional(*ridge / sheet_ridge) : std::nullopt,
        sheet_ridge > 0 ? fmt::format("datasheet: {:.0f} FLOP/byte", sheet_ridge) : "");
  }
  if (auto add_tb = value(m, prediction::add_tb_per_s)) {
    const auto hbm = value(m, prediction::hbm_tb_per_s);
    const auto of_sheet = value(m, prediction::add_fraction_of_datasheet);
    add(prediction::add_tb_per_s, "x + y at the largest size", hbm ? std::optional(*add_tb / *hbm) : of_sheet,
        hbm ? percent_of(*add_tb / *hbm, "the measured HBM ceiling") : of_sheet ? percent_of(*of_sheet, "the datasheet") : "");
  }
  if (value(m, prediction::matmul_70pct_n))
    add(prediction::matmul_70pct_n, "BF16 matmul reaches 70% of the peak", std::nullopt, "smaller sizes leave the GPU idle");
  if (auto tokens = value(m, prediction::decode_tokens_per_s)) {
    const auto f = value(m, prediction::decode_fraction_of_ceiling);
    add(prediction::decode_tokens_per_s, "GPT-2 small decode, batch 1", f,
        f && *f > 0 ? percent_of(*f, fmt::format("its ceiling ({:.0f} tokens/s)", *tokens / *f)) : "");
  }
  if (value(m, prediction::launch_overhead_us))
    add(prediction::launch_overhead_us, "launch overhead per call", std::nullopt, "per-sample events minus launch-free timing");
  if (value(m, prediction::launch_gap_fraction)) {
    const auto kernels = value(m, prediction::kernels_per_step);
    add(prediction::launch_gap_fraction, "decode step: GPU idle, waiting for the host", std::nullopt,
        kernels ? fmt::format("{:.0f} kernels per step", *kernels) : "");
  }
}

/// A model-only report measures nothing: the datasheet's figures, said to be the datasheet's.
void add_datasheet_numbers(ReportSummary& out, const CatalogEntry& sheet, const std::vector<SectionRun>& sections) {
  std::string section = "Roofline (datasheet model)";
  for (const auto& s : sections)
    if (s.key == "model_roofline") section = s.title;
  const DeviceCeilings& c = sheet.ceilings;
  const std::string source = "datasheet of the " + sheet.name + ": not measured";
  if (c.memory_bytes_per_s > 0)
    out.numbers.push_back({prediction::hbm_tb_per_s, "HBM bandwidth", c.memory_bytes_per_s / 1e12,
                           value_text(prediction::hbm_tb_per_s, c.memory_bytes_per_s / 1e12), std::nullopt, source, section, ""});
  if (const double bf16 = c.peak_flops("bf16"); bf16 > 0) {
    out.numbers.push_back({prediction::bf16_tflop_per_s, "BF16 dense peak", bf16 / 1e12,
                           value_text(prediction::bf16_tflop_per_s, bf16 / 1e12), std::nullopt,
                           source, section, ""});
    if (c.memory_bytes_per_s > 0)
      out.numbers.push_back({prediction::ridge_point_bf16, "BF16 ridge point", bf16 / c.memory_bytes_per_s,
                             value_text(prediction::ridge_point_bf16, bf16 / c.memory_bytes_per_s), std::nullopt,
                             "below it an operation is memory-bound", section, ""});
  }
}

void add_findings(ReportSummary& out, const std::vector<Record>& records, const std::vector<SectionRun>& sections) {
  std::size_t first = 0;
  for (const auto& s : sections) {
    if (s.failed()) out.findings.push_back({"section failed", s.error, s.title});
    const std::size_t end = std::min(records.size(), first + s.records);
    const std::vector<Record> mine(records.begin() + std::ptrdiff_t(first), records.begin() + std::ptrdiff_t(end));
    first = end;
    for (const auto& g : group_warnings(mine)) {
      if (std::find(std::begin(action_kinds), std::end(action_kinds), g.kind) == std::end(action_kinds)) continue;
      const bool prefixed = g.example.rfind(g.kind + ": ", 0) == 0;  // the kind is said once
      out.findings.push_back({g.kind,
                              fmt::format("{} of {} rows; e.g. {}", g.rows.size(), g.of_rows,
                                          prefixed ? g.example.substr(g.kind.size() + 2) : g.example),
                              s.title});
    }
    std::size_t throttled = 0;
    for (const auto& r : mine)
      for (const ClockReading* c : {&r.clocks_start, &r.clocks_end})
        if (c->throttle_reasons > 0 && (c->throttle_reasons & throttling_reasons)) {
          ++throttled;
          break;
        }
    if (throttled > 0)
      out.findings.push_back({"throttling", fmt::format("{} of {} rows ran while the GPU was power- or heat-throttled "
                                                        "(NVML clock-event reasons)",
                                                        throttled, mine.size()),
                              s.title});
  }
}

/// "3.00 TB/s, +3.7%": the previous run's value and this run's change from it; "-" when it has none.
std::string previous_cell(const SummaryNumber& n) {
  if (!n.previous) return "-";
  if (n.previous_text == n.value_text) return n.previous_text + ", same";
  if (!(*n.previous != 0)) return n.previous_text;
  return fmt::format("{}, {:+.1f}%", n.previous_text, 100 * (n.value / *n.previous - 1));
}

std::string cut(const std::string& text, std::size_t chars) {
  return text.size() <= chars ? text : text.substr(0, chars - 3) + "...";
}

}  // namespace

std::string warning_kind(const std::string& warning) {
  const auto colon = warning.find(':');
  if (colon != std::string::npos && colon <= 24) return warning.substr(0, colon);
  if (warning.find("clock") != std::string::npos) return "clocks moved";
  return warning;
}

std::vector<WarningGroup> group_warnings(const std::vector<Record>& records) {
  std::vector<WarningGroup> groups;
  for (std::size_t i = 0; i < records.size(); ++i)
    for (const auto& w : records[i].warnings) {
      const std::string kind = warning_kind(w);
      auto g = std::find_if(groups.begin(), groups.end(), [&](const WarningGroup& x) { return x.kind == kind; });
      if (g == groups.end()) g = groups.insert(groups.end(), WarningGroup{kind, {}, records.size(), ""});
      if (g->rows.empty() || g->rows.back() != i) g->rows.push_back(i);
      g->example = w;
    }
  return groups;
}

ReportSummary summarize_report(const std::map<std::string, double>& measured, const std::optional<CatalogEntry>& datasheet,
                               const std::vector<Record>& records, const std::vector<SectionRun>& sections,
                               const std::string& ceilings_cached_at) {
  ReportSummary out;
  out.model_only = records.empty() && measured.empty();
  add_numbers(out, measured, datasheet, sections);
  if (out.model_only && datasheet) add_datasheet_numbers(out, *datasheet, sections);
  for (auto& n : out.numbers)
    for (const auto& k : prediction_keys())
      if (k.key == n.key && k.section == "ceilings") n.carried_over_from = ceilings_cached_at;
  if (out.numbers.size() > 8) out.numbers.resize(8);
  add_findings(out, records, sections);
  return out;
}

void add_regression_findings(ReportSummary& summary, const Comparison& comparison, const std::string& previous) {
  std::size_t shown = 0;
  for (const auto& row : comparison.rows) {
    if (row.verdict != Verdict::regression) continue;
    if (++shown > 3) continue;  // counted below
    summary.findings.push_back({"regression",
                                fmt::format("{} `{}` {} ({}): {:.2f}x the median of {} (noise band {})", row.name,
                                            row.method, row.dtype, params_text(row.params), row.ratio, previous,
                                            format_percent(row.noise_band, 0)),
                                "Files"});
  }
  if (shown > 3)
    summary.findings.push_back({"regression", fmt::format("{} records in all are slower than {}: `ridge compare` with "
                                                          "its results.json says which",
                                                          comparison.regressions, previous),
                                "Files"});
}

Record measured_record(const std::map<std::string, double>& measured) {
  Record r;
  r.name = measured_record_name;
  r.method = Method::none;
  r.samples_ms = {0.0};
  finalize(r);
  for (const auto& [key, v] : measured)
    if (std::isfinite(v)) r.extra[key] = v;
  return r;
}

std::map<std::string, double> measured_from_records(const std::vector<Record>& records) {
  std::map<std::string, double> out;
  for (const auto& r : records) {
    if (r.name != measured_record_name || !r.extra.is_object()) continue;
    for (const auto& [key, v] : r.extra.items())
      if (v.is_number() && std::isfinite(v.get<double>())) out[key] = v.get<double>();
  }
  return out;
}

void add_previous_values(ReportSummary& summary, const std::map<std::string, double>& previous, const std::string& label) {
  if (previous.empty()) return;
  summary.previous_run = label;
  for (auto& n : summary.numbers)
    if (const auto v = value(previous, n.key.c_str())) {
      n.previous = *v;
      n.previous_text = value_text(n.key, *v);
    }
}

std::string heading_anchor(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string summary_markdown(const ReportSummary& s) {
  // At most 25 lines: heading (2), table (2 + 8), findings (3 + 7), blank lines.
  constexpr std::size_t max_findings = 6;
  std::string md = "## Summary\n\n";
  if (s.model_only) md += "Nothing was measured (model-only report): the numbers are the datasheet's.\n\n";
  if (s.numbers.empty() && !s.model_only)
    md += "No summary numbers: the sections that measure them did not run or failed.\n\n";
  if (!s.numbers.empty()) {
    // Against the previous run: a column, not lines, so the summary keeps its 25 lines.
    const bool previous = !s.previous_run.empty();
    md += fmt::format("| {} | value | against |{}\n|---|---:|---|{}\n", s.model_only ? "figure" : "measured",
                      previous ? fmt::format(" {} |", s.previous_run) : "", previous ? "---:|" : "");
    for (const auto& n : s.numbers)
      md += fmt::format("| [{}](#{}) | **{}**{} | {} |{}\n", n.what, heading_anchor(n.section), n.value_text,
                        n.carried_over_from.empty() ? "" : fmt::format(" (cache, {})", n.carried_over_from.substr(0, 10)),
                        n.reference.empty() ? "-" : n.reference, previous ? fmt::format(" {} |", previous_cell(n)) : "");
    md += "\n";
  }
  if (s.findings.empty()) return md + (s.model_only ? "" : "Nothing needs action: no impossible, launch-bound or throttled measurement.\n\n");
  md += "Needs action:\n\n";
  for (std::size_t i = 0; i < s.findings.size() && i < max_findings; ++i) {
    const auto& f = s.findings[i];
    md += fmt::format("- **{}** in [{}](#{}): {}\n", f.kind, f.section, heading_anchor(f.section), cut(f.text, 200));
  }
  if (s.findings.size() > max_findings) md += fmt::format("- and {} more in the sections below\n", s.findings.size() - max_findings);
  return md + "\n";
}

std::string summary_text(const ReportSummary& s) {
  std::string out;
  std::size_t width = 0;
  for (const auto& n : s.numbers) width = std::max(width, n.what.size());
  for (const auto& n : s.numbers)
    out += fmt::format("  {:<{}}  {:>16}  {}{}{}\n", n.what, width, n.value_text, n.reference,
                       n.carried_over_from.empty() ? "" : fmt::format(" (from the ceilings cache, measured {})", n.carried_over_from),
                       n.previous ? fmt::format("; {}: {}", s.previous_run, previous_cell(n)) : "");
  for (const auto& f : s.findings) out += fmt::format("  needs action: {} in {}: {}\n", f.kind, f.section, cut(f.text, 160));
  return out;
}

nlohmann::json to_json(const ReportSummary& s) {
  nlohmann::json numbers = nlohmann::json::array(), findings = nlohmann::json::array();
  for (const auto& n : s.numbers)
    numbers.push_back({{"key", n.key},
                       {"what", n.what},
                       {"value", n.value},
                       {"value_text", n.value_text},
                       {"fraction", n.fraction ? nlohmann::json(*n.fraction) : nlohmann::json(nullptr)},
                       {"reference", n.reference},
                       {"section", n.section},
                       {"carried_over_from", n.carried_over_from},
                       {"previous", n.previous ? nlohmann::json(*n.previous) : nlohmann::json(nullptr)}});
  for (const auto& f : s.findings) findings.push_back({{"kind", f.kind}, {"text", f.text}, {"section", f.section}});
  return {{"numbers", numbers}, {"findings", findings}, {"model_only", s.model_only}, {"previous_run", s.previous_run}};
}

}  // namespace ridge
