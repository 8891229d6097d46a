#pragma once
// What limits an operation on the roofline: one type for the model (classify) and for the
// measured roofline of a trace (hardware counters), so "memory-bound" means one thing in both.
#include <string>

namespace ridge {

/// memory: under the bandwidth roof; compute: under the peak; neither: a measured kernel far below
/// both roofs (launch- or latency-bound), which the model alone never says.
enum class Bound { memory, compute, neither };
/// "memory", "compute" or "neither".
std::string to_string(Bound b);

}  // namespace ridge
