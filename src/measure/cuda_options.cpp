// The GPU timers' options: their ranges, checked here for C++, the CLI and Python alike.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/measure.hpp"

namespace ridge {

namespace {

// NaN fails every comparison, so each check is written as "in range", negated.
void require_in(double value, double low, double high, const char* name, const char* unit) {
  if (!(value >= low && value <= high))
    throw UsageError(fmt::format("{} must be in [{}, {}]{}, got {}", name, low, high, unit, value));
}

void require_positive(double value, const char* name, const char* unit) {
  if (!(value > 0 && std::isfinite(value)))
    throw UsageError(fmt::format("{} must be a finite number > 0{}, got {}", name, unit, value));
}

}  // namespace

void CudaOptions::validate() const {
  if (samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", samples));
  if (warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", warmup));
  if (repeats < 0) throw UsageError(fmt::format("repeats must be >= 0 (0 = automatic), got {}", repeats));
  if (max_samples < samples)
    throw UsageError(fmt::format("max_samples ({}) must be >= samples ({})", max_samples, samples));
  if (!(target_ci_relative >= 0 && std::isfinite(target_ci_relative)))
    throw UsageError(fmt::format("target_ci_relative must be a finite number >= 0 (0: off), got {}",
                                 target_ci_relative));
  require_positive(time_budget_s, "time_budget_s", " seconds");
  require_positive(target_sample_ms, "target_sample_ms", " ms");
  require_positive(spin_timeout_s, "spin_timeout_s", " seconds");
  require_in(throttle_threshold, 0, 1, "throttle_threshold", " (a fraction of the rated SM clock)");
  require_in(throttle_recovery_s, 0, max_throttle_recovery_s, "throttle_recovery_s", " seconds");
  require_in(rest_before_sample_s, 0, max_rest_before_sample_s, "rest_before_sample_s", " seconds");
  require_in(settle_max_s, 0, 60, "settle_max_s", " seconds");
  if (!(settle_tolerance > 0 && settle_tolerance < 1))
    throw UsageError(fmt::format("settle_tolerance must be a fraction in (0, 1), got {}", settle_tolerance));
  if (settle_readings < 2 || settle_readings > 1000)
    throw UsageError(fmt::format("settle_readings must be in [2, 1000], got {}", settle_readings));
}

int auto_repeats(double per_call_ms, double target_sample_ms) {
  const double one = std::max(1e-4, per_call_ms);  // a call too short to time still counts as 0.1 us
  return static_cast<int>(std::clamp(target_sample_ms / one, 1.0, double(CudaOptions::max_auto_repeats)));
}

}  // namespace ridge
