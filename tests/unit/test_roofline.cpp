#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

using namespace ridge;

TEST(Roofline, SeedPrefillIntensity) {
  // A 4096^3 BF16 GEMM: 2*4096^3 / (3*4096^2*2) = 4096/3 = 1365.3.
  EXPECT_NEAR(matmul_intensity(4096, 4096, 4096), 1365.33, 0.01);
}

TEST(Roofline, SeedBatchedDecodeIntensity) {
  // Batch B tokens through a [4096,4096] BF16 weight: [B,4096] @ [4096,4096].
  EXPECT_NEAR(matmul_intensity(1, 4096, 4096), 1.0, 0.01);
  EXPECT_NEAR(matmul_intensity(8, 4096, 4096), 8.0, 0.05);
  EXPECT_NEAR(matmul_intensity(128, 4096, 4096), 120.5, 1.0);  // seed: "about 120"
  EXPECT_NEAR(matmul_intensity(512, 4096, 4096), 409.6, 1.0);  // seed: "about 410"
}

TEST(Roofline, SeedH100RidgePoint) {
  EXPECT_NEAR(ridge_point(990e12, 3.35e12), 295.5, 0.5);
}

TEST(Roofline, AttainableIsMinOfRoofs) {
  EXPECT_DOUBLE_EQ(attainable_flops(1.0, 990e12, 3.35e12), 3.35e12);
  EXPECT_DOUBLE_EQ(attainable_flops(1000.0, 990e12, 3.35e12), 990e12);
  EXPECT_EQ(classify(1.0 / 12, 990e12, 3.35e12), Bound::memory);
  EXPECT_EQ(classify(1365, 990e12, 3.35e12), Bound::compute);
}

TEST(Roofline, DecodeCeiling) {
  // 1 GB of weights at 1 TB/s: 1000 tokens/s at batch 1; KV bytes shared by nobody.
  EXPECT_DOUBLE_EQ(decode_ceiling(1e9, 1e12), 1000);
  EXPECT_DOUBLE_EQ(decode_ceiling(1e9, 1e12, 4), 4000);
  EXPECT_DOUBLE_EQ(decode_ceiling(1e9, 1e12, 2, 0.5e9), 1000);
}

TEST(Roofline, SeedAmdahl) {
  EXPECT_NEAR(amdahl_speedup(0.10, std::numeric_limits<double>::infinity()), 1.111, 0.001);
  EXPECT_NEAR(amdahl_speedup(0.30, 3), 1.25, 1e-12);
  EXPECT_NEAR(amdahl_limit(0.10), 1.111, 0.001);
  auto need = amdahl_required_speedup(0.30, 1.25);
  ASSERT_TRUE(need.has_value());
  EXPECT_NEAR(*need, 3.0, 1e-9);
  EXPECT_FALSE(amdahl_required_speedup(0.10, 1.2).has_value());  // limit is 1.11x
}

TEST(Roofline, RejectsBadInput) {
  EXPECT_THROW(matmul_intensity(0, 4096, 4096), UsageError);
  EXPECT_THROW(matmul_intensity(-1, 4096, 4096), UsageError);
  EXPECT_THROW(attainable_flops(-1, 1e12, 1e12), UsageError);
  EXPECT_THROW(attainable_flops(1, 0, 1e12), UsageError);
  EXPECT_THROW(ridge_point(1e12, 0), UsageError);
  EXPECT_THROW(decode_ceiling(0, 1e12), UsageError);
  EXPECT_THROW(decode_ceiling(1e9, 1e12, 0), UsageError);
  EXPECT_THROW(amdahl_speedup(1.5, 2), UsageError);
  EXPECT_THROW(amdahl_speedup(0.5, 0), UsageError);
  EXPECT_THROW(amdahl_speedup(0.5, -2), UsageError);
}

TEST(Roofline, FloorAndEfficiency) {
  // 12 bytes and 1 FLOP per element, 2^28 elements, 4 TB/s: memory floor.
  const double n = 1 << 28;
  EXPECT_NEAR(roofline_floor_s(12 * n, n, 67e12, 4e12), 12 * n / 4e12, 1e-12);
  EXPECT_NEAR(roofline_efficiency(0.5e12, 1.0, 990e12, 1e12), 0.5, 1e-12);
}

