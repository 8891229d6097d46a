#include <gtest/gtest.h>

#include "ridge/errors.hpp"
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
