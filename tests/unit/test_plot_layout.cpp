// The plots a person reads: every text box of every SVG ridge writes, measured the way the layout
// estimates it, must overlap no other text and no data marker. Checked here on crowded synthetic
// plots and on plots rendered again from stored results (results/); tests/cli/svg_overlaps checks
// the report's SVGs and every SVG committed under results/.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ridge/bandwidth.hpp"
#include "ridge/catalog.hpp"
#include "ridge/matmul.hpp"
#include "ridge/plot.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

using namespace ridge;
namespace fs = std::filesystem;

namespace {

/// Every overlapping pair of an SVG, as text a failure message can show.
std::vector<std::string> overlaps(const std::string& svg) {
  const auto boxes = svg_boxes(svg);
  std::vector<std::string> out;
  for (const auto& [a, b] : overlapping_boxes(boxes))
    out.push_back(fmt::format("[{}] over [{}]", boxes[a].marker ? "marker" : boxes[a].text,
                              boxes[b].marker ? "marker" : boxes[b].text));
  return out;
}

std::string overlaps_text(const std::vector<std::string>& pairs) {
  std::string out;
  for (std::size_t i = 0; i < pairs.size() && i < 10; ++i) out += "\n  " + pairs[i];
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(SvgBoxes, MeasuresTextsByTheLayoutsEstimateAndLeavesTooltipsOut) {
  const std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" font-size=\"10\">"
      "<text x=\"100\" y=\"50\" text-anchor=\"end\">abcd<title>a long tooltip, never drawn</title></text>"
      "<text x=\"100\" y=\"50\" text-anchor=\"middle\" font-size=\"20\">&amp;&lt;</text>"
      "<text x=\"0\" y=\"0\" transform=\"translate(18,200) rotate(-90)\" text-anchor=\"middle\">vertical</text>"
      "<circle class=\"marker\" cx=\"10\" cy=\"10\" r=\"4\"><title>tip</title></circle>"
      "<circle cx=\"10\" cy=\"10\" r=\"4\"/></svg>";
  const auto boxes = svg_boxes(svg);
  ASSERT_EQ(boxes.size(), 4u);  // the legend-style circle without class="marker" is not data
  EXPECT_EQ(boxes[0].text, "abcd");
  EXPECT_DOUBLE_EQ(boxes[0].x1, 100);
  EXPECT_DOUBLE_EQ(boxes[0].x0, 100 - estimated_text_width("abcd", 10));
  EXPECT_EQ(boxes[1].text, "&<");  // entities decoded: one character each
  EXPECT_DOUBLE_EQ(boxes[1].x1 - boxes[1].x0, estimated_text_width("&<", 20));
  EXPECT_NEAR((boxes[1].x0 + boxes[1].x1) / 2, 100, 1e-9);
  // Turned a quarter left: tall and narrow, centred on y = 200.
  EXPECT_GT(boxes[2].y1 - boxes[2].y0, boxes[2].x1 - boxes[2].x0);
  EXPECT_NEAR((boxes[2].y0 + boxes[2].y1) / 2, 200, 1e-9);
  EXPECT_TRUE(boxes[3].marker);
  // "abcd" (end-anchored at 100) and the 20 px text centred at 100 share pixels: one pair; the
  // marker at (10, 10) touches neither.
  const auto pairs = overlapping_boxes(boxes);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0], (std::pair<std::size_t, std::size_t>{0, 1}));
  EXPECT_EQ(estimated_text_width("µ", 10), estimated_text_width("é", 10));  // characters, not bytes
  EXPECT_LT(estimated_text_width("iiii", 10), estimated_text_width("MMMM", 10));  // DejaVu Sans's widths
  EXPECT_GT(estimated_text_width("ab", 10, true), estimated_text_width("ab", 10));
}

TEST(SvgBoxes, TwoMarkersMayTouchATextOverAMarkerMayNot) {
  std::vector<SvgBox> boxes{{0, 0, 10, 10, true, ""}, {5, 5, 15, 15, true, ""}, {8, 8, 30, 20, false, "label"}};
  const auto pairs = overlapping_boxes(boxes);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].second, 2u);
  EXPECT_EQ(pairs[1].second, 2u);
}

