// When and from which host thread each kernel was launched, found by correlation id: shared by the
// analysis (launch latency, ranges, steps) and the measured roofline (kernels per NVTX range and step).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "ridge/trace/events.hpp"

namespace ridge::detail {

/// When and by whom a kernel was launched: its launch call's start, or, where the call was not
/// recorded, the time the launch was queued (TracerOptions::launch_calls; thread unknown).
struct LaunchPoint {
  trace::Nanoseconds at = 0;
  const trace::ApiCall* call = nullptr;  ///< nullptr: `at` is the kernel's queue time
};

/// A kernel's launch call, found by correlation id.
struct LaunchIndex {
  std::unordered_map<std::uint32_t, const trace::ApiCall*> by_correlation;
  explicit LaunchIndex(const trace::Trace& t) {
    by_correlation.reserve(t.api_calls.size());
    // Prefer the runtime call when a driver call shares the id (both cannot launch one kernel).
    for (const auto& a : t.api_calls) {
      auto [it, inserted] = by_correlation.emplace(a.correlation, &a);
      if (!inserted && it->second->domain == trace::ApiDomain::driver && a.domain == trace::ApiDomain::runtime)
        it->second = &a;
    }
  }
  const trace::ApiCall* find(std::uint32_t correlation) const {
    if (correlation == 0) return nullptr;
    auto it = by_correlation.find(correlation);
    return it == by_correlation.end() ? nullptr : it->second;
  }
  std::optional<LaunchPoint> launch_of(const trace::Kernel& k) const {
    if (const trace::ApiCall* call = find(k.correlation)) return LaunchPoint{call->start, call};
    if (k.queued != 0) return LaunchPoint{k.queued, nullptr};
    return std::nullopt;
  }
};

inline std::uint64_t thread_key(std::uint32_t process, std::uint32_t thread) {
  return (static_cast<std::uint64_t>(process) << 32) | thread;
}

/// Where kernels known only by their queue time go: their launching thread is unknown.
inline constexpr std::uint64_t any_thread = ~std::uint64_t{0};

}  // namespace ridge::detail
