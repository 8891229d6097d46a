#pragma once
// What each timing method resolves between processes of one build, per GPU family: how far a short
// record's median moves from one process to the next when nothing changed. compare uses it for the
// absolute term of a record's noise band when there are too few baselines to measure the record's
// own spread. Measured with bench/gate_resolution.py over ten back-to-back reports
// (results/<gpu>/gate/resolution.md); a method or family never measured gets the most conservative
// figure, CompareOptions::min_change_us. (Implementation: src/results/resolution.cpp.)
#include <span>
#include <string>

#include "ridge/measure.hpp"

namespace ridge {

/// One measured entry: a timing method on a GPU family.
struct MethodResolution {
  std::string family;            ///< GPU family, as gpu_family() names it ("Hopper")
  Method method = Method::none;
  /// Standard deviation of a short record's run medians between processes, microseconds: the 90th
  /// percentile over the records of that method (under 10 us) in the runs measured.
  double run_to_run_sd_us = 0;
  /// The largest jump of one record in one process seen on the family, microseconds: a flagged
  /// change within it is confirmed in a fresh process before it is called (Verdict::suspect).
  double largest_jump_us = 0;
  std::string evidence;          ///< where the figures come from: the GPUs and results files
};

/// The GPU family of a compute capability ("Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell");
/// "" for one ridge has no name for.
std::string gpu_family(int compute_capability_major, int compute_capability_minor);

/// Every measured entry, for docs and tests.
std::span<const MethodResolution> measured_resolutions();

/// The measured entry of `method` on `family`, or nullptr when that pair was never measured.
const MethodResolution* measured_resolution(Method method, const std::string& family);

}  // namespace ridge
