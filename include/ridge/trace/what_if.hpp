#pragma once
// "What if this kernel were S times faster": Amdahl's law fed from a trace (src/trace/model/what_if.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/trace/events.hpp"

namespace ridge::trace {

struct KernelWhatIf {
  std::string query;                   ///< the name asked for
  std::vector<std::string> matched;    ///< kernel names it matched (exact, else substring)
  std::uint64_t launches = 0;
  Nanoseconds kernel_time_ns = 0;      ///< summed time of the matched kernels
  double speedup = 1;                  ///< S
  double fraction_of_busy = 0;         ///< kernel_time / gpu_busy (capped at 1)
  double fraction_of_span = 0;         ///< kernel_time / trace span (capped at 1)
  double overall_speedup_busy = 1;     ///< Amdahl on GPU busy time: the GPU-bound upper bound
  double overall_speedup_span = 1;     ///< Amdahl on the wall span: if the host never waits
  Nanoseconds busy_saved_ns = 0;       ///< kernel_time * (1 - 1/S)
  std::string explanation;             ///< one paragraph saying what each number means
};

/// Amdahl's law fed from a trace. Matches `kernel` exactly, else as a substring (case-sensitive)
/// of the kernel names. Throws UsageError when nothing matches (listing the top kernels) or S <= 0.
KernelWhatIf kernel_what_if(const Trace& trace, const std::string& kernel, double speedup);

}  // namespace ridge::trace
