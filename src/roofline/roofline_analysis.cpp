// Operations placed under a device's ceilings, ridge points, and the analysis `ridge roofline`
// shows (everything but the GPU work, which is in cuda/roofline_run.cpp).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

std::string shape_text(const nlohmann::json& p) {
  using namespace param_key;
  if (p.contains(m) && p.contains(n) && p.contains(k) && p[m].is_number() && p[n].is_number() && p[k].is_number()) {
    if (p[m] == p[n] && p[n] == p[k]) return fmt::format(" n={}", p[n].dump());
    return fmt::format(" {}x{}x{}", p[m].dump(), p[n].dump(), p[k].dump());
  }
  if (p.contains(n) && p[n].is_number()) return fmt::format(" n={}", p[n].dump());
  if (p.contains(elements) && p[elements].is_number_integer()) {
    const auto count = p[elements].get<std::int64_t>();
    const bool power_of_two = count >= 1024 && (count & (count - 1)) == 0;
    return power_of_two ? fmt::format(" 2^{} elements", std::countr_zero(static_cast<std::uint64_t>(count)))
                        : fmt::format(" {} elements", count);
  }
  return "";
}

}  // namespace

std::optional<RooflineOperation> roofline_operation(const Record& r) {
  if (!(r.flops > 0) || !(r.bytes > 0) || !(r.summary.median > 0)) return std::nullopt;
  RooflineOperation op;
  op.dtype = to_string(r.dtype);
  op.label = r.name + (op.dtype.empty() ? "" : " " + op.dtype) + shape_text(r.params);
  op.intensity_flop_per_byte = r.intensity_flop_per_byte();
  op.flops_per_s = r.flops_per_s();
  return op;
}

std::vector<RooflineOperation> load_roofline_operations(const std::vector<std::string>& files,
                                                        std::vector<std::string>* skipped) {
  std::vector<RooflineOperation> out;
  for (const auto& f : files) {
    const ResultSet set = load_result_file(f);
    std::size_t left_out = 0;
    for (const auto& r : set.records)
      if (auto op = roofline_operation(r)) {
        op->file = f;
        out.push_back(*op);
      } else {
        ++left_out;
      }
    if (skipped && left_out > 0)
      skipped->push_back(fmt::format("{}: {} of {} records have no FLOPs, bytes or time: not on the roofline", f,
                                     left_out, set.records.size()));
  }
  return out;
}

void RooflineOperation::validate() const {
  auto check = [&](double v, const char* field) {
    if (!std::isfinite(v) || !(v > 0))
      throw UsageError(fmt::format("operation '{}': {} must be a finite number > 0 (a log-log roofline shows "
                                   "nothing else), got {}",
                                   label, field, v));
  };
  check(intensity_flop_per_byte, "intensity_flop_per_byte");
  check(flops_per_s, "flops_per_s");
}

RooflinePlacement place_on_roofline(const DeviceCeilings& c, const RooflineOperation& op) {
  op.validate();
  if (!(c.memory_bytes_per_s > 0))
    throw UsageError(fmt::format("{}: no memory bandwidth known, so nothing can be placed", c.source_text));
  const double roof = c.roof_for(op.dtype);  // throws for a dtype the ceilings lack
  RooflinePlacement p;
  p.operation = op;
  p.roof_flops_per_s = roof;
  p.attainable_flops_per_s = attainable_flops(op.intensity_flop_per_byte, roof, c.memory_bytes_per_s);
  p.efficiency = roofline_efficiency(op.flops_per_s, op.intensity_flop_per_byte, roof, c.memory_bytes_per_s);
  p.bound = classify(op.intensity_flop_per_byte, roof, c.memory_bytes_per_s);
  return p;
}

ShapePlacement place_matmul(const DeviceCeilings& c, double m, double n, double k, DType dtype) {
  return place_matmul(c, m, n, k, to_string(dtype));
}

ShapePlacement place_matmul(const DeviceCeilings& c, double m, double n, double k, const std::string& dtype) {
  ShapePlacement p;
  p.dtype = peak_dtype_name(dtype);
  const double element_bytes = peak_dtype_bytes(p.dtype);
  p.label = fmt::format("matmul {}x{}x{} {}", m, n, k, p.dtype);
  p.m = m;
  p.n = n;
  p.k = k;
  p.intensity_flop_per_byte = matmul_intensity(m, n, k, element_bytes);  // checks the sizes
  p.flops = matmul_flops(m, n, k);
  p.bytes = matmul_bytes(m, n, k, element_bytes);
  p.memory_bytes_per_s = c.memory_bytes_per_s;
  if (!(p.memory_bytes_per_s > 0)) throw UsageError(fmt::format("{}: no memory bandwidth known", c.source_text));
  p.roof_flops_per_s = c.roof_for(p.dtype);  // throws for a dtype the ceilings lack
  p.placed_on = c.source_text;
  p.attainable_flops_per_s = attainable_flops(p.intensity_flop_per_byte, p.roof_flops_per_s, p.memory_bytes_per_s);
  p.ridge_point = ridge_point(p.roof_flops_per_s, p.memory_bytes_per_s);
  p.bound = classify(p.intensity_flop_per_byte, p.roof_flops_per_s, p.memory_bytes_per_s);
  p.floor_s = roofline_floor_s(p.bytes, p.flops, p.roof_flops_per_s, p.memory_bytes_per_s);
  return p;
}

