// Markdown -> one self-contained HTML page, for the subset `ridge report` writes. No Markdown
// library: the GPU machine has no network and none installed, so every construct the report
// writes is handled here and tested (tests/unit/test_report.cpp).
#include <cctype>
#include <cstring>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "ridge/plot.hpp"
#include "ridge/report.hpp"

namespace ridge {

namespace {

std::string escape_html(const std::string& s) { return xml_escape(s); }

std::string drop_schemes(std::string s) {
  for (const char* scheme : {"https://", "http://"}) {
    for (auto p = s.find(scheme); p != std::string::npos; p = s.find(scheme, p)) s.erase(p, std::strlen(scheme));
  }
  return s;
}

bool is_web(const std::string& target) { return target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0; }

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// ---- inline markup -------------------------------------------------------------------------------

// Code spans are rendered first and stand in the text as \x01<index>\x02 (characters escape_html
// never emits), so bold, italics and links can enclose them and never look inside them.
constexpr char code_open = '\x01', code_close = '\x02';

/// Escaped text with code spans as placeholders (their HTML in `codes`); a backslash before ASCII
/// punctuation makes it literal, as a numeric character reference no later pass matches.
std::string protect(const std::string& text, std::vector<std::string>& codes) {
  std::string out, plain;
  auto flush = [&] {
    out += escape_html(plain);
    plain.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && std::ispunct(static_cast<unsigned char>(text[i + 1]))) {
      flush();
      out += fmt::format("&#{};", static_cast<int>(text[++i]));
      continue;
    }
    if (c == '`') {
      std::size_t ticks = 1;
      while (i + ticks < text.size() && text[i + ticks] == '`') ++ticks;
      const std::string fence(ticks, '`');
      const auto close = text.find(fence, i + ticks);
      if (close != std::string::npos) {
        flush();
        const std::string code = trim(text.substr(i + ticks, close - i - ticks));
        out += code_open + std::to_string(codes.size()) + code_close;
        codes.push_back("<code>" + drop_schemes(escape_html(code)) + "</code>");
        i = close + ticks - 1;
        continue;
      }
    }
    plain += c;
  }
  flush();
  return out;
}

/// Links on escaped text: web links are cited, not linked (the page stays offline); local ones link.
std::string render_links(const std::string& s) {
  static const std::regex link(R"re(\[([^\]]+)\]\(([^)\s]+)\))re");
  std::string out;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), link); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += s.substr(last, m.position() - last);
    const std::string text = m[1].str(), target = m[2].str();
    out += is_web(target) ? text + " (" + drop_schemes(target) + ")" : "<a href=\"" + target + "\">" + text + "</a>";
    last = m.position() + m.length();
  }
  return out + s.substr(last);
}

/// **bold**, then *italics* and _italics_ (an underscore inside a word, as in hbm_tb_per_s, is text).
std::string render_emphasis(std::string s) {
  static const std::regex bold(R"re(\*\*(?=\S)(.+?)\*\*)re");
  static const std::regex star(R"re(\*(?=[^\s*])([^*]*[^\s*])\*)re");
  static const std::regex underscore(R"re((^|[^A-Za-z0-9_])_(?=\S)([^_]*[^\s_])_(?![A-Za-z0-9_]))re");
  s = std::regex_replace(s, bold, "<strong>$1</strong>");
  s = std::regex_replace(s, star, "<em>$1</em>");
  return std::regex_replace(s, underscore, "$1<em>$2</em>");
}

std::string restore_codes(const std::string& s, const std::vector<std::string>& codes) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != code_open) {
      out += s[i];
      continue;
    }
    const auto close = s.find(code_close, i);
    out += codes.at(std::stoul(s.substr(i + 1, close - i - 1)));
    i = close;
  }
  return out;
}

std::string inline_html(const std::string& text) {
  std::vector<std::string> codes;
  const std::string marked = render_emphasis(render_links(protect(text, codes)));
  return restore_codes(drop_schemes(marked), codes);
}

// ---- blocks ----------------------------------------------------------------------------------------