// ---- operations placed on a roofline, and the one plot builder --------------------------------

namespace {

DeviceCeilings test_ceilings(CeilingsSource source = CeilingsSource::measured) {
  DeviceCeilings c;
  c.source = source;
  c.source_text = "test";
  c.memory_bytes_per_s = 4e12;
  c.l2_bytes_per_s = 10e12;
  c.peak_flops_per_s = {{"fp32", 50e12}, {"bf16", 700e12}, {"fp16", 720e12}};
  return c;
}

const PlotSeries* series_named(const Plot& plot, const std::string& prefix) {
  for (const auto& s : plot.series)
    if (s.name.rfind(prefix, 0) == 0) return &s;
  return nullptr;
}

Record gemm_record(double n, double ms, const std::string& dtype) {
  Record r;
  r.name = "matmul";
  r.dtype = dtype_from_string(dtype);
  const auto size = static_cast<std::int64_t>(n);  // as the matmul sweep records it
  r.params = {{"m", size}, {"n", size}, {"k", size}};
  r.samples_ms = {ms};
  r.flops = matmul_flops(n, n, n);
  r.bytes = matmul_bytes(n, n, n);
  finalize(r);
  return r;
}

}  // namespace

TEST(RooflinePlacement, UnderTheDtypesRoofOrFp32s) {
  const DeviceCeilings c = test_ceilings();
  // Memory-bound BF16 at 10 FLOP/byte: attainable 40 TFLOP/s; 20 achieved is half of it.
  const auto low = place_on_roofline(c, {.label = "x", .dtype = "bf16", .intensity_flop_per_byte = 10, .flops_per_s = 20e12});
  EXPECT_DOUBLE_EQ(low.roof_flops_per_s, 700e12);
  EXPECT_DOUBLE_EQ(low.attainable_flops_per_s, 40e12);
  EXPECT_DOUBLE_EQ(low.efficiency, 0.5);
  EXPECT_EQ(low.bound, Bound::memory);
  EXPECT_FALSE(low.above_roof());
  // FP32 above its roof by 10% is flagged.
  const auto high = place_on_roofline(c, {.dtype = "fp32", .intensity_flop_per_byte = 1000, .flops_per_s = 55e12});
  EXPECT_DOUBLE_EQ(high.roof_flops_per_s, 50e12);
  EXPECT_EQ(high.bound, Bound::compute);
  EXPECT_TRUE(high.above_roof());
  // An unknown dtype, or one the ceilings lack, is refused: never placed under another dtype's roof.
  EXPECT_THROW(place_on_roofline(c, {.dtype = "int8", .intensity_flop_per_byte = 1000, .flops_per_s = 55e12}), UsageError);
  EXPECT_THROW(place_on_roofline(c, {.dtype = "fp8_e4m3", .intensity_flop_per_byte = 10, .flops_per_s = 1}), UsageError);
  // Nothing to place under ceilings without a bandwidth, or an operation without intensity.
  DeviceCeilings no_memory = c;
  no_memory.memory_bytes_per_s = 0;
  EXPECT_THROW(place_on_roofline(no_memory, {.dtype = "bf16", .intensity_flop_per_byte = 10, .flops_per_s = 1}), UsageError);
  EXPECT_THROW(place_on_roofline(c, {.dtype = "bf16", .intensity_flop_per_byte = 0, .flops_per_s = 1}), UsageError);
}

TEST(RooflinePlacement, OperationsFromRecords) {
  const auto op = roofline_operation(gemm_record(4096, 0.2, "bf16"));
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->label, "matmul bf16 n=4096");
  EXPECT_NEAR(op->intensity_flop_per_byte, 1365.3, 0.1);
  EXPECT_NEAR(op->flops_per_s, matmul_flops(4096, 4096, 4096) / 0.2e-3, 1e6);
  Record stream;
  stream.name = "bandwidth.add";
  stream.dtype = DType::fp32;
  stream.params = {{"elements", 1 << 20}};
  stream.samples_ms = {0.01};
  stream.flops = 1 << 20;
  stream.bytes = 12.0 * (1 << 20);
  finalize(stream);
  EXPECT_EQ(roofline_operation(stream)->label, "bandwidth.add fp32 2^20 elements");
  Record no_flops = stream;
  no_flops.flops = 0;
  EXPECT_FALSE(roofline_operation(no_flops).has_value());
}

