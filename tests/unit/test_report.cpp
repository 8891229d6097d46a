#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "report/sections/sections.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/report.hpp"
#include "ridge/roofline.hpp"

using namespace ridge;

TEST(Predictions, ParseKeyValue) {
  EXPECT_EQ(parse_prediction("hbm_tb_per_s=4.2"), std::make_pair(std::string("hbm_tb_per_s"), 4.2));
  EXPECT_EQ(parse_prediction("matmul_70pct_n=2048").second, 2048);
  EXPECT_THROW(parse_prediction("4.2"), UsageError);
  EXPECT_THROW(parse_prediction("=4.2"), UsageError);
  EXPECT_THROW(parse_prediction("hbm=fast"), UsageError);
  EXPECT_THROW(parse_prediction("hbm=4.2TB/s"), UsageError);
  EXPECT_THROW(parse_prediction("HBM=4"), UsageError);
  EXPECT_THROW(parse_prediction("hbm=nan"), UsageError);
}

TEST(Predictions, ErrorAgainstMeasurement) {
  const nlohmann::json predicted{{"hbm_tb_per_s", 4.4}, {"naive_over_sync", 0.5}, {"my_guess", 7}};
  const auto outcomes = evaluate_predictions(predicted, {{"hbm_tb_per_s", 4.0}});
  ASSERT_EQ(outcomes.size(), 3u);
  for (const auto& o : outcomes) {
    if (o.key == "hbm_tb_per_s") {
      EXPECT_TRUE(o.known);
      ASSERT_TRUE(o.relative_error().has_value());
      EXPECT_NEAR(*o.relative_error(), 0.10, 1e-12);
    } else if (o.key == "naive_over_sync") {
      EXPECT_TRUE(o.known);
      EXPECT_FALSE(o.measured.has_value());
    } else {
      EXPECT_FALSE(o.known);
    }
  }
  const std::string md = predictions_markdown(outcomes);
  EXPECT_NE(md.find("+10.0%"), std::string::npos);
  EXPECT_NE(md.find("unknown key"), std::string::npos);
  EXPECT_NE(md.find("not measured in this run"), std::string::npos);
}

TEST(ReferenceModels, KvCacheAndWeights) {
  for (const auto& m : reference_models()) {
    if (m.name == "Llama-3.1 8B") {
      // 2 (K,V) x 32 layers x 8 heads x 128 x 4096 tokens x 2 bytes = 512 MiB.
      EXPECT_DOUBLE_EQ(m.kv_bytes_per_sequence(), 536870912.0);
      EXPECT_LT(m.weight_bytes_read(), m.weight_bytes_resident());
    }
    if (m.name == "GPT-2 small") {
      EXPECT_DOUBLE_EQ(m.weight_bytes_read(), 124439808.0 * 4);
      // The textbook ceiling: ~498 MB at 3.35 TB/s is ~6,700 tokens/s at batch 1 with no KV cache.
      EXPECT_NEAR(decode_ceiling(m.weight_bytes_read(), 3.35e12), 6730, 10);
    }
  }
}

