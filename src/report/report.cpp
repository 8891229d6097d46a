#include "ridge/report.hpp"
#include "ridge/plot.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge {

// ---- predictions -------------------------------------------------------------------------------

const std::vector<PredictionKey>& prediction_keys() {
  static const std::vector<PredictionKey> keys{
      {"naive_over_sync", "ratio",
       "unsynchronized wall-clock reading / synchronized wall clock, FP32 4096^2 matmul (the three-clocks timing exercise)",
       "timing"},
      {"matmul_fp32_4096_ms", "ms", "FP32 4096^2 matmul, median by CUDA events", "timing"},
      {"launch_overhead_us", "us",
       "256^2 BF16 matmul: per-sample events minus the launch-free time (spin hold / graph replay)", "timing"},
      {"hbm_tb_per_s", "TB/s", "measured HBM bandwidth, reads + writes counted", "ceilings"},
      {"bf16_tflop_per_s", "TFLOP/s", "measured dense BF16 GEMM peak", "ceilings"},
      {"ridge_point_bf16", "FLOP/byte", "measured BF16 peak / measured HBM bandwidth", "ceilings"},
      {"add_tb_per_s", "TB/s", "x + y (FP32) at the largest size of the bandwidth sweep", "bandwidth"},
      {"add_fraction_of_datasheet", "ratio", "x + y at the largest size / datasheet bandwidth", "bandwidth"},
      {"matmul_70pct_n", "n", "smallest square size at which BF16 matmul reaches 70% of the measured peak",
       "matmul"},
      {"decode_tokens_per_s", "tokens/s", "GPT-2 small decode, batch 1, CUDA graph", "decode"},
      {"decode_fraction_of_ceiling", "ratio", "GPT-2 small decode tokens/s / decode_ceiling", "decode"},
      {"kernels_per_step", "kernels", "kernels launched by one GPT-2 decode step", "profile"},
      {"launch_gap_fraction", "ratio", "fraction of one decode step the GPU sat idle waiting for the host",
       "profile"},
  };
  return keys;
}

std::pair<std::string, double> parse_prediction(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--predict '{}': expected KEY=VALUE, e.g. --predict hbm_tb_per_s=4.2", text));
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  for (char c : key)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      throw UsageError(fmt::format("--predict '{}': keys are lower-case letters, digits and '_'", text));
  double number = 0;
  std::size_t used = 0;
  try {
    number = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (value.empty() || used != value.size() || !std::isfinite(number))
    throw UsageError(fmt::format("--predict '{}': VALUE must be a plain number (units are fixed per key)", text));
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
           "`ridge report --predict matmul_70pct_n=2048 --predict hbm_tb_per_s=4.0`.\n\n";
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

// ---- Markdown -> HTML ----------------------------------------------------------------------------

namespace {

std::string escape_html(const std::string& s) { return xml_escape(s); }

std::string drop_schemes(std::string s) {
  for (const char* scheme : {"https://", "http://"}) {
    for (auto p = s.find(scheme); p != std::string::npos; p = s.find(scheme, p)) s.erase(p, std::strlen(scheme));
  }
  return s;
}

bool is_web(const std::string& target) { return target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0; }

// Inline markup of a text fragment outside code spans (already HTML-escaped).
std::string inline_plain(std::string s) {
  static const std::regex bold(R"re(\*\*([^*]+)\*\*)re");
  s = std::regex_replace(s, bold, "<strong>$1</strong>");
  static const std::regex link(R"re(\[([^\]]+)\]\(([^)\s]+)\))re");
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), link);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += s.substr(last, m.position() - last);
    const std::string text = m[1].str(), target = m[2].str();
    if (is_web(target))
      out += text + " (" + drop_schemes(target) + ")";  // cited, not linked: the page stays offline
    else
      out += "<a href=\"" + target + "\">" + text + "</a>";
    last = m.position() + m.length();
  }
  out += s.substr(last);
  return drop_schemes(out);
}

