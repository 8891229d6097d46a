// The CPU side of the GEMM sweep: options, the roofs it compares with, roofline placement of each
// record, the 70% / 90% knees, findings and plots.
#include "ridge/matmul.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"

namespace ridge {

namespace {
constexpr double unknown = std::numeric_limits<double>::quiet_NaN();
std::string key(std::string_view k) { return std::string(k); }
bool is_square(const GemmShape& s) { return s.m == s.n && s.n == s.k; }
}  // namespace

std::string to_string(GemmBackend b) { return b == GemmBackend::cublaslt ? "cublaslt" : "cublas"; }

GemmBackend gemm_backend_from_string(const std::string& name) {
  if (name == "cublaslt" || name == "lt") return GemmBackend::cublaslt;
  if (name == "cublas" || name == "cublas_rowmajor" || name == "torch") return GemmBackend::cublas_rowmajor;
  throw UsageError(fmt::format("unknown GEMM backend '{}': use cublaslt or cublas", name));
}

nlohmann::json gemm_params(const GemmShape& shape) {
  return nlohmann::json{{key(param_key::m), shape.m}, {key(param_key::n), shape.n}, {key(param_key::k), shape.k}};
}

GemmShape gemm_shape(const Record& record) {
  const auto m = int_param(record, param_key::m), n = int_param(record, param_key::n), k = int_param(record, param_key::k);
  if (!m || !n || !k) throw Error(fmt::format("record '{}' is not a GEMM record: it lacks m, n or k", record.name));
  return GemmShape{*m, *n, *k};
}

std::string shape_label(const GemmShape& s) {
  return is_square(s) ? fmt::format("{}", s.n) : fmt::format("{}x{}x{}", s.m, s.n, s.k);
}

MatmulPlan plan_matmul_sweep(const MatmulSweepOptions& given) {
  MatmulPlan p;
  p.options = given;
  auto& o = p.options;
  if (o.quick) {
    o.sizes = "512:8192:x4";
    o.samples = std::min(o.samples, 10);
  }
  std::vector<std::string> dtype_names;
  for (const auto& name : parse_list(o.dtypes, "--dtypes")) {
    p.dtypes.push_back(dtype_from_string(name));
    dtype_names.push_back(to_string(p.dtypes.back()));
  }
  p.method = parse_method_option(o.method);
  if (o.samples < 1) throw UsageError(fmt::format("--samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  if (o.tune_candidates < 1) throw UsageError(fmt::format("--tune must be >= 1, got {}", o.tune_candidates));
  validate_ceilings_mode(o.ceilings);
  if (!o.shapes.empty()) {
    p.square = false;
    const auto shapes = parse_shapes(o.shapes);
    for (const auto& dtype : dtype_names)
      for (const auto& s : shapes) {
        SweepPoint pt;
        pt.dtype = dtype;
        pt.shape = s;
        pt.size = (s.m == s.n && s.n == s.k) ? s.n : 0;
        pt.index = p.points.size();
        p.points.push_back(pt);
      }
  } else {
    p.points = sweep_points({}, {}, dtype_names, parse_sizes(o.sizes));
  }
  for (const auto& pt : p.points)
    if (pt.shape.m > 65536 || pt.shape.n > 65536 || pt.shape.k > 65536)
      throw UsageError(fmt::format("GEMM {}x{}x{} is larger than ridge measures (each side <= 65536)", pt.shape.m,
                                   pt.shape.n, pt.shape.k));
  return p;
}

GemmRoof MatmulCeilings::datasheet_roof(DType d) const {
  const auto it = datasheet.find(d);
  return it == datasheet.end() ? GemmRoof{} : it->second;
}

GemmRoof MatmulCeilings::measured_roof(DType d) const {
  const auto it = measured.find(d);
  return it == measured.end() ? GemmRoof{} : it->second;
}

MatmulCeilings matmul_ceilings(const std::optional<CatalogEntry>& datasheet, const std::optional<MeasuredCeilings>& measured,
                               const std::vector<DType>& dtypes, std::string measured_note) {
  MatmulCeilings c;
  if (datasheet) c.datasheet_name = datasheet->name;
  for (DType d : dtypes) {
    if (datasheet) c.datasheet[d] = GemmRoof{datasheet->peak(d).value_or(0), datasheet->ceilings.memory_bytes_per_s};
    if (measured)
      c.measured[d] = GemmRoof{measured->ceilings.peak_flops(to_string(d)), measured->ceilings.memory_bytes_per_s};
  }
  c.measured_note = std::move(measured_note);
  return c;
}

GemmPlacement annotate_gemm_record(Record& r, const MatmulCeilings& ceilings, double empty_ms, double l2, bool cold) {
  const DType dtype = dtype_from_string(r.dtype);
  const GemmRoof ds = ceilings.datasheet_roof(dtype), me = ceilings.measured_roof(dtype);
  const double rate = r.flops_per_s();
  GemmPlacement p;
  p.intensity_flop_per_byte = r.intensity_flop_per_byte();
  const bool cache_resident = !cold && l2 > 0 && r.bytes <= l2;  // the working set is A, B and C once
  r.extra["tflop_per_s"] = rate / 1e12;
  r.extra["empty_launch_ms"] = empty_ms;
  r.extra["cache_resident"] = cache_resident;
  r.extra["l2_bytes"] = l2;
  auto place = [&](const GemmRoof& roof, double& attainable, double& of_attainable, double& of_peak, const char* label) {
    if (!roof.known()) {
      attainable = of_attainable = of_peak = unknown;
      return;
    }
    attainable = attainable_flops(p.intensity_flop_per_byte, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s);
    of_attainable = rate / attainable;
    of_peak = rate / roof.peak_flops_per_s;
    r.extra[fmt::format("{}_attainable_flops_per_s", label)] = attainable;
    r.extra[fmt::format("fraction_of_{}_attainable", label)] = of_attainable;
    r.extra[fmt::format("fraction_of_{}_peak", label)] = of_peak;
    if (p.bound.empty())
      p.bound = to_string(classify(p.intensity_flop_per_byte, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s));
  };
  place(ds, p.datasheet_attainable_flops_per_s, p.fraction_of_datasheet_attainable, p.fraction_of_datasheet_peak,
        "datasheet");
  place(me, p.measured_attainable_flops_per_s, p.fraction_of_measured_attainable, p.fraction_of_measured_peak, "measured");
  if (!p.bound.empty()) r.extra["bound"] = p.bound;
  // A cache-resident working set can beat the HBM floor honestly; the compute floor always holds.
  double floor_peak = std::max(ds.peak_flops_per_s, me.peak_flops_per_s);
  if (floor_peak <= 0) floor_peak = fastest_known_peak_flops(dtype);
  double floor_bw = std::max(ds.bandwidth_bytes_per_s, me.bandwidth_bytes_per_s);
  if (cache_resident || floor_bw <= 0) floor_bw = 1e18;  // no memory floor to hold it to
  DeviceCeilings floor;
  floor.source_text = !ceilings.datasheet_name.empty() ? "datasheet of " + ceilings.datasheet_name : "fastest known GPU";
  floor.memory_bytes_per_s = floor_bw;
  floor.peak_flops_per_s[to_string(dtype)] = floor_peak;
  add_plausibility_warnings(r, floor, l2);
  return p;
}

std::vector<Knee> matmul_knees(const std::vector<Record>& records, DType dtype, double peak) {
  std::vector<RatePoint> rates;
  for (const auto& r : records)
    if (r.dtype == to_string(dtype) && is_square(gemm_shape(r))) rates.push_back({double(gemm_shape(r).n), r.flops_per_s()});
  if (rates.empty() || !(peak > 0)) return {};
  return find_knees(rates, peak);
}

namespace {

MatmulKnees knees_of(const std::vector<Record>& records, DType d, const std::string& label, double peak) {
  MatmulKnees k;
  k.dtype = d;
  k.ceiling = label;
  k.peak_flops_per_s = peak;
  k.knees = matmul_knees(records, d, peak);
  for (const auto& r : records)
    if (r.dtype == to_string(d) && is_square(gemm_shape(r)) && r.flops_per_s() > k.best_flops_per_s) {
      k.best_flops_per_s = r.flops_per_s();
      k.best_n = double(gemm_shape(r).n);
    }
  return k;
}

Finding knee_finding(const MatmulKnees& k) {
  std::string words;
  for (const auto& knee : k.knees) {
    if (!words.empty()) words += "; ";
    words += knee.size ? fmt::format("{:.0f}% at n ≈ {:.0f}", knee.fraction * 100, *knee.size)
                       : fmt::format("{:.0f}% never in this sweep", knee.fraction * 100);
  }
  return {fmt::format("{} reaches {} of the {} peak ({}); best {} at n = {:.0f} ({}).", to_string(k.dtype), words,
                      k.ceiling, format_flops(k.peak_flops_per_s), format_flops(k.best_flops_per_s), k.best_n,
                      format_percent(k.best_flops_per_s / k.peak_flops_per_s)),
          0};
}

void build_plots(MatmulSweep& s) {
  const auto& p = s.setup.plan;
  const std::string& device = s.setup.device.name;
  Plot& rate = s.rate_plot;
  Plot& roofline = s.roofline_plot;
  rate = Plot{};
  roofline = Plot{};
  rate.title = fmt::format("GEMM throughput vs size on {} ({})", device, p.options.cold ? "cold L2" : "hot L2");
  rate.x_label = p.square ? "n (square n x n x n)" : "FLOPs per call";
  rate.y_label = "TFLOP/s";
  rate.log_y = false;
  roofline.title = fmt::format("GEMMs on the {} roofline", device);
  roofline.x_label = "arithmetic intensity (FLOP/byte)";
  roofline.y_label = "TFLOP/s";
  double i_lo = 1e300, i_hi = 0, x_lo = 1e300, x_hi = 0;
  for (DType d : p.dtypes) {
    PlotSeries curve, dots;
    curve.name = to_string(d);
    dots.name = to_string(d) + " measured";
    dots.line = false;
    for (const auto& r : s.records) {
      if (r.dtype != to_string(d)) continue;
      const GemmShape shape = gemm_shape(r);
      const double x = p.square ? double(shape.n) : r.flops;
      curve.points.push_back({x, r.flops_per_s() / 1e12,
                              fmt::format("{} {}: {:.0f} TFLOP/s", r.dtype, shape_label(shape), r.flops_per_s() / 1e12)});
      dots.points.push_back({r.intensity_flop_per_byte(), r.flops_per_s() / 1e12, shape_label(shape)});
      i_lo = std::min(i_lo, r.intensity_flop_per_byte());
      i_hi = std::max(i_hi, r.intensity_flop_per_byte());
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
    rate.series.push_back(std::move(curve));
    roofline.series.push_back(std::move(dots));
  }
  // Roofs: the HBM slope up to the ridge, then the dtype's peak, from 1/10 of the lowest intensity
  // to 10x the highest (and always past the ridge).
  for (DType d : p.dtypes)
    for (const auto& [roof, label, dashed] : {std::tuple{s.setup.ceilings.datasheet_roof(d), std::string("datasheet"), false},
                                             std::tuple{s.setup.ceilings.measured_roof(d), std::string("measured"), true}}) {
      if (!roof.known()) continue;
      const double peak = roof.peak_flops_per_s, bw = roof.bandwidth_bytes_per_s;
      const double ridge = ridge_point(peak, bw);
      const double lo = std::min(i_lo / 10, ridge / 10), hi = std::max(i_hi * 10, ridge * 10);
      roofline.series.push_back(line_series(fmt::format("{} {} roof", to_string(d), label),
                                            {{lo, lo * bw / 1e12, ""},
                                             {ridge, peak / 1e12, fmt::format("ridge {:.0f} FLOP/B", ridge)},
                                             {hi, peak / 1e12, ""}},
                                            dashed));
      rate.series.push_back(line_series(fmt::format("{} {} peak", to_string(d), label),
                                        {{x_lo, peak / 1e12, ""}, {x_hi, peak / 1e12, ""}}, true));
    }
}

}  // namespace

void analyze_matmul_sweep(MatmulSweep& s) {
  s.knees.clear();
  s.findings.clear();
  for (DType d : s.setup.plan.dtypes) {
    for (const auto& [roof, label] : {std::pair{s.setup.ceilings.datasheet_roof(d), std::string("datasheet")},
                                      std::pair{s.setup.ceilings.measured_roof(d), std::string("measured")}}) {
      if (roof.peak_flops_per_s <= 0) continue;
      MatmulKnees k = knees_of(s.records, d, label, roof.peak_flops_per_s);
      if (k.knees.empty()) continue;  // no square record of this dtype
      s.findings.push_back(knee_finding(k));
      for (auto& r : s.records)
        if (r.dtype == to_string(d))
          for (const auto& knee : k.knees)
            r.extra[fmt::format("knee_{:.0f}_of_{}_peak_n", knee.fraction * 100, label)] =
                knee.size ? nlohmann::json(*knee.size) : nlohmann::json(nullptr);
      s.knees.push_back(std::move(k));
    }
  }
  if (!s.records.empty()) build_plots(s);
}

}  // namespace ridge