TEST(Html, TablesFiguresAndNoNetwork) {
  const std::string md =
      "# Title\n\nSome **bold** and `code` text, see [the datasheet](https://example.com/h100.pdf).\n\n"
      "## Section\n\n| a | b |\n|---|---:|\n| x | 1.5 |\n\n- one\n- two\n\n> a warning\n\n![plot one](p.svg)\n\n"
      "![plot two](q.svg)\n\n![gone](missing.svg)\n";
  const std::string svg =
      "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
      "viewBox=\"0 0 10 10\"><clipPath id=\"clip\"><rect/></clipPath><g clip-path=\"url(#clip)\"/>"
      "<use xlink:href=\"#clip\"/></svg>";
  const std::string html = markdown_to_html(md, {{"p.svg", svg}, {"q.svg", svg}}, "t");
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<strong>bold</strong>"), std::string::npos);
  EXPECT_NE(html.find("<code>code</code>"), std::string::npos);
  EXPECT_NE(html.find("example.com/h100.pdf"), std::string::npos);  // cited as text
  EXPECT_NE(html.find("<td class=\"num\">1.5</td>"), std::string::npos);
  EXPECT_NE(html.find("<li>two</li>"), std::string::npos);
  EXPECT_NE(html.find("<blockquote>a warning</blockquote>"), std::string::npos);
  EXPECT_NE(html.find("<figcaption>plot one</figcaption>"), std::string::npos);
  // Two copies of one plot keep their own clip paths.
  EXPECT_NE(html.find("id=\"fig1-clip\""), std::string::npos);
  EXPECT_NE(html.find("url(#fig2-clip)"), std::string::npos);
  EXPECT_NE(html.find("xlink:href=\"#fig2-clip\""), std::string::npos);
  EXPECT_NE(html.find("missing.svg not available"), std::string::npos);
  EXPECT_NE(html.find("<nav class=\"toc\"><a href=\"#section\">Section</a></nav>"), std::string::npos);
}

TEST(Html, EscapesText) {
  const std::string html = markdown_to_html("a <b> & c\n", {}, "x<y");
  EXPECT_NE(html.find("a &lt;b&gt; &amp; c"), std::string::npos);
  EXPECT_NE(html.find("<title>x&lt;y</title>"), std::string::npos);
}

// ---- Markdown -> HTML, one construct at a time ------------------------------------------------------

namespace {

std::string body_of(const std::string& markdown, const std::map<std::string, std::string>& svgs = {}) {
  const std::string html = markdown_to_html(markdown, svgs, "t");
  const auto begin = html.find("<body>\n") + 7, end = html.find("</body>");
  return html.substr(begin, end - begin);
}

/// The page with <code>, <pre>, <svg> and <style> elements cut out: what a reader sees as text.
std::string outside_code(std::string html) {
  for (const std::string tag : {"pre", "code", "svg", "style"}) {
    for (auto open = html.find("<" + tag); open != std::string::npos; open = html.find("<" + tag, open)) {
      const auto close = html.find("</" + tag + ">", open);
      if (close == std::string::npos) break;
      html.erase(open, close + tag.size() + 3 - open);
    }
  }
  return html;
}

}  // namespace

TEST(Html, Headings) {
  const std::string body = body_of("# Title\n\n## Bandwidth sweep\n\n### Notes on `x + y`\n");
  EXPECT_NE(body.find("<h1 id=\"title\">Title</h1>"), std::string::npos);
  EXPECT_NE(body.find("<h2 id=\"bandwidth-sweep\">Bandwidth sweep</h2>"), std::string::npos);
  EXPECT_NE(body.find("<h3 id=\"notes-on-x-y\">Notes on <code>x + y</code></h3>"), std::string::npos);
  // Only h2s are listed in the contents bar, right after the title.
  EXPECT_NE(body.find("</h1>\n<nav class=\"toc\"><a href=\"#bandwidth-sweep\">Bandwidth sweep</a></nav>"),
            std::string::npos);
}

TEST(Html, ParagraphsJoinLinesAndSplitAtBlankLines) {
  EXPECT_EQ(body_of("one\ntwo\n\nthree\n"), "<p>one two</p>\n<p>three</p>\n");
}

TEST(Html, BoldAndItalics) {
  EXPECT_EQ(body_of("a **bold** b\n"), "<p>a <strong>bold</strong> b</p>\n");
  EXPECT_EQ(body_of("a *slanted* and _slanted_ b\n"), "<p>a <em>slanted</em> and <em>slanted</em> b</p>\n");
  // Underscores inside words and lone stars are text.
  EXPECT_EQ(body_of("hbm_tb_per_s and 2 * 3 * 4\n"), "<p>hbm_tb_per_s and 2 * 3 * 4</p>\n");
  EXPECT_EQ(body_of("**unclosed bold\n"), "<p>**unclosed bold</p>\n");
}

