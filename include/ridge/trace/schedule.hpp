#pragma once
// The tracer's schedule (`ridge trace --schedule`, ridge.trace(schedule=...)): which steps are
// recorded, like torch.profiler's schedule(wait, warmup, active, repeat, skip_first). Steps are
// counted by the pushes of an NVTX range (any thread). CPU-only (src/trace/model/schedule.cpp);
// the collector (src/trace/cupti/collector.cpp) switches CUPTI on and off by it.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge::trace {

struct CounterOptions;

/// Which steps a trace records. After `skip_first` steps, cycles of `wait` steps (nothing
/// recorded, CUPTI's collection off), `warmup` steps (collection on, records dropped) and `active`
/// steps (recorded) repeat `repeat` times (0 = until the program ends).
struct TraceSchedule {
  std::uint64_t skip_first = 0;  ///< steps left out before the first cycle (collection off)
  std::uint64_t wait = 0;        ///< per cycle: steps with collection off
  std::uint64_t warmup = 0;      ///< per cycle: steps collected whose records are dropped
  std::uint64_t active = 1;      ///< per cycle: steps recorded (at least 1)
  std::uint64_t repeat = 0;      ///< cycles; 0 = no limit
  std::string step_range;        ///< the NVTX range whose pushes begin the steps (needed)

  /// Largest value of any count: larger ones are a typo, and sums of them must not overflow.
  static constexpr std::uint64_t max_steps = std::uint64_t{1} << 40;

  /// Throws UsageError naming the field: active 0, a count above max_steps, no step_range.
  void validate() const;
  /// wait + warmup + active.
  std::uint64_t cycle_steps() const { return wait + warmup + active; }
  /// "skip_first=0,wait=1,warmup=1,active=1,repeat=0 of NVTX range \"step\"", for sentences.
  std::string describe() const;
  bool operator==(const TraceSchedule&) const = default;
};

nlohmann::json to_json(const TraceSchedule& schedule);
/// Reads to_json's form and validates it; throws UsageError naming the field.
TraceSchedule trace_schedule_from_json(const nlohmann::json& j);

/// What the schedule makes of one step.
enum class StepPhase : std::uint8_t {
  skipped,  ///< one of the first skip_first steps
  wait,     ///< collection off
  warmup,   ///< collected, records dropped
  active,   ///< recorded
  done,     ///< after the last cycle: collection off for good
};
/// "skipped", "wait", "warmup", "active", "done".
std::string to_string(StepPhase phase);

/// The phase of step `step` (0-based: the step begun by the first push of the step range).
StepPhase step_phase(const TraceSchedule& schedule, std::uint64_t step);

/// What the collector does when a step begins (at the push of its NVTX range).
struct StepSwitch {
  StepPhase phase = StepPhase::wait;
  bool collect = false;    ///< CUPTI's collection on during this step (warmup and active)
  /// Collection off, but NVTX records on: the next step is collected, and its own range begins
  /// at its push, which must find the NVTX records on to be recorded whole.
  bool nvtx_only = false;
  bool recorded() const { return phase == StepPhase::active; }
};
/// What step `step` needs; the state before the first step is step_switch's of step 0 with the
/// NVTX records on when step 0 collects.
StepSwitch step_switch(const TraceSchedule& schedule, std::uint64_t step);

/// One step the schedule recorded: its number in the program (0-based) and its span on the
/// trace's clock, from its push to the next step's push (or the end of the trace).
struct RecordedStep {
  std::uint64_t number = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  bool operator==(const RecordedStep&) const = default;
};

/// Step numbers (ascending), for sentences: "2, 5, 8" (runs of three or more as "10-19").
std::string describe_step_numbers(const std::vector<std::uint64_t>& numbers);
/// Throws UsageError when a schedule and the hardware counters' step window count steps by
/// different NVTX ranges: a trace counts its steps once. Either may be null.
void check_one_step_range(const TraceSchedule* schedule, const CounterOptions* counters);

/// The numbers of recorded steps.
std::vector<std::uint64_t> step_numbers(const std::vector<RecordedStep>& steps);

}  // namespace ridge::trace