TEST(RooflinePlacement, RidgePointsPerDtype) {
  const auto rows = ridge_points(catalog_entry("h100-sxm").ceilings, test_ceilings());
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().dtype, "fp64");
  EXPECT_DOUBLE_EQ(rows.front().measured, 0);  // not measured
  for (const auto& r : rows)
    if (r.dtype == "bf16") {
      EXPECT_NEAR(r.datasheet, 295, 1);
      EXPECT_DOUBLE_EQ(r.measured, 175);
    }
}

TEST(RooflinePlot, DrawsSlopesRoofsRidgePointsAndOperations) {
  const DeviceCeilings c = test_ceilings();
  const std::vector<RooflineOperation> ops{
      {.label = "a", .dtype = "bf16", .intensity_flop_per_byte = 5, .flops_per_s = 10e12},
      {.label = "b", .dtype = "bf16", .intensity_flop_per_byte = 50000, .flops_per_s = 600e12},
      {.label = "c", .dtype = "fp32", .intensity_flop_per_byte = 2, .flops_per_s = 1e12, .series = "stream"},
  };
  const Plot plot = roofline_plot(c, ops, {.title = "t"});
  EXPECT_EQ(plot.title, "t");
  EXPECT_TRUE(plot.log_x && plot.log_y);
  EXPECT_DOUBLE_EQ(plot.x_min, 0.01);
  EXPECT_DOUBLE_EQ(plot.x_max, 1e5);  // widened to the decade of the 50,000 FLOP/byte operation

  // The memory slope rises from the left edge to the highest roof, at the bandwidth.
  const PlotSeries* memory = series_named(plot, "measured memory");
  ASSERT_TRUE(memory);
  ASSERT_EQ(memory->points.size(), 2u);
  EXPECT_DOUBLE_EQ(memory->points[0].x, 0.01);
  EXPECT_DOUBLE_EQ(memory->points[0].y, 0.01 * 4e12);
  EXPECT_DOUBLE_EQ(memory->points[1].y, 720e12);
  EXPECT_DOUBLE_EQ(memory->points[1].x, 720e12 / 4e12);
  ASSERT_TRUE(series_named(plot, "measured L2"));
  EXPECT_TRUE(series_named(plot, "measured L2")->dashed);

  // One flat roof per dtype from its ridge point to the right edge; FP16 and BF16 (within 8%)
  // share one end label, which carries I*.
  int roofs = 0;
  for (const auto& s : plot.series) {
    if (s.line && s.points.size() == 2 && s.points[0].y == s.points[1].y) {
      ++roofs;
      EXPECT_DOUBLE_EQ(s.points[1].x, 1e5);
      EXPECT_DOUBLE_EQ(s.points[0].x, s.points[0].y / 4e12);
    }
  }
  EXPECT_EQ(roofs, 3);
  bool shared = false;
  for (const auto& s : plot.series) shared = shared || s.end_label.find("FP16 720 TFLOP/s, BF16 700 TFLOP/s") == 0;
  EXPECT_TRUE(shared);

  const PlotSeries* knees = series_named(plot, "ridge points");
  ASSERT_TRUE(knees);
  EXPECT_EQ(knees->points.size(), 3u);  // 12.5, 175 and 180 FLOP/byte
  EXPECT_FALSE(knees->line);

  // Operations: the default series and a named one, each point where it was given.
  const PlotSeries* measured = series_named(plot, "measured operations");
  ASSERT_TRUE(measured);
  ASSERT_EQ(measured->points.size(), 2u);
  EXPECT_EQ(measured->points[1].label, "b");
  EXPECT_DOUBLE_EQ(measured->points[1].x, 50000);
  EXPECT_DOUBLE_EQ(measured->points[1].y, 600e12);
  const PlotSeries* stream = series_named(plot, "stream");
  ASSERT_TRUE(stream);
  EXPECT_FALSE(stream->line);
  EXPECT_EQ(stream->points.size(), 1u);
  EXPECT_FALSE(render_svg(plot).empty());
}

