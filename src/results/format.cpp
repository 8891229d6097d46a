#include "ridge/format.hpp"

#include <cmath>

#include <fmt/format.h>

namespace ridge {

namespace {
std::string scaled(double value, const char* const* units, int count, double step, const char* suffix) {
  int i = 0;
  double v = value;
  while (i + 1 < count && std::abs(v) >= step) {
    v /= step;
    ++i;
  }
  const int decimals = std::abs(v) >= 100 ? 0 : std::abs(v) >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}{}", v, decimals, units[i], suffix);
}
}  // namespace

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return "n/a";
  if (ms < 1e-3) return fmt::format("{:.1f} ns", ms * 1e6);
  if (ms < 1.0) return fmt::format("{:.2f} us", ms * 1e3);
  if (ms < 1000.0) return fmt::format("{:.3f} ms", ms);
  return fmt::format("{:.3f} s", ms / 1e3);
}

std::string format_bytes_per_s(double v) {
  static const char* units[] = {"", "K", "M", "G", "T", "P"};
  return scaled(v, units, 6, 1000.0, "B/s");
}

std::string format_flops(double v) {
  static const char* units[] = {"", "K", "M", "G", "T", "P"};
  return scaled(v, units, 6, 1000.0, "FLOP/s");
}

std::string format_bytes(double v) {
  static const char* units[] = {"", "K", "M", "G", "T"};
  return scaled(v, units, 5, 1000.0, "B");
}

std::string format_percent(double fraction, int decimals) {
  if (!std::isfinite(fraction)) return "-";
  return fmt::format("{:.{}f}%", fraction * 100, decimals);
}

}  // namespace ridge
