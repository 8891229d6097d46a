#include "ridge/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge {

namespace {
// Every model input is a finite number: NaN compares false both ways, so a NaN that slipped
// through would pick a branch (e.g. "compute") silently. Errors name the argument.
void require_positive(double v, const char* what) {
  if (!std::isfinite(v) || !(v > 0)) throw UsageError(fmt::format("{} must be a finite number > 0, got {}", what, v));
}
void require_non_negative(double v, const char* what) {
  if (!std::isfinite(v) || !(v >= 0)) throw UsageError(fmt::format("{} must be a finite number >= 0, got {}", what, v));
}
double require_finite_result(double v, const char* what) {
  if (!std::isfinite(v)) throw UsageError(fmt::format("{} overflows a double: the sizes are too large", what));
  return v;
}
}  // namespace

double matmul_flops(double m, double n, double k) {
  require_positive(m, "m");
  require_positive(n, "n");
  require_positive(k, "k");
  return require_finite_result(2.0 * m * n * k, "2*m*n*k");
}

double matmul_bytes(double m, double n, double k, double bytes_per_element) {
  require_positive(m, "m");
  require_positive(n, "n");
  require_positive(k, "k");
  require_positive(bytes_per_element, "bytes_per_element");
  return require_finite_result((m * k + k * n + m * n) * bytes_per_element, "(m*k + k*n + m*n) * bytes_per_element");
}

double matmul_intensity(double m, double n, double k, double bytes_per_element) {
  return matmul_flops(m, n, k) / matmul_bytes(m, n, k, bytes_per_element);
}

double attainable_flops(double intensity, double peak_flops, double bandwidth) {
  require_non_negative(intensity, "intensity");
  require_positive(peak_flops, "peak_flops");
  require_positive(bandwidth, "bandwidth");
  return std::min(peak_flops, intensity * bandwidth);
}

double ridge_point(double peak_flops, double bandwidth) {
  require_positive(peak_flops, "peak_flops");
  require_positive(bandwidth, "bandwidth");
  return peak_flops / bandwidth;
}

double decode_ceiling(double weight_bytes, double bandwidth, double batch, double kv_bytes_per_sequence) {
  require_positive(weight_bytes, "weight_bytes");
  require_positive(bandwidth, "bandwidth");
  require_positive(batch, "batch");
  require_non_negative(kv_bytes_per_sequence, "kv_bytes_per_sequence");
  // bandwidth / bytes per sequence: batch * bandwidth / (weights + batch * kv) would be inf / inf = NaN for huge batches.
  return bandwidth / (weight_bytes / batch + kv_bytes_per_sequence);
}

double amdahl_speedup(double fraction, double speedup) {
  if (!(fraction >= 0 && fraction <= 1)) throw UsageError(fmt::format("fraction must be within [0, 1], got {}", fraction));
  if (!(speedup > 0)) throw UsageError(fmt::format("speedup must be > 0 (+inf allowed), got {}", speedup));
  const double part = std::isinf(speedup) ? 0.0 : fraction / speedup;
  return 1.0 / ((1.0 - fraction) + part);
}

double amdahl_limit(double fraction) {
  if (!(fraction >= 0 && fraction <= 1)) throw UsageError(fmt::format("fraction must be within [0, 1], got {}", fraction));
  return fraction >= 1 ? std::numeric_limits<double>::infinity() : 1.0 / (1.0 - fraction);
}

std::optional<double> amdahl_required_speedup(double fraction, double target) {
  if (!(fraction > 0 && fraction <= 1)) throw UsageError(fmt::format("fraction must be within (0, 1], got {}", fraction));
  if (!(target > 0)) throw UsageError(fmt::format("target must be > 0, got {}", target));
  // 1/target = (1-f) + f/s  =>  s = f / (1/target - (1-f))
  const double denom = 1.0 / target - (1.0 - fraction);
  if (denom <= 0) return std::nullopt;
  return fraction / denom;
}

Bound classify(double intensity, double peak_flops, double bandwidth) {
  require_non_negative(intensity, "intensity");
  return intensity < ridge_point(peak_flops, bandwidth) ? Bound::memory : Bound::compute;
}

std::string to_string(Bound b) {
  switch (b) {
    case Bound::memory: return "memory";
    case Bound::compute: return "compute";
    case Bound::neither: return "neither";
  }
  return "neither";
}

double roofline_efficiency(double measured_flops_per_s, double intensity, double peak_flops, double bandwidth) {
  require_non_negative(measured_flops_per_s, "measured_flops_per_s");
  return measured_flops_per_s / attainable_flops(intensity, peak_flops, bandwidth);
}

double roofline_floor_s(double bytes, double flops, double peak_flops, double bandwidth) {
  require_non_negative(bytes, "bytes");
  require_non_negative(flops, "flops");
  require_positive(peak_flops, "peak_flops");
  require_positive(bandwidth, "bandwidth");
  return std::max(bytes / bandwidth, flops / peak_flops);
}

}  // namespace ridge
