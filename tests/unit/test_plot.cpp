#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/plot.hpp"

using namespace ridge;

namespace {

// A tiny XML checker: enough of XML 1.0 to prove an SVG is well-formed (balanced, properly nested
// tags, quoted attributes, known entities) and to hand back its elements for further checks.
struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // character data directly inside, entities decoded
  std::vector<std::string> path;  // names of the enclosing elements
};

class XmlChecker {
 public:
  explicit XmlChecker(const std::string& doc) : s_(doc) {}

  std::vector<Element> parse() {
    skip_space();
    if (s_.compare(i_, 5, "<?xml") == 0) {
      const auto end = s_.find("?>", i_);
      if (end == std::string::npos) fail("unterminated XML declaration");
      i_ = end + 2;
    }
    std::vector<std::size_t> open;  // indices into elements_
    bool root_seen = false;
    while (true) {
      if (open.empty()) skip_space();
      if (i_ >= s_.size()) break;
      if (s_[i_] == '<') {
        if (s_.compare(i_, 4, "<!--") == 0) {
          const auto end = s_.find("-->", i_);
          if (end == std::string::npos) fail("unterminated comment");
          i_ = end + 3;
        } else if (s_.compare(i_, 2, "</") == 0) {
          i_ += 2;
          const std::string name = read_name();
          skip_space();
          expect('>');
          if (open.empty()) fail("closing tag </" + name + "> with nothing open");
          if (elements_[open.back()].name != name)
            fail("</" + name + "> closes <" + elements_[open.back()].name + ">");
          open.pop_back();
        } else {
          if (open.empty() && root_seen) fail("a second root element");
          root_seen = true;
          ++i_;
          Element e;
          e.name = read_name();
          for (auto k : open) e.path.push_back(elements_[k].name);
          while (true) {
            skip_space();
            if (i_ >= s_.size()) fail("unterminated tag <" + e.name);
            if (s_[i_] == '/' || s_[i_] == '>') break;
            const std::string attr = read_name();
            skip_space();
            expect('=');
            skip_space();
            const char quote = s_[i_];
            if (quote != '"' && quote != '\'') fail("unquoted attribute " + attr);
            ++i_;
            const auto end = s_.find(quote, i_);
            if (end == std::string::npos) fail("unterminated attribute " + attr);
            const std::string raw = s_.substr(i_, end - i_);
            if (raw.find('<') != std::string::npos) fail("'<' inside attribute " + attr);
            if (e.attributes.count(attr)) fail("duplicate attribute " + attr);
            e.attributes[attr] = decode(raw);
            i_ = end + 1;
          }
          elements_.push_back(e);
          if (s_[i_] == '/') {
            ++i_;
            expect('>');
          } else {
            expect('>');
            open.push_back(elements_.size() - 1);
          }
        }
      } else {
        if (open.empty()) fail("text outside the root element");
        const auto end = s_.find('<', i_);
        if (end == std::string::npos) fail("text runs to the end of the document");
        elements_[open.back()].text += decode(s_.substr(i_, end - i_));
        i_ = end;
      }
    }
    if (!open.empty()) fail("<" + elements_[open.back()].name + "> is never closed");
    if (!root_seen) fail("no root element");
    return elements_;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("not well-formed at byte " + std::to_string(i_) + ": " + why);
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    if (i_ >= s_.size() || s_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string read_name() {
    const auto start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == '_' ||
                              s_[i_] == ':' || s_[i_] == '.'))
      ++i_;
    if (i_ == start) fail("expected a name");
    return s_.substr(start, i_ - start);
  }
  std::string decode(const std::string& raw) const {
    std::string out;
    for (std::size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] != '&') {
        out += raw[k];
        continue;
      }
      const auto semi = raw.find(';', k);
      if (semi == std::string::npos) fail("bare '&'");
      const std::string entity = raw.substr(k + 1, semi - k - 1);
      static const std::map<std::string, char> known{{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
      if (!known.count(entity)) fail("unknown entity &" + entity + ";");
      out += known.at(entity);
      k = semi;
    }
    return out;
  }