// 57 points on three converging curves, every one labelled: what bandwidth.svg looked like.
TEST(PlotLayout, ACrowdedSweepLabelsOnlyWhatAReaderNeedsAndNothingOverlaps) {
  Plot plot;
  plot.title = "Achieved bandwidth vs size";
  plot.x_label = "elements per array";
  plot.y_label = "GB/s";
  for (const char* variant : {"scalar", "vec4", "grid-stride"}) {
    PlotSeries s{.name = variant};
    for (int e = 10; e <= 28; ++e) {
      const double x = std::pow(2.0, e), y = 4300 * x / (x + 2e6) * (variant[0] == 's' ? 0.97 : 1.0);
      s.points.push_back({x, y, fmt::format("{} 2^{}: {:.0f} GB/s", variant, e, y)});
    }
    s.points[12].key = true;  // a knee
    plot.series.push_back(s);
  }
  plot.series.push_back(PlotSeries{.name = "datasheet 4800 GB/s", .points = {{1024, 4800}, {2.7e8, 4800}}, .markers = false,
                                   .dashed = true, .end_label = "datasheet 4800 GB/s"});
  plot.warnings = {"cache-resident: 39 of 57 points", "cache-resident: 39 of 57 points"};
  const std::string svg = render_svg(plot);
  EXPECT_EQ(overlaps(svg), std::vector<std::string>{}) << overlaps_text(overlaps(svg));
  const std::size_t labels = count(svg, "class=\"point-label\"");
  EXPECT_GE(labels, 3u) << "the knees (key points) are labelled";
  EXPECT_LE(labels, 12u) << "ends, highest points and knees only: not all 57";
  for (const auto& s : plot.series)
    if (s.markers) {
      EXPECT_NE(svg.find(fmt::format(">{}</text>", s.points[12].label)), std::string::npos) << s.name;
    }
  // Every point keeps its value in its tooltip.
  EXPECT_EQ(count(svg, "<circle class=\"marker\""), 57u);
  EXPECT_EQ(count(svg, "GB/s (x = "), 57u);
  // Warnings below the plot, identical ones once and counted.
  EXPECT_EQ(count(svg, "class=\"warning\""), 1u);
  EXPECT_NE(svg.find("cache-resident: 39 of 57 points (2 times)"), std::string::npos);
  const auto warning_y = std::stod(svg.substr(svg.find("y=\"", svg.find("class=\"warning\"")) + 3));
  EXPECT_GT(warning_y, plot.height - 10) << "the warning is drawn below the x axis";
}

// About 60 records at one intensity above the roof, as roofline.svg stacked them.
TEST(PlotLayout, PointsAboveTheRoofAreCountedOnceBelowThePlot) {
  DeviceCeilings c;
  c.source_text = "test ceilings";
  c.memory_bytes_per_s = 4e12;
  c.peak_flops_per_s["bf16"] = 800e12;
  c.peak_flops_per_s["fp32"] = 60e12;
  std::vector<RooflineOperation> ops;
  for (int i = 0; i < 60; ++i)
    ops.push_back({.label = fmt::format("n={}", 1024 << (i % 19)), .dtype = "fp32", .intensity_flop_per_byte = 0.0833,
                   .flops_per_s = 1e12 * (1 + i), .series = i % 3 ? "bandwidth.add" : "bandwidth.copy"});
  ops.push_back({.label = "n=4096", .dtype = "bf16", .intensity_flop_per_byte = 1365, .flops_per_s = 700e12});
  const Plot plot = roofline_plot(c, ops, {.title = "Roofline"});
  ASSERT_EQ(plot.warnings.size(), 1u);
  EXPECT_NE(plot.warnings[0].find("60 points above the roof"), std::string::npos) << plot.warnings[0];
  const std::string svg = render_svg(plot);
  EXPECT_EQ(overlaps(svg), std::vector<std::string>{}) << overlaps_text(overlaps(svg));
  EXPECT_EQ(count(svg, "(impossible: above the roof) (x = "), 60u) << "each point still says so in its tooltip";
  EXPECT_LE(count(svg, "class=\"point-label\""), 8u);
}

TEST(PlotLayout, SizedMarkersAndLongLabelsStayApart) {
  Plot plot;
  PlotSeries s{.name = "kernels", .line = false};
  for (int i = 0; i < 12; ++i)
    s.points.push_back({1.3 + i * 0.2, 1.3e12 * (1 + 0.1 * i), short_kernel_name(fmt::format("void ns::kernel_{}<float>(int)", i)),
                        i < 3 ? 20.0 : 1.0});
  plot.series.push_back(s);
  const std::string svg = render_svg(plot);
  EXPECT_EQ(overlaps(svg), std::vector<std::string>{}) << overlaps_text(overlaps(svg));
}