TEST(RooflinePlot, DtypesRangeAndOverlay) {
  DeviceCeilings sheet = test_ceilings(CeilingsSource::datasheet);
  sheet.memory_bytes_per_s = 4.8e12;
  sheet.peak_flops_per_s["bf16"] = 990e12;
  const Plot plot = roofline_plot(test_ceilings(), {},
                                  {.dtypes = {"fp32"}, .overlay = sheet, .x_min = 0.05, .x_max = 2000});
  EXPECT_DOUBLE_EQ(plot.x_min, 0.05);
  EXPECT_DOUBLE_EQ(plot.x_max, 2000);
  int roofs = 0;
  for (const auto& s : plot.series)
    if (!s.end_label.empty()) {
      ++roofs;
      EXPECT_NE(s.end_label.find("FP32"), std::string::npos);
    }
  EXPECT_EQ(roofs, 1) << "only the dtypes asked for";
  const PlotSeries* overlay_memory = series_named(plot, "datasheet memory");
  ASSERT_TRUE(overlay_memory);
  EXPECT_TRUE(overlay_memory->dashed);
  // The measured memory slope goes up to the highest roof drawn of either set (the datasheet's FP32).
  EXPECT_DOUBLE_EQ(series_named(plot, "measured memory")->points[1].y, 50e12);
  const PlotSeries* overlay_roof = series_named(plot, "datasheet BF16");
  ASSERT_TRUE(overlay_roof);
  EXPECT_DOUBLE_EQ(overlay_roof->points[0].y, 990e12);
  EXPECT_FALSE(series_named(plot, "measured operations")) << "no operations, no series";
}

TEST(RooflinePlot, OverlayRoofsAskedFor) {
  DeviceCeilings sheet = test_ceilings(CeilingsSource::datasheet);
  sheet.memory_bytes_per_s = 4.8e12;
  sheet.peak_flops_per_s = {{"fp32", 67e12}, {"tf32", 490e12}, {"bf16", 990e12}};
  const Plot plot = roofline_plot(test_ceilings(), {}, {.dtypes = {"fp32", "tf32"}, .overlay = sheet,
                                                        .overlay_dtypes = {"fp32", "tf32"}});
  const PlotSeries* fp32 = series_named(plot, "datasheet FP32");
  ASSERT_TRUE(fp32);
  EXPECT_TRUE(fp32->dashed);
  EXPECT_DOUBLE_EQ(fp32->points[0].y, 67e12);
  EXPECT_DOUBLE_EQ(fp32->points[0].x, 67e12 / 4.8e12);  // starts at the datasheet's ridge point
  ASSERT_TRUE(series_named(plot, "datasheet TF32"));
  EXPECT_FALSE(series_named(plot, "datasheet BF16")) << "only the overlay roofs asked for";
  // The measured set has no TF32 peak: its roofs are FP32 alone.
  EXPECT_FALSE(series_named(plot, "measured TF32"));
}

TEST(RooflineAnalysis, ModelOnlyAndMeasured) {
  const CatalogEntry& h200 = catalog_entry("h200-sxm");
  const std::vector<RooflineOperation> ops{*roofline_operation(gemm_record(4096, 0.25, "bf16"))};
  const RooflineAnalysis model = analyze_roofline(std::nullopt, h200, std::nullopt, ops);
  EXPECT_TRUE(model.model_only());
  EXPECT_EQ(model.placed_on, "datasheet");
  ASSERT_EQ(model.placements.size(), 1u);
  EXPECT_DOUBLE_EQ(model.placements[0].roof_flops_per_s, h200.ceilings.peak_flops("bf16"));
  EXPECT_EQ(model.plot.title, "Roofline: " + h200.name + " (datasheet)");
  EXPECT_TRUE(model.records.empty());

  MeasuredCeilings m;
  m.ceilings = test_ceilings();
  Record hbm;
  hbm.name = "ceiling.hbm.copy";
  m.records.push_back(hbm);
  DeviceDescription d;
  d.name = "NVIDIA H200";
  const RooflineAnalysis measured = analyze_roofline(d, h200, m, ops);
  EXPECT_FALSE(measured.model_only());
  EXPECT_EQ(measured.placed_on, "measured");
  EXPECT_DOUBLE_EQ(measured.placements[0].roof_flops_per_s, 700e12);
  EXPECT_TRUE(series_named(measured.plot, "datasheet memory")) << "the datasheet drawn behind";
  ASSERT_EQ(measured.records.size(), 1u);
  EXPECT_DOUBLE_EQ(measured.records[0].extra["datasheet_bytes_per_s"].get<double>(), 4.8e12);
  EXPECT_THROW(analyze_roofline(std::nullopt, std::nullopt, std::nullopt, ops), UsageError);
}