TEST(Html, CodeSpansInsideBoldAndMarkupInsideCode) {
  // The warning lines of every measuring section: a bold span that holds a code span.
  EXPECT_EQ(body_of("- **add `cuda_events`** (n=1024): high spread\n"),
            "<ul>\n<li><strong>add <code>cuda_events</code></strong> (n=1024): high spread</li>\n</ul>\n");
  EXPECT_EQ(body_of("**`a` and `b`**\n"), "<p><strong><code>a</code> and <code>b</code></strong></p>\n");
  EXPECT_EQ(body_of("*see `x`*\n"), "<p><em>see <code>x</code></em></p>\n");
  // Inside a code span nothing is markup; double backticks hold a backtick.
  EXPECT_EQ(body_of("`a**b**_c_` and ``x`y``\n"), "<p><code>a**b**_c_</code> and <code>x`y</code></p>\n");
  EXPECT_EQ(body_of("an `unclosed code span\n"), "<p>an `unclosed code span</p>\n");
}

TEST(Html, BackslashEscapes) {
  EXPECT_EQ(body_of("\\*not italic\\* and \\`not code\\`\n"), "<p>&#42;not italic&#42; and &#96;not code&#96;</p>\n");
}

TEST(Html, LinksLocalAreLinkedWebAreCitedOffline) {
  EXPECT_EQ(body_of("see [the plot](roofline.svg)\n"), "<p>see <a href=\"roofline.svg\">the plot</a></p>\n");
  EXPECT_EQ(body_of("see [the datasheet](https://example.com/h100.pdf) or http://x.org\n"),
            "<p>see the datasheet (example.com/h100.pdf) or x.org</p>\n");
  EXPECT_EQ(body_of("**[bold link](a.md)**\n"), "<p><strong><a href=\"a.md\">bold link</a></strong></p>\n");
}

TEST(Html, ImagesInlineTheirSvgOrSayItIsMissing) {
  const std::string svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><g id=\"a\"/></svg>";
  const std::string body = body_of("![the **roofline**](r.svg)\n\n![gone](missing.svg)\n", {{"r.svg", svg}});
  EXPECT_NE(body.find("<figure><svg><g id=\"fig1-a\"/></svg><figcaption>the <strong>roofline</strong></figcaption></figure>"),
            std::string::npos);
  EXPECT_NE(body.find("<p class=\"missing\">[figure missing.svg not available]</p>"), std::string::npos);
}

TEST(Html, TablesWithCodeAndEscapedPipes) {
  const std::string body = body_of(
      "| key | value |\n|---|---:|\n| `a|b` and `c\\|d` | 1.5 |\n| x \\| y | **`z`** |\n");
  EXPECT_NE(body.find("<th>key</th><th class=\"num\">value</th>"), std::string::npos);
  EXPECT_NE(body.find("<tr><td><code>a|b</code> and <code>c|d</code></td><td class=\"num\">1.5</td></tr>"),
            std::string::npos);
  EXPECT_NE(body.find("<tr><td>x &#124; y</td><td class=\"num\"><strong><code>z</code></strong></td></tr>"),
            std::string::npos);
  // A table ends at the first line that is not a row.
  EXPECT_NE(body_of("| a |\n|---|\n| 1 |\nafter\n").find("</table></div>\n<p>after</p>"), std::string::npos);
}

TEST(Html, BulletAndNumberedLists) {
  EXPECT_EQ(body_of("text\n- one\n- **two**\n\n1. first\n2. `second`\n"),
            "<p>text</p>\n<ul>\n<li>one</li>\n<li><strong>two</strong></li>\n</ul>\n"
            "<ol>\n<li>first</li>\n<li><code>second</code></li>\n</ol>\n");
}

