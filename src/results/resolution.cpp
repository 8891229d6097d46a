// The per-method resolution table (include/ridge/resolution.hpp). Each figure is written once, here,
// with the run it came from.
#include "ridge/resolution.hpp"

#include <array>

namespace ridge {

namespace {

// Hopper (sm_90). Graph replay: 41 graph-replayed records under 10 us over ten reports on an H100
// (results/h100/gate/resolution.md): the standard deviation of a record's run medians is 0.035 us
// at the 90th percentile (0.007 us at the median record); four pairs of H200 processes agree
// (results/h200/gate/resolution_stored_pairs.md: 0.026 us change at the 90th percentile). Spin hold:
// 0.121 us on the H100 (2 records). The largest one-off jump on the family is the H200's 0.47 us of a
// 1.6 us graph-replayed add (one process in ten, results/h200/gate), hence 0.5 us for both.
const std::array<MethodResolution, 2> table{{
    {"Hopper", Method::graph_replay, 0.035, 0.5,
     "H100 80GB HBM3, 10 reports (results/h100/gate/resolution.md); H200 jump of 0.47 us (results/h200/gate)"},
    {"Hopper", Method::spin_hold, 0.121, 0.5,
     "H100 80GB HBM3, 10 reports (results/h100/gate/resolution.md); H200 jump of 0.47 us (results/h200/gate)"},
}};

}  // namespace

std::string gpu_family(int major, int minor) {
  switch (major) {
    case 7: return minor >= 5 ? "Turing" : "Volta";
    case 8: return minor >= 9 ? "Ada" : "Ampere";
    case 9: return "Hopper";
    case 10:
    case 11:
    case 12: return "Blackwell";
    default: return "";
  }
}

std::span<const MethodResolution> measured_resolutions() { return table; }

const MethodResolution* measured_resolution(Method method, const std::string& family) {
  for (const MethodResolution& r : table)
    if (r.method == method && r.family == family) return &r;
  return nullptr;
}

}  // namespace ridge