TEST(RooflineAnalysis, OptionsAreCheckedBeforeAnyWork) {
  RooflineOptions o;
  EXPECT_FALSE(o.model_only());
  EXPECT_NO_THROW(o.validate());
  o.device = "h100-sxm";
  EXPECT_TRUE(o.model_only());
  o.refresh = true;
  EXPECT_THROW(o.validate(), UsageError);
  o.device = "123456";
  EXPECT_THROW(o.validate(), UsageError);
}

TEST(RooflinePlausibility, FloorUsesTheRecordsDtypeRoofElseTheHighest) {
  // 4096^3 in 0.2 ms is 687 TFLOP/s: possible at BF16's 700, impossible at FP32's 50.
  const DeviceCeilings c = test_ceilings();
  Record bf16 = gemm_record(4096, 0.2, "bf16");
  EXPECT_TRUE(add_plausibility_warnings(bf16, c).empty());
  Record fp32 = gemm_record(4096, 0.2, "fp32");
  const auto w = add_plausibility_warnings(fp32, c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("impossible"), std::string::npos);
  EXPECT_NE(w[0].find("(test)"), std::string::npos) << "names where the ceilings come from: " << w[0];
  // A dtype the ceilings lack is held to the highest roof (720 TFLOP/s), never to a lower one.
  Record fp8 = gemm_record(4096, 0.2, "fp8_e4m3");
  EXPECT_TRUE(add_plausibility_warnings(fp8, c).empty());
  Record too_fast = gemm_record(4096, 0.1, "fp8_e4m3");  // 1.37 PFLOP/s
  EXPECT_FALSE(add_plausibility_warnings(too_fast, c).empty());
}

TEST(RooflineShapes, DecodeAtBatch16IsMemoryBoundOnAnH100AndBatch512IsNot) {
  const ridge::DeviceCeilings& h100 = ridge::catalog_entry("h100-sxm").ceilings;
  const auto decode = ridge::place_matmul(h100, 16, 4096, 4096, ridge::DType::bf16);
  EXPECT_NEAR(decode.intensity_flop_per_byte, 2.0 * 16 * 4096 * 4096 / ((16.0 * 4096 * 2 + 4096.0 * 4096) * 2), 1e-9);
  EXPECT_EQ(decode.bound, ridge::Bound::memory);
  EXPECT_NEAR(decode.attainable_flops_per_s, decode.intensity_flop_per_byte * h100.memory_bytes_per_s, 1);
  EXPECT_NEAR(decode.ridge_point, h100.peak_flops("bf16") / h100.memory_bytes_per_s, 1e-9);
  EXPECT_NEAR(decode.floor_s, decode.bytes / h100.memory_bytes_per_s, 1e-15);
  const auto batch = ridge::place_matmul(h100, 512, 4096, 4096, ridge::DType::bf16);
  EXPECT_NEAR(batch.intensity_flop_per_byte, 409.6, 0.1);
  EXPECT_EQ(batch.bound, ridge::Bound::compute);
  EXPECT_EQ(batch.attainable_flops_per_s, h100.peak_flops("bf16"));
  EXPECT_THROW(ridge::place_matmul(h100, 0, 4096, 4096, ridge::DType::bf16), ridge::UsageError);
  EXPECT_THROW(ridge::place_matmul(ridge::DeviceCeilings{}, 16, 16, 16, ridge::DType::bf16), ridge::UsageError);
}

// ---- issue 26: no silent wrong roofline answers ----------------------------------------------------

namespace {

// The message of the UsageError `f` throws ("" when it throws none).
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinite = std::numeric_limits<double>::infinity();

}  // namespace

