// The CPU side of the bandwidth sweep: options, the ceilings it compares with, each record's
// derived values, and the analysis (curves, launch-bound ranges, knees, best variants, findings, plot).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ridge/bandwidth.hpp"
#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"

namespace ridge {

namespace {

constexpr double unknown = std::numeric_limits<double>::quiet_NaN();


}  // namespace

// ---- variants and points ------------------------------------------------------------------------

std::string to_string(StreamVariant v) {
  switch (v) {
    case StreamVariant::scalar: return "scalar";
    case StreamVariant::vec4: return "vec4";
    case StreamVariant::grid_stride: return "grid_stride";
    case StreamVariant::broken_for_tests: return "broken_for_tests";
  }
  return "unknown";
}

StreamVariant stream_variant_from_string(const std::string& name) {
  if (name == "scalar") return StreamVariant::scalar;
  if (name == "vec4") return StreamVariant::vec4;
  if (name == "grid_stride" || name == "grid-stride") return StreamVariant::grid_stride;
  throw UsageError(fmt::format("unknown kernel variant '{}': use scalar, vec4 or grid_stride", name));
}

const std::vector<StreamVariant>& user_stream_variants() {
  static const std::vector<StreamVariant> v{StreamVariant::scalar, StreamVariant::vec4, StreamVariant::grid_stride};
  return v;
}

std::string describe(StreamVariant v) {
  switch (v) {
    case StreamVariant::scalar: return "one fp32 element per thread";
    case StreamVariant::vec4: return "one 16-byte float4 per thread (tail elements by extra threads)";
    case StreamVariant::grid_stride: return "grid of SMs x resident blocks striding over the array, float4, 2 in flight";
    case StreamVariant::broken_for_tests: return "deliberately wrong: skips the last element (tests only)";
  }
  return "";
}

nlohmann::json stream_params(const StreamPoint& point, bool cold) {
  return nlohmann::json{{param_key::n, point.n},
                        {param_key::elements, point.n},
                        {param_key::op, to_string(point.op)},
                        {param_key::variant, to_string(point.variant)},
                        {param_key::working_set_bytes, stream_working_set_bytes(point.op, point.n)},
                        {param_key::cold, cold}};
}

StreamPoint stream_point(const Record& record) {
  const auto n = int_param(record, param_key::n);
  const auto op = text_param(record, param_key::op);
  const auto variant = text_param(record, param_key::variant);
  if (!n || !op || !variant)
    throw Error(fmt::format("record '{}' is not a streaming record: it lacks n, op or variant", record.name));
  StreamPoint p;
  p.op = stream_op_from_string(*op);
  p.variant = *variant == "broken_for_tests" ? StreamVariant::broken_for_tests : stream_variant_from_string(*variant);
  p.n = *n;
  return p;
}

// ---- options and ceilings ---------------------------------------------------------------------------

BandwidthPlan plan_bandwidth_sweep(const BandwidthSweepOptions& given) {
  BandwidthPlan p;
  p.options = given;
  auto& o = p.options;
  if (o.quick) {
    o.ops = {StreamOp::add};
    o.sizes = geometric_sizes(1 << 10, 1 << 28, 4);
    o.samples = std::min(o.samples, 10);
  }
  o.ops = without_repeats(o.ops);
  o.variants = without_repeats(o.variants);
  o.sizes = without_repeats(o.sizes);
  if (o.ops.empty()) throw UsageError("ops: the list is empty; give at least one of add, copy, scale, triad, read");
  if (o.variants.empty()) throw UsageError("variants: the list is empty; give at least one of scalar, vec4, grid_stride");
  for (StreamVariant v : o.variants)
    if (v == StreamVariant::broken_for_tests)
      throw UsageError("variants: broken_for_tests exists to test the output check; use scalar, vec4 or grid_stride");
  validate_sizes(o.sizes, "sizes");
  if (o.samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", o.warmup));
  validate_ceilings_mode(o.ceilings);
  const std::int64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  if (largest > (std::int64_t{1} << 34))
    throw UsageError(fmt::format("sizes: {} elements needs {} for the three fp32 arrays; stay at or below 2^34",
                                 largest, format_bytes(12.0 * double(largest))));
  std::vector<std::string> op_names, variant_names;
  for (auto op : o.ops) op_names.push_back(to_string(op));
  for (auto v : o.variants) variant_names.push_back(to_string(v));
  p.points = sweep_points(op_names, variant_names, {"fp32"}, o.sizes);
  return p;
}

double datasheet_memory_bytes_per_s(const CeilingsLookup& c) {
  return c.datasheet ? c.datasheet->ceilings.memory_bytes_per_s : 0;
}

double measured_memory_bytes_per_s(const CeilingsLookup& c) { return c.measured ? c.measured->ceilings.memory_bytes_per_s : 0; }

double knee_reference_bytes_per_s(const CeilingsLookup& c) {
  return measured_memory_bytes_per_s(c) > 0 ? measured_memory_bytes_per_s(c) : datasheet_memory_bytes_per_s(c);
}

std::string knee_reference_name(const CeilingsLookup& c) {
  return measured_memory_bytes_per_s(c) > 0 ? "measured HBM" : "datasheet";
}

// ---- one record ---------------------------------------------------------------------------------

void annotate_stream_record(Record& r, double empty_ms, const CeilingsLookup& ceilings, double l2, bool cold) {
  const double rate = r.bytes_per_s();
  const double working_set = stream_working_set_bytes(stream_point(r).op, stream_point(r).n);
  const bool cache_resident = !cold && l2 > 0 && working_set <= l2;
  extra_key::gb_per_s.set(r, rate / 1e9);
  const double datasheet_bw = datasheet_memory_bytes_per_s(ceilings), measured_bw = measured_memory_bytes_per_s(ceilings);
  if (measured_bw > 0) extra_key::fraction_of_measured_hbm.set(r, rate / measured_bw);
  if (datasheet_bw > 0) extra_key::fraction_of_datasheet.set(r, rate / datasheet_bw);
  extra_key::l2_bytes.set(r, l2);
  extra_key::cache_resident.set(r, cache_resident);
  extra_key::empty_launch_ms.set(r, empty_ms);
  extra_key::launch_bound.set(r, r.summary.median <= launch_bound_factor * empty_ms);
  // The roofline floor holds for HBM traffic; a hot, cache-resident working set may beat it.
  std::optional<DeviceCeilings> roof;
  const double floor_bw = std::max(datasheet_bw, measured_bw);
  if (!cache_resident && floor_bw > 0) {
    // The faster of the two bandwidths, under the datasheet's FP32 peak (the fastest known GPU's when unknown).
    const double fp32 = ceilings.datasheet ? ceilings.datasheet->ceilings.peak_flops("fp32") : 0;
    roof.emplace();
    roof->source_text = ceilings.datasheet ? "datasheet of " + ceilings.datasheet->name : "measured";
    roof->memory_bytes_per_s = floor_bw;
    roof->peak_flops_per_s["fp32"] = fp32 > 0 ? fp32 : fastest_known_peak_flops(DType::fp32);
  }
  add_plausibility_warnings(r, roof, l2);
}

// ---- the analysis ---------------------------------------------------------------------------------

namespace {

std::string knee_text(const std::optional<double>& n) {
  if (!n) return "never";
  return fmt::format("~{}", size_label(static_cast<std::int64_t>(std::llround(*n))));
}

std::vector<BandwidthCurve> group_curves(const std::vector<Record>& records) {
  std::vector<BandwidthCurve> curves;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const StreamPoint p = stream_point(records[i]);
    auto it = std::find_if(curves.begin(), curves.end(),
                           [&](const BandwidthCurve& c) { return c.op == p.op && c.variant == p.variant; });
    if (it == curves.end()) {
      it = curves.insert(curves.end(), BandwidthCurve{});
      it->op = p.op;
      it->variant = p.variant;
    }
    it->records.push_back(i);
  }
  for (auto& c : curves)
    std::stable_sort(c.records.begin(), c.records.end(),
                     [&](std::size_t a, std::size_t b) { return stream_point(records[a]).n < stream_point(records[b]).n; });
  return curves;
}

// Fills the curve's range, largest point and knees, and records them in its records' extra.
void analyze_curve(BandwidthCurve& c, std::vector<Record>& records, const CeilingsLookup& ceilings) {
  for (std::size_t i : c.records) {
    if (!extra_key::launch_bound.get(records[i])) break;
    c.launch_bound_up_to = stream_point(records[i]).n;
  }
  std::vector<RatePoint> rates;
  for (std::size_t i : c.records) rates.push_back({double(stream_point(records[i]).n), records[i].bytes_per_s()});
  if (knee_reference_bytes_per_s(ceilings) > 0) c.knees = find_knees(rates, knee_reference_bytes_per_s(ceilings));
  const Record& top = records[c.records.back()];
  c.largest_n = stream_point(top).n;
  c.largest_bytes_per_s = top.bytes_per_s();
  const double datasheet_bw = datasheet_memory_bytes_per_s(ceilings), measured_bw = measured_memory_bytes_per_s(ceilings);
  c.fraction_of_datasheet = datasheet_bw > 0 ? c.largest_bytes_per_s / datasheet_bw : unknown;
  c.fraction_of_measured = measured_bw > 0 ? c.largest_bytes_per_s / measured_bw : unknown;
  for (std::size_t i : c.records) {
    Record& r = records[i];
    extra_key::launch_bound_up_to_elements.set_or_null(r, c.launch_bound_up_to);
    for (const auto& k : c.knees)
      r.extra[extra_key::knee_elements(k.fraction)] = k.size ? nlohmann::json(*k.size) : nlohmann::json(nullptr);
    if (!c.knees.empty()) extra_key::knee_ceiling.set(r, knee_reference_name(ceilings));
  }
}

// The answers for one op, from the curve of its best variant.
void op_findings(const BandwidthSweep& s, const BandwidthCurve& c, std::vector<Finding>& out) {
  const auto& ceilings = s.setup.ceilings;
  const bool cold = s.setup.plan.options.cold;
  const double l2 = double(s.setup.device.l2_bytes);
  const Record& top = s.records[c.records.back()];
  std::string line = fmt::format("{}: at {} elements the best variant, {}, moves {}", to_string(c.op),
                                 size_label(c.largest_n), to_string(c.variant), format_bytes_per_s(c.largest_bytes_per_s));
  if (datasheet_memory_bytes_per_s(ceilings) > 0)
    line += fmt::format(", {} of the {} datasheet", format_percent(c.fraction_of_datasheet),
                        format_bytes_per_s(datasheet_memory_bytes_per_s(ceilings)));
  if (measured_memory_bytes_per_s(ceilings) > 0) line += fmt::format(" ({} of measured)", format_percent(c.fraction_of_measured));
  if (extra_key::cache_resident.get(top))
    line += "; its working set fits in the L2, so this is a cache figure";
  out.push_back({line + ".", 0});
  const Record& smallest = s.records[c.records.front()];
  const double empty_ms = extra_key::empty_launch_ms.get(smallest);
  if (c.launch_bound_up_to)
    out.push_back({fmt::format("Launch overhead dominates up to {} elements: those calls take within {:.0f}x of an empty "
                               "launch ({} at {}), so the kernel's own work is hidden behind launching it.",
                               size_label(*c.launch_bound_up_to), launch_bound_factor, format_ms(empty_ms),
                               size_label(stream_point(smallest).n)),
                   1});
  else
    out.push_back({fmt::format("No size is launch-bound: even {} elements take more than {:.0f}x an empty launch ({}).",
                               size_label(stream_point(smallest).n), launch_bound_factor, format_ms(empty_ms)),
                   1});
  for (const auto& k : c.knees) {
    const int pct = static_cast<int>(std::lround(k.fraction * 100));
    if (!k.size) {
      out.push_back({fmt::format("It never reaches {}% of the {} bandwidth in this sweep.", pct, knee_reference_name(ceilings)), 1});
      continue;
    }
    const double working_set = stream_working_set_bytes(c.op, std::max<std::int64_t>(1, std::llround(*k.size)));
    const bool in_cache = !cold && l2 > 0 && working_set <= l2;
    out.push_back({fmt::format("It reaches {}% of the {} bandwidth from about {} elements ({} working set){}.", pct,
                               knee_reference_name(ceilings), knee_text(k.size), format_bytes(working_set),
                               in_cache ? ", inside the L2: rerun cold (the L2 flushed before each sample) for the HBM knee" : ""),
                   1});
  }
}

Plot bandwidth_plot(const BandwidthSweep& s) {
  const auto& ceilings = s.setup.ceilings;
  const auto& ops = s.setup.plan.options.ops;
  Plot plot;
  plot.title = fmt::format("Achieved bandwidth vs size on {} (fp32, {})", s.setup.device.name,
                           s.setup.plan.options.cold ? "cold L2" : "hot L2");
  plot.x_label = "elements per array";
  plot.y_label = "GB/s (reads + writes)";
  double x_lo = 1e300, x_hi = 0, y_hi = 0;
  for (const auto& c : s.curves) {
    PlotSeries series;
    series.name = ops.size() > 1 ? to_string(c.op) + " " + to_string(c.variant) : to_string(c.variant);
    for (std::size_t i : c.records) {
      const auto& r = s.records[i];
      const double x = double(stream_point(r).n), y = r.bytes_per_s() / 1e9;
      series.points.push_back({x, y, fmt::format("{} {}: {:.0f} GB/s", series.name, size_label(std::int64_t(x)), y)});
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_hi = std::max(y_hi, y);
    }
    plot.series.push_back(std::move(series));
  }
  auto hline = [&](const std::string& name, double gbps, const std::string& color) {
    plot.series.push_back(line_series(name, {{x_lo, gbps, ""}, {x_hi, gbps, name}}, true, color));
  };
  const double datasheet_bw = datasheet_memory_bytes_per_s(ceilings), measured_bw = measured_memory_bytes_per_s(ceilings);
  if (datasheet_bw > 0) hline(fmt::format("datasheet {:.0f} GB/s", datasheet_bw / 1e9), datasheet_bw / 1e9, "#888888");
  if (measured_bw > 0) hline(fmt::format("measured HBM {:.0f} GB/s", measured_bw / 1e9), measured_bw / 1e9, "#444444");
  const double l2 = double(s.setup.device.l2_bytes);
  if (l2 > 0 && !ops.empty()) {
    const double n_l2 = l2 / stream_bytes_per_element(ops.front());
    if (n_l2 > x_lo && n_l2 < x_hi) {
      double y_lo = 1e300;
      for (const auto& r : s.records) y_lo = std::min(y_lo, r.bytes_per_s() / 1e9);
      plot.series.push_back(line_series(fmt::format("{} working set = L2", to_string(ops.front())),
                                        {{n_l2, y_lo, ""}, {n_l2, std::max(y_hi, datasheet_bw / 1e9), "L2"}}, true,
                                        "#bbbbbb"));
    }
  }
  return plot;
}

}  // namespace

void analyze_bandwidth_sweep(BandwidthSweep& s) {
  s.curves = group_curves(s.records);
  s.best_curve_per_op.clear();
  s.findings.clear();
  for (auto& c : s.curves) analyze_curve(c, s.records, s.setup.ceilings);
  for (StreamOp op : all_stream_ops()) {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < s.curves.size(); ++i)
      if (s.curves[i].op == op && (!best || s.curves[i].largest_bytes_per_s > s.curves[*best].largest_bytes_per_s))
        best = i;
    if (best) s.best_curve_per_op.push_back(*best);
  }
  for (std::size_t i : s.best_curve_per_op) op_findings(s, s.curves[i], s.findings);
  if (knee_reference_bytes_per_s(s.setup.ceilings) <= 0)
    s.findings.push_back({"No bandwidth ceiling known for this GPU (not in the catalog, none measured): no knees.", 0});
  if (!s.records.empty()) s.plot = bandwidth_plot(s);
}

}  // namespace ridge
