// The CPU side of the GEMM sweep: options, the roofs it compares with, roofline placement of each
// record, the 70% / 90% knees, findings and plots.
#include "ridge/matmul.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"

namespace ridge {

namespace {
constexpr double unknown = std::numeric_limits<double>::quiet_NaN();
bool is_square(const GemmShape& s) { return s.m == s.n && s.n == s.k; }
}  // namespace

std::string to_string(GemmBackend b) { return b == GemmBackend::cublaslt ? "cublaslt" : "cublas"; }

GemmBackend gemm_backend_from_string(const std::string& name) {
  if (name == "cublaslt" || name == "lt") return GemmBackend::cublaslt;
  if (name == "cublas" || name == "cublas_rowmajor" || name == "torch") return GemmBackend::cublas_rowmajor;
  throw UsageError(fmt::format("unknown GEMM backend '{}': use cublaslt or cublas", name));
}

nlohmann::json gemm_params(const GemmShape& shape) {
  return nlohmann::json{{param_key::m, shape.m}, {param_key::n, shape.n}, {param_key::k, shape.k}};
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
    o.sizes = geometric_sizes(512, 8192, 4);
    o.samples = std::min(o.samples, 10);
  }
  o.dtypes = without_repeats(o.dtypes);
  o.sizes = without_repeats(o.sizes);
  o.shapes = without_repeats(o.shapes);
  if (o.dtypes.empty()) throw UsageError("dtypes: the list is empty; give at least one of fp32, tf32, fp16, bf16, fp8");
  std::vector<std::string> dtype_names;
  for (DType d : o.dtypes) dtype_names.push_back(to_string(d));
  if (o.samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", o.warmup));
  if (o.tune_candidates < 1) throw UsageError(fmt::format("tune_candidates must be >= 1, got {}", o.tune_candidates));
  validate_ceilings_mode(o.ceilings);
  if (!o.shapes.empty()) {
    p.square = false;
    for (const auto& dtype : dtype_names)
      for (const auto& s : o.shapes) {
        if (s.m < 1 || s.n < 1 || s.k < 1)
          throw UsageError(fmt::format("shapes: sizes must be > 0, got {}x{}x{}", s.m, s.n, s.k));
        SweepPoint pt;
        pt.dtype = dtype;
        pt.shape = s;
        pt.size = (s.m == s.n && s.n == s.k) ? s.n : 0;
        pt.index = p.points.size();
        p.points.push_back(pt);
      }
  } else {
    validate_sizes(o.sizes, "sizes");
    p.points = sweep_points({}, {}, dtype_names, o.sizes);
  }
  for (const auto& pt : p.points)
    if (pt.shape.m > 65536 || pt.shape.n > 65536 || pt.shape.k > 65536)
      throw UsageError(fmt::format("{}: GEMM {}x{}x{} is larger than ridge measures (each side <= 65536)",
                                   p.square ? "sizes" : "shapes", pt.shape.m, pt.shape.n, pt.shape.k));
  return p;
}

namespace {

// The two sets of ceilings a GEMM is compared with, by label; null when absent.
const DeviceCeilings* datasheet_of(const CeilingsLookup& c) { return c.datasheet ? &c.datasheet->ceilings : nullptr; }
const DeviceCeilings* measured_of(const CeilingsLookup& c) { return c.measured ? &c.measured->ceilings : nullptr; }

double peak_of(const DeviceCeilings* c, DType d) { return c ? c->peak_flops(to_string(d)) : 0; }
double bandwidth_of(const DeviceCeilings* c) { return c ? c->memory_bytes_per_s : 0; }
// A roof to place a GEMM under: the dtype's peak and the memory bandwidth both known.
bool has_roof(const DeviceCeilings* c, DType d) { return peak_of(c, d) > 0 && bandwidth_of(c) > 0; }

}  // namespace

GemmPlacement annotate_gemm_record(Record& r, const CeilingsLookup& ceilings, double empty_ms, double l2, bool cold) {
  const DType dtype = dtype_of(r);
  const DeviceCeilings *ds = datasheet_of(ceilings), *me = measured_of(ceilings);
  const double rate = r.flops_per_s();
  GemmPlacement p;
  p.intensity_flop_per_byte = r.intensity_flop_per_byte();
  const bool cache_resident = !cold && l2 > 0 && r.bytes <= l2;  // the working set is A, B and C once
  extra_key::tflop_per_s.set(r, rate / 1e12);
  extra_key::empty_launch_ms.set(r, empty_ms);
  extra_key::cache_resident.set(r, cache_resident);
  extra_key::l2_bytes.set(r, l2);
  // Each roof's three numbers, under its own three keys.
  struct Keys {
    ExtraField<double> attainable, of_attainable, of_peak;
  };
  auto place = [&](const DeviceCeilings* c, double& attainable, double& of_attainable, double& of_peak, Keys keys) {
    if (!has_roof(c, dtype)) {
      attainable = of_attainable = of_peak = unknown;
      return;
    }
    const double peak = peak_of(c, dtype), bandwidth = bandwidth_of(c);
    attainable = attainable_flops(p.intensity_flop_per_byte, peak, bandwidth);
    of_attainable = rate / attainable;
    of_peak = rate / peak;
    keys.attainable.set(r, attainable);
    keys.of_attainable.set(r, of_attainable);
    keys.of_peak.set(r, of_peak);
    if (p.bound.empty())
      p.bound = to_string(classify(p.intensity_flop_per_byte, peak, bandwidth));
  };
  place(ds, p.datasheet_attainable_flops_per_s, p.fraction_of_datasheet_attainable, p.fraction_of_datasheet_peak,
        {extra_key::datasheet_attainable_flops_per_s, extra_key::fraction_of_datasheet_attainable,
         extra_key::fraction_of_datasheet_peak});
  place(me, p.measured_attainable_flops_per_s, p.fraction_of_measured_attainable, p.fraction_of_measured_peak,
        {extra_key::measured_attainable_flops_per_s, extra_key::fraction_of_measured_attainable,
         extra_key::fraction_of_measured_peak});
  if (!p.bound.empty()) extra_key::bound.set(r, p.bound);
  // A cache-resident working set can beat the HBM floor honestly; the compute floor always holds.
  double floor_peak = std::max(peak_of(ds, dtype), peak_of(me, dtype));
  if (floor_peak <= 0) floor_peak = fastest_known_peak_flops(dtype);
  double floor_bw = std::max(bandwidth_of(ds), bandwidth_of(me));
  if (cache_resident || floor_bw <= 0) floor_bw = 1e18;  // no memory floor to hold it to
  DeviceCeilings floor;
  floor.source_text = ceilings.datasheet ? "datasheet of " + ceilings.datasheet->name : "fastest known GPU";
  floor.memory_bytes_per_s = floor_bw;
  floor.peak_flops_per_s[to_string(dtype)] = floor_peak;
  add_plausibility_warnings(r, floor, l2);
  return p;
}

std::vector<Knee> matmul_knees(const std::vector<Record>& records, DType dtype, double peak) {
  std::vector<RatePoint> rates;
  for (const auto& r : records)
    if (r.dtype == dtype && is_square(gemm_shape(r))) rates.push_back({double(gemm_shape(r).n), r.flops_per_s()});
  if (rates.empty() || !(peak > 0)) return {};
  return find_knees(rates, peak);
}

MatmulKnees matmul_knees_against(const std::vector<Record>& records, DType d, const DeviceCeilings& ceilings,
                                 const std::string& label) {
  MatmulKnees k;
  k.dtype = d;
  k.ceiling = label;
  k.peak_flops_per_s = ceilings.peak_flops(to_string(d));
  k.peak_phrase = peak_phrase(ceilings, to_string(d));
  k.knees = matmul_knees(records, d, k.peak_flops_per_s);
  for (const auto& r : records)
    if (r.dtype == d && is_square(gemm_shape(r)) && r.flops_per_s() > k.best_flops_per_s) {
      k.best_flops_per_s = r.flops_per_s();
      k.best_n = double(gemm_shape(r).n);
    }
  return k;
}

std::string knee_sentence(const MatmulKnees& k) {
  std::vector<std::string> reached, missed;
  for (const auto& knee : k.knees)
    if (knee.size)
      reached.push_back(fmt::format("{:.0f}% at n ≈ {:.0f}", knee.fraction * 100, *knee.size));
    else
      missed.push_back(fmt::format("{:.0f}%", knee.fraction * 100));
  std::string text = fmt::format("Against {}, {} ", k.peak_phrase, dtype_title(to_string(k.dtype)));
  if (!reached.empty()) text += fmt::format("reaches {}", fmt::join(reached, " and "));
  if (!reached.empty() && !missed.empty()) text += " but ";
  if (!missed.empty()) text += fmt::format("does not reach {} in this sweep", fmt::join(missed, " or "));
  return text + fmt::format(". Best: {} at n = {:.0f} ({} of that peak).", format_flops(k.best_flops_per_s), k.best_n,
                            format_percent(k.best_flops_per_s / k.peak_flops_per_s));
}

namespace {

// The GEMMs on the roofline: under the measured ceilings with the datasheet's behind them, or
// under the datasheet's alone.
Plot gemm_roofline_plot(const MatmulSweep& s) {
  const CeilingsLookup& c = s.setup.ceilings;
  std::vector<RooflineOperation> operations;
  for (const auto& r : s.records)
    operations.push_back({shape_label(gemm_shape(r)), to_string(r.dtype), r.intensity_flop_per_byte(), r.flops_per_s(),
                          to_string(r.dtype) + " measured", ""});
  RooflinePlotOptions options;
  options.title = fmt::format("GEMMs on the {} roofline", s.setup.device.name);
  for (DType d : s.setup.plan.options.dtypes) options.dtypes.push_back(to_string(d));
  if (c.measured) {
    options.overlay = c.datasheet_ceilings();
    options.overlay_dtypes = options.dtypes;  // each swept dtype's datasheet roof too
  }
  return roofline_plot(c.best().value_or(DeviceCeilings{}), operations, options);
}

// TFLOP/s against n (or FLOPs per call), with each known peak.
Plot gemm_rate_plot(const MatmulSweep& s) {
  const auto& p = s.setup.plan;
  Plot rate;
  rate.title = fmt::format("GEMM throughput vs size on {} ({})", s.setup.device.name, p.options.cold ? "cold L2" : "hot L2");
  rate.x_label = p.square ? "n (square n x n x n)" : "FLOPs per call";
  rate.y_label = "TFLOP/s";
  rate.log_y = false;
  double x_lo = 1e300, x_hi = 0;
  for (DType d : p.options.dtypes) {
    PlotSeries curve;
    curve.name = to_string(d);
    for (const auto& r : s.records) {
      if (r.dtype != d) continue;
      const GemmShape shape = gemm_shape(r);
      const double x = p.square ? double(shape.n) : r.flops;
      curve.points.push_back({x, r.flops_per_s() / 1e12,
                              fmt::format("{} {}: {:.0f} TFLOP/s", to_string(r.dtype), shape_label(shape), r.flops_per_s() / 1e12)});
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
    rate.series.push_back(std::move(curve));
  }
  for (DType d : p.options.dtypes)
    for (const auto& [c, label] : {std::pair{datasheet_of(s.setup.ceilings), std::string("datasheet")},
                                   std::pair{measured_of(s.setup.ceilings), std::string("measured")}}) {
      if (!has_roof(c, d)) continue;
      const double peak = peak_of(c, d);
      rate.series.push_back(line_series(fmt::format("{} {} peak", to_string(d), label),
                                        {{x_lo, peak / 1e12, ""}, {x_hi, peak / 1e12, ""}}, true));
    }
  return rate;
}

}  // namespace

void analyze_matmul_sweep(MatmulSweep& s) {
  s.knees.clear();
  s.findings.clear();
  if (s.setup.ceilings.measured)
    for (auto& note : raise_to_attained(s.setup.ceilings.measured->ceilings, s.records))
      s.findings.push_back({std::move(note), 0});
  for (DType d : s.setup.plan.options.dtypes) {
    for (const auto& [c, label] : {std::pair{datasheet_of(s.setup.ceilings), std::string("datasheet")},
                                   std::pair{measured_of(s.setup.ceilings), std::string("measured")}}) {
      if (peak_of(c, d) <= 0) continue;
      MatmulKnees k = matmul_knees_against(s.records, d, *c, label);
      if (k.knees.empty()) continue;  // no square record of this dtype
      s.findings.push_back({knee_sentence(k), 0});
      for (auto& r : s.records)
        if (r.dtype == d)
          for (const auto& knee : k.knees)
            r.extra[extra_key::knee_of_peak_n(knee.fraction, label)] =
                knee.size ? nlohmann::json(*knee.size) : nlohmann::json(nullptr);
      s.knees.push_back(std::move(k));
    }
  }
  if (!s.records.empty()) {
    s.rate_plot = gemm_rate_plot(s);
    s.roofline_plot = gemm_roofline_plot(s);
  }
}

}  // namespace ridge