TEST(RooflineRefusals, Bf16OnAT4IsRefusedNotPlacedUnderFp32) {
  const CatalogEntry& t4 = catalog_entry("t4");
  const std::string why = usage_error([&] { place_matmul(t4.ceilings, 16, 4096, 4096, DType::bf16); });
  ASSERT_FALSE(why.empty()) << "BF16 on a T4 must be refused";
  EXPECT_NE(why.find("'bf16'"), std::string::npos) << why;
  EXPECT_NE(why.find("T4"), std::string::npos) << why;
  EXPECT_NE(why.find("fp16, fp32"), std::string::npos) << "lists what it has: " << why;
  EXPECT_DOUBLE_EQ(place_matmul(t4.ceilings, 16, 4096, 4096, DType::fp16).roof_flops_per_s, 65e12);
  EXPECT_THROW(place_on_roofline(t4.ceilings, {.label = "k", .dtype = "bf16", .intensity_flop_per_byte = 100,
                                               .flops_per_s = 1e12}),
               UsageError);
  // In an analysis of result files, the BF16 point is drawn but not placed, and the analysis says so.
  const RooflineAnalysis a = analyze_roofline(
      std::nullopt, t4, std::nullopt, {{.label = "k", .dtype = "bf16", .intensity_flop_per_byte = 100, .flops_per_s = 1e12}});
  EXPECT_TRUE(a.placements.empty());
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("has no BF16 roof"), std::string::npos) << a.warnings[0];
  EXPECT_EQ(a.plot.warnings, a.warnings);
}

TEST(RooflineRefusals, UserCeilingsWithOnlyBf16DoNotLendTheirPeakToFp32) {
  DeviceCeilings only_bf16{.source = CeilingsSource::user, .source_text = "given", .memory_bytes_per_s = 2e12,
                           .peak_flops_per_s = {{"bf16", 400e12}}};
  const std::string why = usage_error([&] { place_matmul(only_bf16, 64, 64, 64, DType::fp32); });
  ASSERT_FALSE(why.empty()) << "an FP32 matmul got the BF16 peak";
  EXPECT_NE(why.find("'fp32'"), std::string::npos) << why;
  EXPECT_NE(why.find("it lists bf16"), std::string::npos) << why;
  EXPECT_THROW(only_bf16.roof_for("fp32"), UsageError);
  EXPECT_THROW(only_bf16.roof_for(""), UsageError);
  only_bf16.peak_flops_per_s["fp32"] = 50e12;  // with its own roof it is placed under it
  EXPECT_DOUBLE_EQ(place_matmul(only_bf16, 64, 64, 64, DType::fp32).roof_flops_per_s, 50e12);
}

TEST(RooflineRefusals, CeilingsAreValidatedNamingTheField) {
  DeviceCeilings ok{.memory_bytes_per_s = 2e12, .peak_flops_per_s = {{"bf16", 400e12}, {"fp8_e4m3", 800e12}}};
  EXPECT_NO_THROW(ok.validate());
  auto with = [&](auto change) {
    DeviceCeilings c = ok;
    change(c);
    return usage_error([&] { c.validate(); });
  };
  EXPECT_NE(with([](DeviceCeilings& c) { c.memory_bytes_per_s = -1; }).find("memory_bytes_per_s"), std::string::npos);
  EXPECT_NE(with([](DeviceCeilings& c) { c.memory_bytes_per_s = 0; }).find("memory_bytes_per_s"), std::string::npos);
  EXPECT_NE(with([](DeviceCeilings& c) { c.memory_bytes_per_s = not_a_number; }).find("memory_bytes_per_s"), std::string::npos);
  EXPECT_NE(with([](DeviceCeilings& c) { c.memory_bytes_per_s = infinite; }).find("memory_bytes_per_s"), std::string::npos);
  EXPECT_NE(with([](DeviceCeilings& c) { c.l2_bytes_per_s = -5; }).find("l2_bytes_per_s"), std::string::npos);
  const std::string typo = with([](DeviceCeilings& c) { c.peak_flops_per_s["bf17"] = 1e12; });
  EXPECT_NE(typo.find("'bf17' is not a known dtype"), std::string::npos) << typo;
  EXPECT_NE(typo.find("bf16"), std::string::npos) << "lists the known names: " << typo;
  EXPECT_NE(with([](DeviceCeilings& c) { c.peak_flops_per_s["bf16"] = not_a_number; }).find("peak_flops_per_s['bf16']"),
            std::string::npos);
  EXPECT_FALSE(with([](DeviceCeilings& c) { c.peak_flops_per_s["fp32"] = -1; }).empty());
  EXPECT_FALSE(with([](DeviceCeilings& c) { c.peak_flops_per_s["fp32"] = infinite; }).empty());
  // The JSON form is validated too.
  EXPECT_THROW(device_ceilings_from_json({{"memory_bytes_per_s", -1}, {"peak_flops_per_s", {{"bf16", 1e12}}}}), UsageError);
  EXPECT_THROW(device_ceilings_from_json({{"memory_bytes_per_s", 1e12}, {"peak_flops_per_s", {{"bf17", 1e12}}}}), UsageError);
}