  const std::string& s_;
  std::size_t i_ = 0;
  std::vector<Element> elements_;
};

std::vector<Element> parse_svg(const std::string& svg) { return XmlChecker(svg).parse(); }

template <typename Pred>
std::vector<Element> select(const std::vector<Element>& all, Pred pred) {
  std::vector<Element> out;
  for (const auto& e : all)
    if (pred(e)) out.push_back(e);
  return out;
}

bool has_class(const Element& e, const std::string& c) {
  auto it = e.attributes.find("class");
  return it != e.attributes.end() && it->second == c;
}

Plot roofline_like() {
  Plot p;
  p.title = "Roofline <test> & co";
  p.x_label = "arithmetic intensity (FLOP/byte)";
  p.y_label = "attainable (FLOP/s)";
  PlotSeries hbm{"HBM 3.35 TB/s", {{0.01, 0.01 * 3.35e12}, {295, 295 * 3.35e12}}, true, false, false, ""};
  PlotSeries roof{"BF16 989 TFLOP/s", {{295, 989e12}, {1e4, 989e12}}, true, false, true, ""};
  roof.end_label = "BF16 989 TFLOP/s";
  PlotSeries ops{"measured", {{1365, 600e12, "matmul 4096"}, {0.0833, 0.25e12, "add 2^28"}, {120, 300e12, ""}}, false,
                 true, false, ""};
  p.series = {hbm, roof, ops};
  return p;
}

struct Rect {
  double x, y, w, h;
};

Rect plot_rect(const std::vector<Element>& els) {
  for (const auto& e : els)
    if (e.name == "rect" && e.attributes.count("stroke") && e.attributes.at("fill") == "none")
      return {std::stod(e.attributes.at("x")), std::stod(e.attributes.at("y")), std::stod(e.attributes.at("width")),
              std::stod(e.attributes.at("height"))};
  throw std::runtime_error("no plot frame");
}

}  // namespace

TEST(XmlChecker, RejectsMalformedDocuments) {
  EXPECT_NO_THROW(parse_svg("<a><b x=\"1\"/>t&amp;t</a>"));
  EXPECT_THROW(parse_svg("<a><b></a></b>"), std::runtime_error);
  EXPECT_THROW(parse_svg("<a>"), std::runtime_error);
  EXPECT_THROW(parse_svg("<a x=1/>"), std::runtime_error);
  EXPECT_THROW(parse_svg("<a>x & y</a>"), std::runtime_error);
  EXPECT_THROW(parse_svg("<a/><b/>"), std::runtime_error);
}

TEST(Plot, WellFormedWithAxesTitlesAndLegend) {
  const std::string svg = render_svg(roofline_like());
  std::vector<Element> els;
  ASSERT_NO_THROW(els = parse_svg(svg)) << svg;
  ASSERT_FALSE(els.empty());
  EXPECT_EQ(els.front().name, "svg");
  EXPECT_EQ(els.front().attributes.at("xmlns"), "http://www.w3.org/2000/svg");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);  // self-contained: nothing external

  auto titles = select(els, [](const Element& e) { return has_class(e, "axis-title"); });
  ASSERT_EQ(titles.size(), 2u);
  EXPECT_EQ(titles[0].text, "arithmetic intensity (FLOP/byte)");
  EXPECT_EQ(titles[1].text, "attainable (FLOP/s)");
  auto title = select(els, [](const Element& e) { return has_class(e, "title"); });
  ASSERT_EQ(title.size(), 1u);
  EXPECT_EQ(title[0].text, "Roofline <test> & co");  // escaped in the file, decoded here

  // Decade ticks: x spans 0.01..10k, y spans 1e10..1e16 at least; their labels are present.
  auto tick_labels = select(els, [](const Element& e) { return has_class(e, "tick-label"); });
  std::vector<std::string> texts;
  for (const auto& t : tick_labels) texts.push_back(t.text);
  for (const char* want : {"0.01", "0.1", "1", "10", "100", "1k", "10k", "10G", "1T", "1P"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << "missing tick label " << want;

  const std::string legend_text = [&] {
    std::string all;
    for (const auto& e : els)
      if (std::find(e.path.begin(), e.path.end(), "g") != e.path.end() && e.name == "text") all += e.text + "|";
    return all;
  }();
  EXPECT_NE(legend_text.find("HBM 3.35 TB/s"), std::string::npos);
  EXPECT_NE(legend_text.find("measured"), std::string::npos);

  // Lines: one solid, one dashed.
  auto lines = select(els, [](const Element& e) { return e.name == "polyline"; });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].attributes.count("stroke-dasharray"), 0u);
  EXPECT_EQ(lines[1].attributes.count("stroke-dasharray"), 1u);
}