TEST(Html, BlockQuotes) {
  EXPECT_EQ(body_of("> **This section failed:** no `GPU`\n> try again\n"),
            "<blockquote><strong>This section failed:</strong> no <code>GPU</code> try again</blockquote>\n");
  EXPECT_EQ(body_of("> one\n>\n> two\n"), "<blockquote><p>one</p><p>two</p></blockquote>\n");
}

TEST(Html, FencedCodeBlocksAreLiteral) {
  EXPECT_EQ(body_of("```\n**not bold** <tag> & `x`\nhttps://a.b\n```\nafter\n"),
            "<pre><code>**not bold** &lt;tag&gt; &amp; `x`\na.b\n</code></pre>\n<p>after</p>\n");
}

TEST(Html, EscapesLessThanGreaterThanAndAmpersand) {
  EXPECT_EQ(body_of("a <b> & c, `<i>&`\n"), "<p>a &lt;b&gt; &amp; c, <code>&lt;i&gt;&amp;</code></p>\n");
  EXPECT_NE(markdown_to_html("x", {}, "x<y").find("<title>x&lt;y</title>"), std::string::npos);
}

TEST(Html, RealReportLeavesNoMarkdownOutsideCode) {
  // A model-only report as `ridge report` wrote it, plus the lines the GPU sections write that a
  // model-only report lacks (warnings, failures, record tables).
  std::ifstream in(std::string(RIDGE_SOURCE_DIR) + "/tests/unit/data/model_only_report.md");
  ASSERT_TRUE(in) << "missing tests/unit/data/model_only_report.md";
  std::stringstream md;
  md << in.rdbuf();
  ASSERT_NE(md.str().find("**"), std::string::npos);
  md << "\n## Bandwidth sweep\n\n> **This section failed:** cuBLAS said `CUBLAS_STATUS_NOT_SUPPORTED`\n\n"
        "| record | params | dtype | method | median |\n|---|---|---|---|---:|\n"
        "| add | elements=1024, variant=vec4 | fp32 | `spin_hold` | 5.1 us |\n\n"
        "Warnings:\n\n- **add `cuda_events`** (elements=1024): CV 12% is high\n"
        "- **matmul `graph_replay`** (n=256): the working set fits in L2 (`--cold` flushes it)\n";
  const std::string text = outside_code(markdown_to_html(md.str(), {}, "report"));
  EXPECT_EQ(text.find("**"), std::string::npos) << text.substr(text.find("**") - std::min<std::size_t>(text.find("**"), 80), 160);
  EXPECT_EQ(text.find('`'), std::string::npos) << text.substr(text.find('`') - std::min<std::size_t>(text.find('`'), 80), 160);
  EXPECT_NE(text.find("<strong>add </strong>"), std::string::npos);  // its <code>cuda_events</code> cut out
}

TEST(Predictions, EveryKeyIsSpelledByItsConstant) {
  const std::vector<std::string> constants{
      prediction::naive_over_sync,     prediction::matmul_fp32_4096_ms, prediction::launch_overhead_us,
      prediction::hbm_tb_per_s,        prediction::bf16_tflop_per_s,    prediction::ridge_point_bf16,
      prediction::add_tb_per_s,        prediction::add_fraction_of_datasheet, prediction::matmul_70pct_n,
      prediction::decode_tokens_per_s, prediction::decode_fraction_of_ceiling, prediction::kernels_per_step,
      prediction::launch_gap_fraction};
  ASSERT_EQ(prediction_keys().size(), constants.size());
  for (std::size_t i = 0; i < constants.size(); ++i) EXPECT_EQ(prediction_keys()[i].key, constants[i]);
}

