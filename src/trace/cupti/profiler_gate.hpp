#pragma once
// The bookkeeping behind `ridge trace --profiler-range`: which cudaProfilerStart/Stop (and
// cuProfilerStart/Stop) calls switch CUPTI's activity collection on and off, and the windows that
// results in. CPU-only and free of CUPTI types, so it is unit-tested without a GPU; the collector
// feeds it CUPTI's API callbacks and does the switching.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace ridge::detail {

/// One thread's profiler calls. The runtime's cudaProfilerStart calls the driver's
/// cuProfilerStart, and CUPTI calls back for both, nested (runtime enter, driver enter, driver
/// exit, runtime exit): only the outermost call of a thread acts, once.
struct ProfilerCallNesting {
  int depth = 0;
  std::uint64_t enter_ns = 0;  ///< when the outermost call was entered
  bool runtime = false;        ///< the outermost call is a runtime call (else a driver call)
  std::uint32_t cbid = 0;      ///< its CUPTI callback id
  std::uint32_t correlation = 0;

  /// API entry at `now`; true when this is the outermost call (the one that acts).
  bool enter(std::uint64_t now, bool is_runtime, std::uint32_t id, std::uint32_t correlation_id) {
    if (depth++ > 0) return false;
    enter_ns = now;
    runtime = is_runtime;
    cbid = id;
    correlation = correlation_id;
    return true;
  }
  /// API exit; true when the outermost call returns. An exit without an entry (tracing began
  /// inside the call) is ignored.
  bool exit() {
    if (depth == 0) return false;
    return --depth == 0;
  }
};

/// The process's collection windows. A start while collecting and a stop while not collecting
/// change nothing, the rule `trace::apply_window` applies to the recorded calls afterwards, so
/// the two always agree on where the windows lie.
class ProfilerWindows {
 public:
  static constexpr std::uint64_t still_open = std::numeric_limits<std::uint64_t>::max();

  /// A start call returned at `now`: true when collection must be switched on (it was off).
  bool open(std::uint64_t now) {
    if (is_open()) return false;
    windows_.emplace_back(now, still_open);
    return true;
  }
  /// A stop call was entered at `now`: true when collection must be switched off (it was on).
  bool close(std::uint64_t now) {
    if (!is_open()) return false;
    windows_.back().second = now < windows_.back().first ? windows_.back().first : now;
    return true;
  }
  bool is_open() const { return !windows_.empty() && windows_.back().second == still_open; }
  /// Windows opened so far (the last one may still be open).
  std::size_t count() const { return windows_.size(); }
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& windows() const { return windows_; }
  void clear() { windows_.clear(); }

  /// Where something that began at `t` and never ended while recorded (an NVTX range whose end
  /// fell after the window closed) ends: the close of the window holding `t`, or `fallback` when
  /// that window is still open or `t` lies in none.
  std::uint64_t end_of_window(std::uint64_t t, std::uint64_t fallback) const {
    for (const auto& [begin, end] : windows_)
      if (t >= begin && t <= end) return end == still_open ? fallback : end;
    return fallback;
  }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> windows_;
};

}  // namespace ridge::detail