std::string inline_html(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto tick = text.find('`', i);
    if (tick == std::string::npos) {
      out += inline_plain(escape_html(text.substr(i)));
      break;
    }
    const auto close = text.find('`', tick + 1);
    if (close == std::string::npos) {
      out += inline_plain(escape_html(text.substr(i)));
      break;
    }
    out += inline_plain(escape_html(text.substr(i, tick - i)));
    out += "<code>" + drop_schemes(escape_html(text.substr(tick + 1, close - tick - 1))) + "</code>";
    i = close + 1;
  }
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> table_cells(const std::string& line) {
  std::string s = trim(line);
  if (!s.empty() && s.front() == '|') s.erase(0, 1);
  if (!s.empty() && s.back() == '|') s.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  bool in_code = false;
  for (char c : s) {
    if (c == '`') in_code = !in_code;
    if (c == '|' && !in_code) {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  cells.push_back(trim(cell));
  return cells;
}

bool is_table_separator(const std::string& line) {
  static const std::regex sep(R"re(^\s*\|?(\s*:?-+:?\s*\|)+\s*(:?-+:?)?\s*$)re");
  return std::regex_match(line, sep);
}

std::string slug(const std::string& heading) {
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

const char* page_css = R"(
:root { --ink: #1d2330; --muted: #5b6577; --line: #d9dee7; --accent: #2463eb; --warn: #b45309; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink);
       max-width: 1200px; margin: 0 auto; padding: 24px 32px 64px; background: #fff; }
h1 { font-size: 28px; margin: 0 0 8px; }
h2 { font-size: 21px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 17px; margin: 24px 0 8px; }
p, ul, ol { margin: 8px 0; }
code { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, monospace; background: #f3f5f9; padding: 1px 4px;
       border-radius: 3px; }
pre { background: #f3f5f9; padding: 10px 12px; overflow-x: auto; border-radius: 4px; }
pre code { background: none; padding: 0; }
div.table { overflow-x: auto; margin: 10px 0 14px; }
table { border-collapse: collapse; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 9px; vertical-align: top; }
th { background: #f3f5f9; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafbfd; }
td:first-child { white-space: nowrap; }
blockquote { margin: 12px 0; padding: 8px 14px; border-left: 4px solid var(--warn); background: #fff8eb; }
figure { margin: 14px 0 20px; }
figure svg { max-width: 100%; height: auto; display: block; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
nav.toc { font-size: 14px; color: var(--muted); margin: 6px 0 18px; }
nav.toc a { color: var(--accent); text-decoration: none; margin-right: 12px; white-space: nowrap; }
.missing { color: var(--warn); }
)";

}  // namespace

std::string svg_for_inline(const std::string& svg, const std::string& id_prefix) {
  std::string s = svg;
  static const std::regex prolog(R"re(<\?xml[^>]*\?>\s*)re");
  static const std::regex doctype(R"re(<!DOCTYPE[^>]*>\s*)re");
  static const std::regex xmlns(R"re(\s+xmlns(:\w+)?="[^"]*")re");
  static const std::regex id(R"re(\bid="([^"]+)")re");
  static const std::regex url(R"re(url\(#([^)]+)\))re");
  static const std::regex href(R"re(((?:xlink:)?href)="#([^"]+)")re");
  s = std::regex_replace(s, prolog, "");
  s = std::regex_replace(s, doctype, "");
  s = std::regex_replace(s, xmlns, "");
  s = std::regex_replace(s, id, "id=\"" + id_prefix + "$1\"");
  s = std::regex_replace(s, url, "url(#" + id_prefix + "$1)");
  s = std::regex_replace(s, href, "$1=\"#" + id_prefix + "$2\"");
  return s;
}

std::string markdown_to_html(const std::string& markdown, const std::map<std::string, std::string>& svgs,
                             const std::string& title) {
  std::vector<std::string> lines;
  {
    std::istringstream in(markdown);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::ostringstream body;
  std::vector<std::pair<std::string, std::string>> toc;  // h2 anchors
  std::string paragraph;
  auto flush_paragraph = [&] {
    if (!trim(paragraph).empty()) body << "<p>" << inline_html(trim(paragraph)) << "</p>\n";
    paragraph.clear();
  };
  static const std::regex heading(R"re(^(#{1,6})\s+(.*)$)re");
  static const std::regex image(R"re(^\s*!\[([^\]]*)\]\(([^)\s]+)\)\s*$)re");
  static const std::regex bullet(R"re(^\s*[-*]\s+(.*)$)re");
  static const std::regex numbered(R"re(^\s*\d+\.\s+(.*)$)re");
  int figure_number = 0;

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::smatch m;
    if (trim(line).rfind("```", 0) == 0) {
      flush_paragraph();
      body << "<pre><code>";
      for (++i; i < lines.size() && trim(lines[i]).rfind("```", 0) != 0; ++i)
        body << drop_schemes(escape_html(lines[i])) << "\n";
      body << "</code></pre>\n";
    } else if (trim(line).empty()) {
      flush_paragraph();
    } else if (std::regex_match(line, m, heading)) {
      flush_paragraph();
      const auto level = m[1].length();
      const std::string text = m[2].str(), anchor = slug(text);
      if (level == 2) toc.emplace_back(anchor, text);
      body << fmt::format("<h{0} id=\"{1}\">{2}</h{0}>\n", level, anchor, inline_html(text));
    } else if (std::regex_match(line, m, image)) {
      flush_paragraph();
      const std::string alt = m[1].str(), target = m[2].str();
      ++figure_number;
      if (auto svg = svgs.find(target); svg != svgs.end())
        body << "<figure>" << svg_for_inline(svg->second, fmt::format("fig{}-", figure_number)) << "<figcaption>"
             << inline_html(alt) << "</figcaption></figure>\n";
      else
        body << "<p class=\"missing\">[figure " << escape_html(target) << " not available]</p>\n";
    } else if (trim(line).front() == '|' && i + 1 < lines.size() && is_table_separator(lines[i + 1])) {
      flush_paragraph();
      const auto header = table_cells(line);
      const auto aligns = table_cells(lines[i + 1]);
      auto cls = [&](std::size_t c) {
        return c < aligns.size() && !aligns[c].empty() && aligns[c].back() == ':' ? " class=\"num\"" : "";
      };
      body << "<div class=\"table\"><table><thead><tr>";
      for (std::size_t c = 0; c < header.size(); ++c) body << "<th" << cls(c) << ">" << inline_html(header[c]) << "</th>";
      body << "</tr></thead><tbody>\n";
      for (i += 2; i < lines.size() && !trim(lines[i]).empty() && trim(lines[i]).front() == '|'; ++i) {
        const auto cells = table_cells(lines[i]);
        body << "<tr>";
        for (std::size_t c = 0; c < cells.size(); ++c) body << "<td" << cls(c) << ">" << inline_html(cells[c]) << "</td>";
        body << "</tr>\n";
      }
      --i;
      body << "</tbody></table></div>\n";
    } else if (trim(line).rfind(">", 0) == 0) {
      flush_paragraph();
      std::string quote;
      for (; i < lines.size() && trim(lines[i]).rfind(">", 0) == 0; ++i) {
        std::string q = trim(lines[i]).substr(1);
        quote += (quote.empty() ? "" : " ") + trim(q);
      }
      --i;
      body << "<blockquote>" << inline_html(quote) << "</blockquote>\n";
    } else if (std::regex_match(line, m, bullet) || std::regex_match(line, m, numbered)) {
      flush_paragraph();
      const bool ordered = !std::regex_match(line, bullet);
      body << (ordered ? "<ol>\n" : "<ul>\n");
      for (; i < lines.size(); ++i) {
        std::smatch item;
        if (!(ordered ? std::regex_match(lines[i], item, numbered) : std::regex_match(lines[i], item, bullet))) break;
        body << "<li>" << inline_html(item[1].str()) << "</li>\n";
      }
      --i;
      body << (ordered ? "</ol>\n" : "</ul>\n");
    } else {
      paragraph += " " + line;
    }
  }
  flush_paragraph();

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       << "<title>" << escape_html(title) << "</title>\n<style>" << page_css << "</style>\n</head>\n<body>\n";
  std::string html = body.str();
  if (!toc.empty()) {
    std::string nav = "<nav class=\"toc\">";
    for (const auto& [anchor, text] : toc) nav += "<a href=\"#" + anchor + "\">" + escape_html(text) + "</a>";
    nav += "</nav>\n";
    // After the first heading (the title), before everything else.
    const auto after_h1 = html.find("</h1>\n");
    html.insert(after_h1 == std::string::npos ? 0 : after_h1 + 6, nav);
  }
  page << html << "</body>\n</html>\n";
  return page.str();
}

}  // namespace ridge