TEST(RooflineRefusals, NanNegativeAndZeroPointsAreRefusedNamingThePoint) {
  for (double bad : {not_a_number, -1.0, 0.0, infinite}) {
    const std::vector<RooflineOperation> x{{.label = "good", .dtype = "bf16", .intensity_flop_per_byte = 10, .flops_per_s = 1e12},
                                           {.label = "bad one", .dtype = "bf16", .intensity_flop_per_byte = bad, .flops_per_s = 1e12}};
    const std::string why = usage_error([&] { roofline_plot(test_ceilings(), x); });
    EXPECT_NE(why.find("'bad one'"), std::string::npos) << bad << ": " << why;
    EXPECT_NE(why.find("intensity_flop_per_byte"), std::string::npos) << why;
    const std::vector<RooflineOperation> y{{.label = "slow", .dtype = "bf16", .intensity_flop_per_byte = 10, .flops_per_s = bad}};
    EXPECT_NE(usage_error([&] { roofline_plot(test_ceilings(), y); }).find("flops_per_s"), std::string::npos) << bad;
    EXPECT_THROW(place_on_roofline(test_ceilings(), y[0]), UsageError);
  }
}

TEST(RooflineRefusals, APointAboveTheRoofIsFlaggedInTheDataAndTheSvg) {
  // BF16 at 10 FLOP/byte: attainable 40 TFLOP/s; 100 TFLOP/s is impossible.
  const std::vector<RooflineOperation> ops{
      {.label = "too fast", .dtype = "bf16", .intensity_flop_per_byte = 10, .flops_per_s = 100e12},
      {.label = "fine", .dtype = "bf16", .intensity_flop_per_byte = 10, .flops_per_s = 20e12}};
  const Plot plot = roofline_plot(test_ceilings(), ops, {.title = "t"});
  ASSERT_EQ(plot.warnings.size(), 1u);
  EXPECT_NE(plot.warnings[0].find("too fast"), std::string::npos) << plot.warnings[0];
  EXPECT_NE(plot.warnings[0].find("impossible"), std::string::npos) << plot.warnings[0];
  const PlotSeries* points = series_named(plot, "measured operations");
  ASSERT_TRUE(points);
  EXPECT_EQ(points->points[0].label, "too fast (impossible: above the roof)");
  EXPECT_EQ(points->points[1].label, "fine");
  const std::string svg = render_svg(plot);
  EXPECT_NE(svg.find("class=\"warning\""), std::string::npos);
  EXPECT_NE(svg.find("too fast (impossible: above the roof)"), std::string::npos);
  // Many warnings: the first three, then how many more.
  Plot many = plot;
  many.warnings = {"w1", "w2", "w3", "w4", "w5", "w6"};  // distinct: identical ones are drawn once, counted
  EXPECT_NE(render_svg(many).find("and 2 more warning(s)"), std::string::npos);
}

