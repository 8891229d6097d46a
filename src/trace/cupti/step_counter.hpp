#pragma once
// Steps as the tracer counts them: the pushes of one NVTX range, on any thread. One counter per
// trace feeds both the schedule (which steps are recorded) and the hardware counters' step
// window. CPU-only and free of CUPTI types, so it is unit-tested without a GPU; the collector
// feeds it the names of CUPTI's NVTX push callbacks.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ridge::detail {

class StepCounter {
 public:
  /// Counts the pushes of `range` from step 0 on ("" = counts nothing).
  void reset(std::string range) {
    range_ = std::move(range);
    begun_ = 0;
  }
  /// A push of an NVTX range named `name` (nullptr: unnamed): the 0-based number of the step it
  /// begins, nullopt when it is not the step range.
  std::optional<std::uint64_t> on_push(const char* name) {
    if (name == nullptr || range_.empty() || std::string_view(name) != range_) return std::nullopt;
    return begun_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Steps begun so far.
  std::uint64_t steps_begun() const { return begun_.load(std::memory_order_relaxed); }
  const std::string& range() const { return range_; }
  bool counting() const { return !range_.empty(); }

 private:
  std::string range_;
  std::atomic<std::uint64_t> begun_{0};
};

}  // namespace ridge::detail