TEST(ShortKernelName, KeepsWhatAReaderRecognises) {
  EXPECT_EQ(short_kernel_name("void ridge::gpt2::(anonymous namespace)::fused_step_kernel<__nv_bfloat16>(int, float const*)"),
            "fused_step_kernel<bf16>");
  EXPECT_EQ(short_kernel_name("ampere_sgemm_128x64_tn"), "ampere_sgemm_128x64_tn");
  EXPECT_EQ(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"),
            "vectorized_elementwise_kernel<4, at::...");  // cut at 40 characters
  EXPECT_EQ(short_kernel_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(T1::Params)",
                              30)
                .size(),
            30u);
  EXPECT_EQ(short_kernel_name("void (anonymous namespace)::k(int)"), "k");
}

// The bandwidth sweeps stored under results/ (the crowded plots), rendered again from their records.
TEST(PlotLayout, StoredBandwidthSweepsRenderedAgainOverlapNothing) {
  std::size_t rendered = 0;
  for (const char* file : {"results/h200/sweeps/bandwidth_default.json.gz", "results/h200/sweeps/bandwidth_add.json"}) {
    const fs::path path = fs::path(RIDGE_SOURCE_DIR) / file;
    if (!fs::exists(path)) continue;
    const ResultSet stored = load_result_file(path);
    BandwidthSweep sweep;
    sweep.records = stored.records;
    ASSERT_TRUE(stored.context.device) << file;
    sweep.setup.device = *stored.context.device;
    sweep.setup.ceilings.datasheet = match_device(sweep.setup.device);
    for (const auto& r : sweep.records)
      if (r.extra.contains("fraction_of_measured") && r.extra["fraction_of_measured"].is_number() && !sweep.setup.ceilings.measured) {
        MeasuredCeilings m;
        m.ceilings.memory_bytes_per_s = r.bytes_per_s() / r.extra["fraction_of_measured"].get<double>();
        sweep.setup.ceilings.measured = m;
      }
    analyze_bandwidth_sweep(sweep);
    const std::string svg = render_svg(sweep.plot);
    EXPECT_EQ(overlaps(svg), std::vector<std::string>{}) << file << overlaps_text(overlaps(svg));
    // RIDGE_RENDERED_SVG_DIR=DIR: also write the plot there (to look at it, or to replace the committed one).
    if (const char* dir = std::getenv("RIDGE_RENDERED_SVG_DIR"))
      write_text((fs::path(dir) / fs::path(file).filename().replace_extension().replace_extension(".svg")).string(), svg);
    // What was committed, for the record: the count before this layout.
    fs::path committed = path;
    committed.replace_extension();
    if (committed.extension() == ".json") committed.replace_extension();
    committed += ".svg";
    if (fs::exists(committed))
      std::printf("%s: %zu overlapping pairs committed, %zu rendered again\n", committed.filename().c_str(),
                  overlapping_boxes(svg_boxes(read_text(committed))).size(), overlaps(svg).size());
    ++rendered;
  }
  EXPECT_EQ(rendered, 2u) << "the stored sweeps under results/h200/sweeps are gone: point this test at others";
}

// The stored BF16 matmul sweep (results/h200/sweeps/matmul_default.json), rendered again.
TEST(PlotLayout, StoredMatmulSweepRenderedAgainOverlapsNothing) {
  const fs::path path = fs::path(RIDGE_SOURCE_DIR) / "results/h200/sweeps/matmul_default.json";
  ASSERT_TRUE(fs::exists(path)) << "the stored sweep is gone: point this test at another";
  const ResultSet stored = load_result_file(path);
  ASSERT_TRUE(stored.context.device);
  MatmulSweep sweep;
  sweep.records = stored.records;
  sweep.setup.device = *stored.context.device;
  sweep.setup.plan = plan_matmul_sweep({});
  sweep.setup.ceilings.datasheet = match_device(sweep.setup.device);  // the run had no measured ceilings
  analyze_matmul_sweep(sweep);
  const std::string svg = render_svg(sweep.rate_plot);
  EXPECT_EQ(overlaps(svg), std::vector<std::string>{}) << overlaps_text(overlaps(svg));
  EXPECT_NE(svg.find("811 TFLOP/s"), std::string::npos) << "the best point (8192, 811 TFLOP/s) is labelled";
  if (const char* dir = std::getenv("RIDGE_RENDERED_SVG_DIR"))
    write_text((fs::path(dir) / "matmul_default-rate.svg").string(), svg);
}
