#include "ridge/record_keys.hpp"

#include <fmt/format.h>

namespace ridge::extra_key {

std::string knee_elements(double fraction) { return fmt::format("knee_{:.0f}_elements", fraction * 100); }

std::string knee_of_peak_n(double fraction, const std::string& ceiling_label) {
  return fmt::format("knee_{:.0f}_of_{}_peak_n", fraction * 100, ceiling_label);
}

}  // namespace ridge::extra_key