RooflineOperation to_operation(const ShapePlacement& p) {
  return RooflineOperation{p.label, p.dtype, p.intensity_flop_per_byte, p.attainable_flops_per_s,
                           "shapes (best possible)", ""};
}

std::string describe(const ShapePlacement& p) {
  return fmt::format("{}: intensity {:.1f} FLOP/byte, attainable {} (roof {}), ridge point {:.1f} FLOP/byte: {}-bound; "
                     "at best {} per call",
                     p.label, p.intensity_flop_per_byte, format_flops(p.attainable_flops_per_s),
                     format_flops(p.roof_flops_per_s), p.ridge_point, to_string(p.bound), format_ms(p.floor_s * 1e3));
}

std::vector<RidgePoints> ridge_points(const std::optional<DeviceCeilings>& datasheet,
                                      const std::optional<DeviceCeilings>& measured) {
  std::vector<RidgePoints> out;
  for (const std::string& d : ceiling_dtypes()) {
    RidgePoints p{d, datasheet ? datasheet->ridge_point(d) : 0, measured ? measured->ridge_point(d) : 0};
    if (p.datasheet > 0 || p.measured > 0) out.push_back(p);
  }
  return out;
}

bool RooflineOptions::model_only() const {
  return device.empty() || !std::all_of(device.begin(), device.end(), [](unsigned char c) { return std::isdigit(c); });
}

void RooflineOptions::validate() const {
  if (model_only() && refresh)
    throw UsageError(fmt::format("refresh re-measures a GPU; device '{}' is a catalog device (model only). "
                                 "Set device to a GPU index (e.g. \"0\") to measure",
                                 device));
  if (!model_only() && device.size() > 4) throw UsageError(fmt::format("device '{}': no such GPU index", device));
}

RooflineAnalysis analyze_roofline(const std::optional<DeviceDescription>& device,
                                  const std::optional<CatalogEntry>& datasheet,
                                  const std::optional<MeasuredCeilings>& measured,
                                  const std::vector<RooflineOperation>& measured_operations,
                                  const std::vector<std::array<double, 3>>& shapes, DType shape_dtype) {
  if (!datasheet && !measured) throw UsageError("a roofline needs datasheet or measured ceilings");
  RooflineAnalysis a;
  a.device = device;
  a.datasheet = datasheet;
  a.measured = measured;
  a.ceilings = compare_ceilings(datasheet, measured);
  const std::optional<DeviceCeilings> sheet = datasheet ? std::optional(datasheet->ceilings) : std::nullopt;
  const std::optional<DeviceCeilings> meas = measured ? std::optional(measured->ceilings) : std::nullopt;
  a.ridge_points = ridge_points(sheet, meas);
  const DeviceCeilings& main = meas ? *meas : *sheet;
  a.placed_on = to_string(main.source);
  // An operation of a dtype these ceilings lack is drawn, not placed: roofline_plot warns of it.
  for (const auto& op : measured_operations)
    if (main.peak_flops(op.dtype) > 0 && main.memory_bytes_per_s > 0) a.placements.push_back(place_on_roofline(main, op));
  std::vector<RooflineOperation> operations = measured_operations;
  for (const auto& [m, n, k] : shapes) {
    a.shapes.push_back(place_matmul(main, m, n, k, shape_dtype));
    operations.push_back(to_operation(a.shapes.back()));
  }

  RooflinePlotOptions plot;
  if (device)
    plot.title = fmt::format("Roofline: {} (measured{})", device->name, datasheet ? ", datasheet dashed" : "");
  else
    plot.title = fmt::format("Roofline: {} (datasheet)", datasheet->name);
  if (meas) plot.overlay = sheet;
  a.plot = roofline_plot(main, operations, plot);
  a.warnings = a.plot.warnings;

  if (measured)
    for (Record r : measured->records) {
      if (sheet) {
        if (r.name.rfind("ceiling.hbm.", 0) == 0) extra_key::datasheet_bytes_per_s.set(r, sheet->memory_bytes_per_s);
        if (r.name == "ceiling.fp32_fma" || r.name == "ceiling.tensor")
          if (const auto s = r.dtype ? sheet->peak(*r.dtype) : std::nullopt)
            extra_key::datasheet_flops_per_s.set(r, *s);
      }
      a.records.push_back(r);
    }
  return a;
}

}  // namespace ridge