TEST(RooflineRefusals, LegendColoursAreTheLinesColours) {
  // The H200's FP16 and BF16 roofs coincide (989.5 TFLOP/s) and share one legend entry.
  const CatalogEntry& h200 = catalog_entry("h200-sxm");
  const std::string svg = render_svg(roofline_plot(h200.ceilings, {}, {.title = "H200"}));
  // Each series group: its name and its line's colour.
  const std::regex series_re(R"re(<g class="series" data-name="([^"]*)">\s*<polyline [^>]*stroke="([^"]+)")re");
  std::map<std::string, std::string> line_color;
  std::set<std::string> drawn;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), series_re); it != std::sregex_iterator(); ++it) {
    drawn.insert((*it)[2]);
    if (!(*it)[1].str().empty()) line_color[(*it)[1]] = (*it)[2];
  }
  const std::string legend = svg.substr(svg.find("<g class=\"legend\">"));
  const std::regex entry_re(R"re(<line [^>]*stroke="([^"]+)"[^>]*/>\s*<text [^>]*>([^<]*)</text>)re");
  std::set<std::string> legend_colors;
  int entries = 0;
  for (auto it = std::sregex_iterator(legend.begin(), legend.end(), entry_re); it != std::sregex_iterator(); ++it) {
    ++entries;
    legend_colors.insert((*it)[1]);
    ASSERT_TRUE(line_color.count((*it)[2])) << "legend entry without a line: " << (*it)[2];
    EXPECT_EQ(line_color[(*it)[2]], (*it)[1]) << "legend colour of " << (*it)[2];
  }
  EXPECT_GE(entries, 5);
  // Every colour a line is drawn in is one the legend shows (a folded roof takes its entry's colour).
  for (const auto& c : drawn) EXPECT_TRUE(legend_colors.count(c)) << "a line drawn in " << c << " has no legend entry";
}

TEST(RooflineRefusals, ModelFunctionsRefuseNanInfAndNegativeNamingTheArgument) {
  auto names = [](auto f, const char* arg) {
    const std::string why = usage_error(f);
    EXPECT_NE(why.find(arg), std::string::npos) << "expected a UsageError naming " << arg << ", got '" << why << "'";
  };
  names([] { classify(not_a_number, 1, 1); }, "intensity");  // was "compute"
  names([] { classify(-1, 1, 1); }, "intensity");
  names([] { classify(1, not_a_number, 1); }, "peak_flops");
  names([] { attainable_flops(not_a_number, 1, 1); }, "intensity");
  names([] { attainable_flops(infinite, 1, 1); }, "intensity");
  names([] { attainable_flops(1, infinite, 1); }, "peak_flops");
  names([] { attainable_flops(1, 1, infinite); }, "bandwidth");
  names([] { ridge_point(infinite, 1); }, "peak_flops");
  names([] { ridge_point(1, not_a_number); }, "bandwidth");
  names([] { roofline_efficiency(not_a_number, 1, 1, 1); }, "measured_flops_per_s");
  names([] { roofline_efficiency(infinite, 1, 1, 1); }, "measured_flops_per_s");
  names([] { roofline_efficiency(1, -1, 1, 1); }, "intensity");
  names([] { roofline_floor_s(infinite, 1, 1, 1); }, "bytes");
  names([] { roofline_floor_s(1, not_a_number, 1, 1); }, "flops");
  names([] { matmul_intensity(infinite, 1, 1); }, "m");
  names([] { matmul_intensity(1, not_a_number, 1); }, "n");
  names([] { matmul_flops(1e300, 1e300, 1e300); }, "overflows");
  names([] { matmul_bytes(1, 1, 1, infinite); }, "bytes_per_element");
  names([] { decode_ceiling(not_a_number, 1); }, "weight_bytes");
  names([] { decode_ceiling(1, 1, 1, infinite); }, "kv_bytes_per_sequence");
  names([] { amdahl_speedup(0.5, not_a_number); }, "speedup");
  names([] { amdahl_speedup(not_a_number, 2); }, "fraction");
  names([] { amdahl_required_speedup(0.5, not_a_number); }, "target");
  names([] { amdahl_limit(not_a_number); }, "fraction");
  EXPECT_NEAR(amdahl_speedup(0.5, infinite), 2.0, 1e-12);  // +infinite speedup stays allowed
}

TEST(RooflineModel, SizesThatOverflowAreRefusedAndHugeBatchesStayFinite) {
  EXPECT_THROW(matmul_flops(1e200, 1e200, 1e200), UsageError);
  EXPECT_THROW(matmul_bytes(1e200, 1e200, 1e200), UsageError);
  // batch * bandwidth / (weights + batch * kv) was inf / inf = NaN here.
  const double tokens = decode_ceiling(1e300, 1e12, 1e300, 1e300);
  EXPECT_TRUE(std::isfinite(tokens) && tokens > 0);
  EXPECT_NEAR(decode_ceiling(1e9, 1e12, 4, 1e8), 4 * 1e12 / (1e9 + 4 * 1e8), 1e-6);
}
