// The tracer's schedule: which steps are skipped, waited, warmed up or recorded.
#include "ridge/trace/schedule.hpp"

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/trace/counters.hpp"

namespace ridge::trace {

void TraceSchedule::validate() const {
  if (active == 0) throw UsageError("schedule active must be at least 1: a schedule that records no step records nothing");
  for (const auto& [name, value] : {std::pair{"skip_first", skip_first}, std::pair{"wait", wait},
                                    std::pair{"warmup", warmup}, std::pair{"active", active}, std::pair{"repeat", repeat}})
    if (value > max_steps) throw UsageError(fmt::format("schedule {} must be at most {}, got {}", name, max_steps, value));
  if (step_range.empty())
    throw UsageError("schedule step_range is empty: name the NVTX range that marks one step (its pushes count the steps)");
}

std::string TraceSchedule::describe() const {
  return fmt::format("skip_first={},wait={},warmup={},active={},repeat={} of NVTX range \"{}\"", skip_first, wait, warmup,
                     active, repeat, step_range);
}

nlohmann::json to_json(const TraceSchedule& s) {
  return {{"skip_first", s.skip_first}, {"wait", s.wait},     {"warmup", s.warmup},
          {"active", s.active},         {"repeat", s.repeat}, {"step_range", s.step_range}};
}

TraceSchedule trace_schedule_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("schedule must be a JSON object");
  TraceSchedule s;
  auto count = [&](const char* key, std::uint64_t& field) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number_unsigned()) throw UsageError(fmt::format("schedule {} must be a non-negative integer", key));
    field = it->get<std::uint64_t>();
  };
  count("skip_first", s.skip_first);
  count("wait", s.wait);
  count("warmup", s.warmup);
  count("active", s.active);
  count("repeat", s.repeat);
  if (const auto it = j.find("step_range"); it != j.end()) {
    if (!it->is_string()) throw UsageError("schedule step_range must be a string");
    s.step_range = it->get<std::string>();
  }
  s.validate();
  return s;
}

void check_one_step_range(const TraceSchedule* schedule, const CounterOptions* counters) {
  if (schedule == nullptr || counters == nullptr || !counters->steps || counters->step_range == schedule->step_range) return;
  throw UsageError(fmt::format("counters step_range \"{}\" differs from schedule step_range \"{}\": a trace counts its "
                               "steps once, by one NVTX range",
                               counters->step_range, schedule->step_range));
}

std::string to_string(StepPhase phase) {
  switch (phase) {
    case StepPhase::skipped: return "skipped";
    case StepPhase::wait: return "wait";
    case StepPhase::warmup: return "warmup";
    case StepPhase::active: return "active";
    case StepPhase::done: return "done";
  }
  return "?";
}

StepPhase step_phase(const TraceSchedule& s, std::uint64_t step) {
  if (step < s.skip_first) return StepPhase::skipped;
  const std::uint64_t since = step - s.skip_first, cycle = s.cycle_steps();
  if (s.repeat > 0 && since / cycle >= s.repeat) return StepPhase::done;
  const std::uint64_t at = since % cycle;
  if (at < s.wait) return StepPhase::wait;
  if (at < s.wait + s.warmup) return StepPhase::warmup;
  return StepPhase::active;
}

namespace {
bool collected(StepPhase p) { return p == StepPhase::warmup || p == StepPhase::active; }
}  // namespace

StepSwitch step_switch(const TraceSchedule& s, std::uint64_t step) {
  StepSwitch out;
  out.phase = step_phase(s, step);
  out.collect = collected(out.phase);
  out.nvtx_only = !out.collect && step + 1 > step && collected(step_phase(s, step + 1));
  return out;
}

std::string describe_step_numbers(const std::vector<std::uint64_t>& numbers) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    if (j >= i + 2) {
      out += fmt::format("{}-{}", numbers[i], numbers[j]);
    } else {
      out += fmt::format("{}", numbers[i]);
      if (j == i + 1) out += fmt::format(", {}", numbers[j]);
    }
    i = j + 1;
  }
  return out;
}

std::vector<std::uint64_t> step_numbers(const std::vector<RecordedStep>& steps) {
  std::vector<std::uint64_t> out;
  out.reserve(steps.size());
  for (const auto& s : steps) out.push_back(s.number);
  return out;
}

}  // namespace ridge::trace