TEST(ReportContext, DatasheetCeilingsFillWhatWasNotMeasured) {
  const CatalogEntry& h100 = catalog_entry("h100-sxm");
  detail::ReportContext ctx;
  detail::use_datasheet_ceilings(ctx, h100);
  EXPECT_EQ(ctx.ceilings.memory_bytes_per_s, h100.ceilings.memory_bytes_per_s);
  EXPECT_EQ(ctx.ceilings.source_text, "datasheet of " + h100.name);
  EXPECT_GT(ctx.ceilings.memory_bytes_per_s, 0);
  EXPECT_EQ(ctx.memory_bytes, h100.memory_bytes);
  ctx.memory_bytes = 1e9;  // the running device's own memory is kept
  detail::use_datasheet_ceilings(ctx, h100);
  EXPECT_EQ(ctx.memory_bytes, 1e9);
}

namespace {
Record slowdown_record(const std::string& name, Method method, nlohmann::json params) {
  Record r;
  r.name = name;
  r.method = method;
  r.dtype = DType::bf16;
  r.params = std::move(params);
  r.samples_ms = {1.0, 2.0, 3.0};
  finalize(r);
  return r;
}
}  // namespace

TEST(RecordSlowdown, SelectsByNameMethodDtypeAndParams) {
  const Record gemm = slowdown_record("matmul", Method::graph_replay, {{"n", 4096}, {"case", "large"}});
  const detail::RecordSlowdown every_word{.selector = "matmul graph_replay n=4096 case=large bf16", .relative = 0.1};
  EXPECT_TRUE(every_word.selects(gemm));
  EXPECT_FALSE((detail::RecordSlowdown{.selector = "matmul n=2048", .relative = 0.1}).selects(gemm));
  EXPECT_FALSE((detail::RecordSlowdown{.selector = "matmul spin_hold", .relative = 0.1}).selects(gemm));
  EXPECT_FALSE((detail::RecordSlowdown{.selector = "matmul m=4096", .relative = 0.1}).selects(gemm));  // no such param
  EXPECT_FALSE((detail::RecordSlowdown{.selector = "  ", .relative = 0.1}).selects(gemm));
}

TEST(RecordSlowdown, ShiftsTheSamplesAndSaysSo) {
  std::vector<Record> records{slowdown_record("matmul", Method::graph_replay, {{"n", 4096}}),
                              slowdown_record("bandwidth.add", Method::graph_replay, {{"n", 1024}}),
                              slowdown_record("decode.check_logits", Method::none, {})};
  const detail::RecordSlowdown by_ten_percent{.selector = "graph_replay", .relative = 0.1};
  EXPECT_EQ(by_ten_percent.apply(records), 2u);
  EXPECT_DOUBLE_EQ(records[0].summary.median, 2.2);
  EXPECT_NEAR(records[1].samples_ms[2], 3.3, 1e-12);
  ASSERT_EQ(records[0].warnings.size(), 1u);
  EXPECT_NE(records[0].warnings[0].find("testing aid"), std::string::npos);
  EXPECT_DOUBLE_EQ(records[2].summary.median, 2.0);  // a check carries no time: never slowed
  const detail::RecordSlowdown by_half_a_us{.selector = "bandwidth.add", .added_us = 0.5};
  EXPECT_EQ(by_half_a_us.apply(records), 1u);
  EXPECT_NEAR(records[1].summary.median, 2.2 + 0.0005, 1e-12);
}

TEST(RecordSlowdown, RefusesWhatSlowsNothingOrIsNotANumber) {
  EXPECT_THROW((detail::RecordSlowdown{.selector = "matmul"}).validate(), UsageError);
  EXPECT_THROW((detail::RecordSlowdown{.selector = "", .relative = 0.1}).validate(), UsageError);
  EXPECT_THROW((detail::RecordSlowdown{.selector = "matmul", .relative = -0.1}).validate(), UsageError);
  EXPECT_THROW((detail::RecordSlowdown{.selector = "matmul", .added_us = std::nan("")}).validate(), UsageError);
  EXPECT_NO_THROW((detail::RecordSlowdown{.selector = "matmul", .relative = 0.1}).validate());
}