TEST(Plot, EveryMarkerInsideThePlotAreaWithTooltipAndLabel) {
  const std::string svg = render_svg(roofline_like());
  const auto els = parse_svg(svg);
  const Rect r = plot_rect(els);
  auto markers = select(els, [](const Element& e) { return has_class(e, "marker"); });
  ASSERT_EQ(markers.size(), 3u);
  for (const auto& m : markers) {
    const double cx = std::stod(m.attributes.at("cx")), cy = std::stod(m.attributes.at("cy"));
    EXPECT_GE(cx, r.x);
    EXPECT_LE(cx, r.x + r.w);
    EXPECT_GE(cy, r.y);
    EXPECT_LE(cy, r.y + r.h);
  }
  auto tips = select(els, [](const Element& e) { return e.name == "title"; });
  ASSERT_EQ(tips.size(), 3u);
  EXPECT_NE(tips[0].text.find("matmul 4096"), std::string::npos);
  EXPECT_NE(tips[2].text.find("measured"), std::string::npos);  // unlabelled point: the series name
  auto labels = select(els, [](const Element& e) { return has_class(e, "point-label"); });
  ASSERT_EQ(labels.size(), 2u);
  auto end_labels = select(els, [](const Element& e) { return has_class(e, "end-label"); });
  ASSERT_EQ(end_labels.size(), 1u);
  EXPECT_EQ(end_labels[0].text, "BF16 989 TFLOP/s");

  // The higher point is drawn higher (smaller y), and the log mapping is monotone in x.
  const double y_matmul = std::stod(markers[0].attributes.at("cy")), y_add = std::stod(markers[1].attributes.at("cy"));
  EXPECT_LT(y_matmul, y_add);
  EXPECT_GT(std::stod(markers[0].attributes.at("cx")), std::stod(markers[2].attributes.at("cx")));
}

TEST(Plot, FixedRangeLeavesOutsidePointsOut) {
  Plot p = roofline_like();
  p.x_min = 1;
  p.x_max = 1000;  // 1365 and 0.0833 fall outside
  const auto els = parse_svg(render_svg(p));
  const Rect r = plot_rect(els);
  auto markers = select(els, [](const Element& e) { return has_class(e, "marker"); });
  ASSERT_EQ(markers.size(), 1u);
  const double cx = std::stod(markers[0].attributes.at("cx"));
  EXPECT_GE(cx, r.x);
  EXPECT_LE(cx, r.x + r.w);
  // Lines are clipped to the plot area.
  for (const auto& e : els)
    if (e.name == "polyline") {
      EXPECT_EQ(e.attributes.count("clip-path"), 1u);
    }
}

