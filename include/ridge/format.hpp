#pragma once
#include <string>

namespace ridge {

/// A time in milliseconds with a unit that keeps 3-4 significant digits ("3.21 us", "2.720 ms").
std::string format_ms(double ms);
/// Bytes per second as "4.17 TB/s" / "812 GB/s" (decimal units, as datasheets use).
std::string format_bytes_per_s(double bytes_per_s);
/// FLOP/s as "675 TFLOP/s" / "50.5 TFLOP/s" / "3.2 GFLOP/s".
std::string format_flops(double flops_per_s);
/// Bytes as "60 MB", "1.07 GB" (decimal) .
std::string format_bytes(double bytes);
/// A fraction as a percentage with `decimals` digits: 0.945 -> "94.5%". "-" when the fraction is
/// unknown (NaN or infinite), so tables can pass NaN for "no ceiling to compare with".
std::string format_percent(double fraction, int decimals = 1);

}  // namespace ridge
