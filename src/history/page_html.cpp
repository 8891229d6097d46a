// The history page as one HTML document: styles, the data as JSON, and a small script that draws
// it into SVG. Nothing is fetched: the page opens from a file with no network.
#include <string>

#include "ridge/history_page.hpp"
#include "ridge/plot.hpp"

namespace ridge {

namespace {

// JSON that can sit inside a <script> element: the HTML parser ends the element at "</script"
// and treats "<!--" specially, so <, > and & (which JSON has only inside strings) are written
// as \u escapes, and so is every non-ASCII character (ensure_ascii; invalid UTF-8 becomes U+FFFD).
std::string script_safe_json(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (const char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

constexpr const char* page_style = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.15em; margin: 1em 0 .4em; }
h3 { font-size: 1em; margin: 0; font-family: ui-monospace, monospace; }
#meta, .series-meta, .readout { color: #555; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; text-align: left; border-bottom: 1px solid #ddd; }
tr.regression td:first-child { color: #b00020; font-weight: bold; } tr.improvement td:first-child { color: #1b7f3b; }
#filters { position: sticky; top: 0; background: #fff; padding: .5em 0; border-bottom: 1px solid #ccc; }
#filters label { margin-right: 1.5em; }
#charts { display: flex; flex-wrap: wrap; gap: 1em; margin-top: 1em; }
section.series { border: 1px solid #ddd; padding: .5em; width: 660px; }
svg.chart { display: block; } .readout { font-family: ui-monospace, monospace; font-size: 12px; min-height: 1.4em; }
.band { fill: #9ecae1; fill-opacity: .35; } .level { stroke: #3182bd; stroke-width: 1; }
.whisker { stroke: #888; } .point { fill: #08519c; } .point:hover { fill: #e6550d; }
.change-regression { stroke: #b00020; } .change-improvement { stroke: #1b7f3b; }
.axis { stroke: #999; } .tick { font-size: 10px; fill: #555; }
)css";

// Draws the embedded data. Text from the data only ever goes through textContent and
// setAttribute, never through HTML parsing.
constexpr const char* page_script = R"js(
"use strict";
(function () {
  const root = document.documentElement;
  let errors = 0;
  window.addEventListener("error", function () { root.dataset.errors = String(++errors); });
  const data = JSON.parse(document.getElementById("history-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, title) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (title !== undefined) { const t = document.createElementNS(NS, "title"); t.textContent = title; e.appendChild(t); }
    return e;
  }
  const short = c => c.length > 12 ? c.slice(0, 12) : c;
  const pct = r => (r >= 1 ? "+" : "") + ((r - 1) * 100).toFixed(1) + "%";
  const ms = v => v >= 100 ? v.toFixed(1) : v >= 1 ? v.toFixed(3) : v.toPrecision(3);
  const gpuName = g => g === "" ? "(no GPU)" : g;
  function changeNotes(c) {
    const notes = [];
    if (c.clock_changed) notes.push("SM clock changed by " + (c.clock_difference * 100).toFixed(0) + "%");
    if (c.driver_changed) notes.push("driver changed");
    if (c.at_newest_commit) notes.push("at the newest commit");
    return notes.join("; ");
  }

  document.getElementById("meta").textContent = data.runs + " runs over " + data.commits_total + " commits (the newest " +
    data.commits.length + " on the axis); " + data.series.length + " of " + data.series_total + " series drawn; newest commit " +
    short(data.newest_commit) + "; changes found as `ridge history check` finds them (threshold " + (data.threshold * 100) + "%).";

  const tbody = document.querySelector("#changes tbody");
  for (const i of data.recent_changes) {
    const c = data.changes[i];
    const tr = el("tr", { class: c.regression ? "regression" : "improvement" });
    [c.regression ? "regression" : "improvement", short(c.commit), c.label, gpuName(c.gpu),
     pct(c.ratio) + " [" + pct(c.ratio_ci_low) + ", " + pct(c.ratio_ci_high) + "]",
     ms(c.median_before_ms) + " \u2192 " + ms(c.median_after_ms) + " ms",
     "band " + (c.noise_band * 100).toFixed(1) + "% (" + c.noise_band_source + ")", changeNotes(c)]
      .forEach(v => tr.appendChild(el("td", {}, v)));
    tbody.appendChild(tr);
  }
  document.getElementById("no-changes").hidden = data.recent_changes.length > 0;
  document.getElementById("changes").hidden = data.recent_changes.length === 0;

  const W = 640, H = 200, L = 60, R = 10, T = 10, B = 24;
  function drawChart(s) {
    const n = Math.max(data.commits.length - 1, 1);
    let lo = Infinity, hi = -Infinity;
    for (const p of s.points) { lo = Math.min(lo, p[2]); hi = Math.max(hi, p[3]); }
    for (const l of s.levels) { lo = Math.min(lo, l[2] * (1 - s.noise_band)); hi = Math.max(hi, l[2] * (1 + s.noise_band)); }
    if (!(hi > lo)) { lo = lo * 0.95; hi = hi * 1.05 + 1e-9; }
    const pad = (hi - lo) * 0.05; lo -= pad; hi += pad;
    const X = i => L + (W - L - R) * i / n;
    const Y = v => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
    const chart = svg("svg", { class: "chart", width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
    chart.appendChild(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    chart.appendChild(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    for (let k = 0; k <= 3; ++k) {
      const v = lo + (hi - lo) * k / 3;
      const t = svg("text", { class: "tick", x: L - 4, y: Y(v) + 3, "text-anchor": "end" }); t.textContent = ms(v) + " ms";
      chart.appendChild(t);
    }
    [[0, "start"], [data.commits.length - 1, "end"]].forEach(function (a) {
      const t = svg("text", { class: "tick", x: X(a[0]), y: H - 6, "text-anchor": a[1] }); t.textContent = short(data.commits[a[0]]);
      chart.appendChild(t);
    });
    for (const l of s.levels) {
      const x1 = X(l[0]) - 3, x2 = X(l[1]) + 3;
      chart.appendChild(svg("rect", { class: "band", x: x1, width: Math.max(x2 - x1, 1), y: Y(l[2] * (1 + s.noise_band)),
        height: Math.max(Y(l[2] * (1 - s.noise_band)) - Y(l[2] * (1 + s.noise_band)), 1) },
        "level " + ms(l[2]) + " ms, noise band \u00b1" + (s.noise_band * 100).toFixed(1) + "% (" + s.noise_band_source + ")"));
      chart.appendChild(svg("line", { class: "level", x1: x1, x2: x2, y1: Y(l[2]), y2: Y(l[2]) }));
    }
    for (const i of s.changes) {
      const c = data.changes[i];
      if (c.x < 0) continue;
      chart.appendChild(svg("line", { class: "change " + (c.regression ? "change-regression" : "change-improvement"),
        x1: X(c.x), x2: X(c.x), y1: T, y2: H - B, "stroke-dasharray": "4 3" },
        (c.regression ? "regression " : "improvement ") + pct(c.ratio) + " at " + short(c.commit)));
    }
    const readout = el("p", { class: "readout" }, "\u00a0");
    // Every run's min..max in one path (one element per chart, not one per run), then its median.
    let whiskers = "";
    for (const p of s.points) whiskers += "M" + X(p[0]).toFixed(1) + " " + Y(p[2]).toFixed(1) + "V" + Y(p[3]).toFixed(1);
    if (whiskers !== "") chart.appendChild(svg("path", { class: "whisker", d: whiskers }));
    s.points.forEach(function (p, i) {
      chart.appendChild(svg("circle", { class: "point", cx: X(p[0]).toFixed(1), cy: Y(p[1]).toFixed(1), r: 3, "data-i": i }));
    });
    function describe(p) {
      return short(data.commits[p[0]]) + "  " + p[7] + "  median " + ms(p[1]) + " ms  [" + ms(p[2]) + ", " + ms(p[3]) +
        "]  IQR " + ms(p[4]) + "\u2013" + ms(p[5]) + " ms  SM " + (p[6] > 0 ? p[6].toFixed(0) + " MHz" : "clock unknown");
    }
    chart.addEventListener("mouseover", function (e) {
      const i = e.target.getAttribute && e.target.getAttribute("data-i");
      if (i !== null && i !== undefined) readout.textContent = describe(s.points[Number(i)]);
    });
    const section = el("section", { class: "series" });
    section.appendChild(el("h3", {}, s.label));
    section.appendChild(el("p", { class: "series-meta" }, (s.machine || "?") + " / " + gpuName(s.gpu) + " \u00b7 " + s.runs +
      " runs \u00b7 noise band \u00b1" + (s.noise_band * 100).toFixed(1) + "% (" + s.noise_band_source + ")" +
      (s.informational ? " \u00b7 informational: never judged" : "") + " \u00b7 " + s.changes.length + " change(s)"));
    section.appendChild(chart);
    section.appendChild(readout);
    return section;
  }

  const charts = document.getElementById("charts");
  const sections = data.series.map(function (s) { const c = drawChart(s); charts.appendChild(c); return c; });

  const gpuFilter = document.getElementById("gpu-filter"), nameFilter = document.getElementById("name-filter");
  function addGpuOption(g) { const o = el("option", {}, gpuName(g)); o.value = g; gpuFilter.appendChild(o); }
  data.gpus.forEach(addGpuOption);
  const preset = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
  if (preset.has("gpu")) {
    const g = preset.get("gpu");
    if (!data.gpus.includes(g)) addGpuOption(g);
    gpuFilter.value = g;
  }
  if (preset.has("name")) nameFilter.value = preset.get("name");
  function apply(updateHash) {
    const useGpu = gpuFilter.selectedIndex > 0, gpu = gpuFilter.value, name = nameFilter.value.trim().toLowerCase();
    let shown = 0;
    data.series.forEach(function (s, i) {
      const visible = (!useGpu || s.gpu === gpu) && (name === "" || s.label.toLowerCase().includes(name));
      sections[i].hidden = !visible;
      shown += visible ? 1 : 0;
    });
    const status = document.getElementById("shown");
    status.textContent = shown + " of " + data.series.length + " charts shown";
    status.dataset.shown = String(shown);
    if (updateHash) {
      const q = new URLSearchParams();
      if (useGpu) q.set("gpu", gpu);
      if (name !== "") q.set("name", nameFilter.value.trim());
      try { history.replaceState(null, "", "#" + q.toString()); } catch (e) { /* file: URLs may refuse; the filter still works */ }
    }
  }
  gpuFilter.addEventListener("change", function () { apply(true); });
  nameFilter.addEventListener("input", function () { apply(true); });
  apply(false);
  root.dataset.renderMs = performance.now().toFixed(1);
  root.dataset.ready = "1";
})();
)js";

}  // namespace

std::string history_page_html(const nlohmann::json& data, const std::string& title) {
  const std::string t = xml_escape(title);
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + t + "</title>\n<style>" + std::string(page_style) + "</style>\n</head>\n<body>\n";
  html += "<h1>" + t + "</h1>\n<p id=\"meta\"></p>\n";
  html += "<noscript><p>This page draws its charts with JavaScript; the data is in the history-data element of its "
          "source.</p></noscript>\n";
  html += "<section id=\"summary\"><h2>Recent changes, newest first</h2>\n"
          "<table id=\"changes\"><thead><tr><th>change</th><th>commit</th><th>record</th><th>GPU</th>"
          "<th>median (95% interval)</th><th>before \u2192 after</th><th>noise band</th><th>notes</th></tr></thead>"
          "<tbody></tbody></table>\n<p id=\"no-changes\" hidden>No changes found.</p></section>\n";
  html += "<section id=\"filters\"><label>GPU <select id=\"gpu-filter\"><option value=\"\">all</option></select></label>"
          "<label>Record <input id=\"name-filter\" type=\"search\" placeholder=\"name contains\"></label>"
          "<span id=\"shown\"></span></section>\n<div id=\"charts\"></div>\n";
  html += "<script type=\"application/json\" id=\"history-data\">" + script_safe_json(data) + "</script>\n";
  html += "<script>" + std::string(page_script) + "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace ridge