TEST(Plot, LinearAxes) {
  Plot p;
  p.log_x = p.log_y = false;
  p.x_label = "n";
  p.y_label = "ms";
  p.series = {PlotSeries{"t", {{0, -1}, {5, 3}, {10, 7}}}};
  const auto els = parse_svg(render_svg(p));
  auto tick_labels = select(els, [](const Element& e) { return has_class(e, "tick-label"); });
  std::vector<std::string> texts;
  for (const auto& t : tick_labels) texts.push_back(t.text);
  for (const char* want : {"0", "10", "-2", "8"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << "missing tick label " << want;
  const Rect r = plot_rect(els);
  for (const auto& m : select(els, [](const Element& e) { return has_class(e, "marker"); })) {
    EXPECT_GE(std::stod(m.attributes.at("cy")), r.y);
    EXPECT_LE(std::stod(m.attributes.at("cy")), r.y + r.h);
  }
}

TEST(Plot, RejectsBadInput) {
  Plot empty;
  EXPECT_THROW(render_svg(empty), UsageError);
  Plot no_points;
  no_points.series = {PlotSeries{"nothing", {}}};
  EXPECT_THROW(render_svg(no_points), UsageError);
  Plot zero = roofline_like();
  zero.series[2].points.push_back({0, 1e12, "zero intensity"});
  try {
    render_svg(zero);
    FAIL() << "a zero on a log axis must be rejected";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("log axis"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("measured"), std::string::npos) << e.what();
  }
  Plot negative_y = roofline_like();
  negative_y.series[0].points[0].y = -5;
  EXPECT_THROW(render_svg(negative_y), UsageError);
  Plot nan = roofline_like();
  nan.series[0].points[0].x = std::nan("");
  EXPECT_THROW(render_svg(nan), UsageError);
  Plot tiny = roofline_like();
  tiny.width = 50;
  EXPECT_THROW(render_svg(tiny), UsageError);
}

TEST(Plot, AxisValueFormat) {
  EXPECT_EQ(format_axis_value(1e12), "1T");
  EXPECT_EQ(format_axis_value(2.5e15), "2.5P");
  EXPECT_EQ(format_axis_value(1000), "1k");
  EXPECT_EQ(format_axis_value(0.01), "0.01");
  EXPECT_EQ(format_axis_value(100), "100");
  EXPECT_EQ(format_axis_value(0), "0");
  EXPECT_EQ(format_axis_value(1e-5), "1e-05");
}

// ---- pinned output: the renderer's SVG, byte for byte --------------------------------------------

#include "golden.hpp"

TEST(PlotGolden, RooflineWithLabelsEndLabelAndLegend) {
  expect_matches_golden("plot_roofline.svg", render_svg(roofline_like()));
}

TEST(PlotGolden, FixedRangesCrowdedLabelsAndLinearAxes) {
  Plot fixed = roofline_like();
  fixed.x_min = 0.1;
  fixed.x_max = 1000;
  fixed.y_min = 1e11;
  fixed.y_max = 2e15;
  PlotSeries crowd{.name = "crowd", .line = false, .labels_below = true};
  for (int i = 0; i < 12; ++i) crowd.points.push_back({1.0 + i * 0.3, 1e13 * (1 + 0.05 * i), "point " + std::to_string(i)});
  fixed.series.push_back(crowd);
  PlotSeries quiet{.name = "tooltips only", .line = false, .draw_labels = false};
  quiet.points = {{3, 4e13, "hidden label"}, {30, 4e14, "another"}};
  fixed.series.push_back(quiet);
  PlotSeries unlisted{.name = "not in legend", .dashed = true, .color = "#123456", .in_legend = false};
  unlisted.points = {{0.2, 2e11}, {500, 1e15}};
  fixed.series.push_back(unlisted);
  expect_matches_golden("plot_fixed_crowded.svg", render_svg(fixed));

  Plot linear;
  linear.log_x = linear.log_y = false;
  linear.x_label = "x";
  linear.width = 420;
  linear.height = 300;
  linear.series = {PlotSeries{"t", {{0, -1}, {5, 3}, {10, 7}}}, PlotSeries{"flat", {{2, 2}, {8, 2}}}};
  expect_matches_golden("plot_linear.svg", render_svg(linear));

  Plot one_decade;
  one_decade.title = "inside one decade";
  one_decade.series = {PlotSeries{"narrow", {{2, 3}, {4, 5}}}};
  expect_matches_golden("plot_one_decade.svg", render_svg(one_decade));
}