/// Cells of a table row. A pipe splits cells unless it is escaped (\|) or inside a code span;
/// inside a code span, \| stands for | (as GitHub renders it).
std::vector<std::string> table_cells(const std::string& line) {
  std::string s = trim(line);
  if (!s.empty() && s.front() == '|') s.erase(0, 1);
  if (!s.empty() && s.back() == '|' && (s.size() < 2 || s[s.size() - 2] != '\\')) s.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  bool in_code = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && s[i + 1] == '|') {
      cell += in_code ? "|" : "\\|";
      ++i;
    } else if (c == '|' && !in_code) {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      if (c == '`') in_code = !in_code;
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

bool starts_with(const std::string& line, const char* prefix) { return trim(line).rfind(prefix, 0) == 0; }

/// Turns the Markdown's lines into HTML block by block; each block reader advances `i` past its block.
struct HtmlWriter {
  const std::vector<std::string>& lines;
  const std::map<std::string, std::string>& svgs;
  std::ostringstream body;
  std::vector<std::pair<std::string, std::string>> toc;  // (anchor, heading HTML) of every h2
  std::string paragraph;
  int figures = 0;

  HtmlWriter(const std::vector<std::string>& markdown_lines, const std::map<std::string, std::string>& svg_files)
      : lines(markdown_lines), svgs(svg_files) {}

  void flush_paragraph() {
    if (!trim(paragraph).empty()) body << "<p>" << inline_html(trim(paragraph)) << "</p>\n";
    paragraph.clear();
  }

  void code_block(std::size_t& i) {
    body << "<pre><code>";
    for (++i; i < lines.size() && !starts_with(lines[i], "```"); ++i) body << drop_schemes(escape_html(lines[i])) << "\n";
    body << "</code></pre>\n";
  }

  void heading(std::size_t level, const std::string& text) {
    const std::string anchor = heading_anchor(text), html = inline_html(text);
    if (level == 2) toc.emplace_back(anchor, html);
    body << fmt::format("<h{0} id=\"{1}\">{2}</h{0}>\n", level, anchor, html);
  }

  void image(const std::string& alt, const std::string& target) {
    ++figures;
    if (auto svg = svgs.find(target); svg != svgs.end())
      body << "<figure>" << svg_for_inline(svg->second, fmt::format("fig{}-", figures)) << "<figcaption>"
           << inline_html(alt) << "</figcaption></figure>\n";
    else
      body << "<p class=\"missing\">[figure " << escape_html(target) << " not available]</p>\n";
  }

  void table(std::size_t& i) {
    const auto header = table_cells(lines[i]);
    const auto aligns = table_cells(lines[i + 1]);
    auto cls = [&](std::size_t c) {
      return c < aligns.size() && !aligns[c].empty() && aligns[c].back() == ':' ? " class=\"num\"" : "";
    };
    std::size_t end = i + 2;
    while (end < lines.size() && starts_with(lines[end], "|")) ++end;
    // A long table folds behind a line saying what it holds, so the page reads past it.
    const std::size_t rows = end - (i + 2);
    const bool fold = rows > max_unfolded_table_rows;
    if (fold) {
      const auto first = table_cells(lines[i + 2]), last = table_cells(lines[end - 1]);
      body << "<details><summary>" << rows << " rows: " << inline_html(first.empty() ? "" : first[0]) << " to "
           << inline_html(last.empty() ? "" : last[0]) << "</summary>\n";
    }
    body << "<div class=\"table\"><table><thead><tr>";
    for (std::size_t c = 0; c < header.size(); ++c) body << "<th" << cls(c) << ">" << inline_html(header[c]) << "</th>";
    body << "</tr></thead><tbody>\n";
    for (i += 2; i < end; ++i) {
      const auto cells = table_cells(lines[i]);
      body << "<tr>";
      for (std::size_t c = 0; c < cells.size(); ++c) body << "<td" << cls(c) << ">" << inline_html(cells[c]) << "</td>";
      body << "</tr>\n";
    }
    --i;
    body << "</tbody></table></div>\n" << (fold ? "</details>\n" : "");
  }

  /// Consecutive '>' lines; an empty '>' line separates paragraphs inside the quote.
  void block_quote(std::size_t& i) {
    std::vector<std::string> paragraphs{""};
    for (; i < lines.size() && starts_with(lines[i], ">"); ++i) {
      const std::string q = trim(trim(lines[i]).substr(1));
      if (q.empty()) {
        if (!paragraphs.back().empty()) paragraphs.emplace_back();
        continue;
      }
      paragraphs.back() += (paragraphs.back().empty() ? "" : " ") + q;
    }
    --i;
    if (paragraphs.back().empty()) paragraphs.pop_back();
    body << "<blockquote>";
    if (paragraphs.size() == 1)
      body << inline_html(paragraphs.front());
    else
      for (const auto& p : paragraphs) body << "<p>" << inline_html(p) << "</p>";
    body << "</blockquote>\n";
  }

  void list(std::size_t& i, const std::regex& item_pattern, bool ordered) {
    body << (ordered ? "<ol>\n" : "<ul>\n");
    std::smatch item;
    for (; i < lines.size() && std::regex_match(lines[i], item, item_pattern); ++i)
      body << "<li>" << inline_html(item[1].str()) << "</li>\n";
    --i;
    body << (ordered ? "</ol>\n" : "</ul>\n");
  }

  void write_all() {
    static const std::regex heading_line(R"re(^(#{1,6})\s+(.*)$)re");
    static const std::regex image_line(R"re(^\s*!\[([^\]]*)\]\(([^)\s]+)\)\s*$)re");
    static const std::regex bullet(R"re(^\s*[-*]\s+(.*)$)re");
    static const std::regex numbered(R"re(^\s*\d+\.\s+(.*)$)re");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      std::smatch m;
      const bool blank = trim(line).empty();
      const bool table_start = starts_with(line, "|") && i + 1 < lines.size() && is_table_separator(lines[i + 1]);
      const bool is_bullet = !blank && std::regex_match(line, bullet);
      if (blank || starts_with(line, "```") || starts_with(line, ">") || table_start || is_bullet ||
          std::regex_match(line, m, heading_line) || std::regex_match(line, image_line) ||
          std::regex_match(line, numbered))
        flush_paragraph();
      if (blank) continue;
      if (starts_with(line, "```"))
        code_block(i);
      else if (std::regex_match(line, m, heading_line))
        heading(static_cast<std::size_t>(m[1].length()), m[2].str());
      else if (std::regex_match(line, m, image_line))
        image(m[1].str(), m[2].str());
      else if (table_start)
        table(i);
      else if (starts_with(line, ">"))
        block_quote(i);
      else if (is_bullet)
        list(i, bullet, false);
      else if (std::regex_match(line, numbered))
        list(i, numbered, true);
      else
        paragraph += " " + line;
    }
    flush_paragraph();
  }
};

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
details > summary { cursor: pointer; margin: 8px 0; color: #444; }
table { border-collapse: collapse; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 9px; vertical-align: top; }
th { background: #f3f5f9; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafbfd; }
td:first-child { white-space: nowrap; }
blockquote { margin: 12px 0; padding: 8px 14px; border-left: 4px solid var(--warn); background: #fff8eb; }
blockquote p { margin: 4px 0; }
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

std::string markdown_inline_html(const std::string& text) { return inline_html(text); }

std::string markdown_to_html(const std::string& markdown, const std::map<std::string, std::string>& svgs,
                             const std::string& title) {
  std::vector<std::string> lines;
  {
    std::istringstream in(markdown);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  HtmlWriter writer(lines, svgs);
  writer.write_all();

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       << "<title>" << escape_html(title) << "</title>\n<style>" << page_css << "</style>\n</head>\n<body>\n";
  std::string html = writer.body.str();
  if (!writer.toc.empty()) {
    std::string nav = "<nav class=\"toc\">";
    for (const auto& [anchor, text] : writer.toc) nav += "<a href=\"#" + anchor + "\">" + text + "</a>";
    nav += "</nav>\n";
    // After the first heading (the title), before everything else.
    const auto after_h1 = html.find("</h1>\n");
    html.insert(after_h1 == std::string::npos ? 0 : after_h1 + 6, nav);
  }
  page << html << "</body>\n</html>\n";
  return page.str();
}

}  // namespace ridge
