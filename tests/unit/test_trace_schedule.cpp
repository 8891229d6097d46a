// The tracer's schedule (ridge/trace/schedule.hpp): which step is skipped, waited, warmed up or
// recorded; what the collector switches at each step; the steps counted once
// (trace/cupti/step_counter.hpp); and a scheduled trace cut to its recorded steps, numbered by
// them in the analysis and kept through the Chrome trace.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/schedule.hpp"
#include "ridge/trace/window.hpp"
#include "trace/cupti/step_counter.hpp"

using namespace ridge::trace;

namespace {

TraceSchedule schedule(std::uint64_t wait, std::uint64_t warmup, std::uint64_t active, std::uint64_t repeat,
                       std::uint64_t skip_first = 0) {
  TraceSchedule s;
  s.wait = wait;
  s.warmup = warmup;
  s.active = active;
  s.repeat = repeat;
  s.skip_first = skip_first;
  s.step_range = "step";
  return s;
}

/// The phases of steps 0..n-1 as one letter each: s(kipped) w(ait) u (warmup) A(ctive) d(one).
std::string phases(const TraceSchedule& s, std::uint64_t n) {
  std::string out;
  for (std::uint64_t i = 0; i < n; ++i) {
    switch (step_phase(s, i)) {
      case StepPhase::skipped: out += 's'; break;
      case StepPhase::wait: out += 'w'; break;
      case StepPhase::warmup: out += 'u'; break;
      case StepPhase::active: out += 'A'; break;
      case StepPhase::done: out += 'd'; break;
    }
  }
  return out;
}

std::string error_of(const TraceSchedule& s) {
  try {
    s.validate();
  } catch (const ridge::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TraceSchedule, PhasesFollowTorchProfilersSchedule) {
  // torch.profiler.schedule(skip_first=10, wait=5, warmup=1, active=3, repeat=2), its documented
  // example: 10 skipped, then twice 5 waiting, 1 warmup, 3 active, then nothing.
  EXPECT_EQ(phases(schedule(5, 1, 3, 2, 10), 32), "sssssssssswwwwwuAAAwwwwwuAAAdddd");
  // One step in ten, forever.
  EXPECT_EQ(phases(schedule(9, 0, 1, 0), 30), "wwwwwwwwwAwwwwwwwwwAwwwwwwwwwA");
  // wait=1, warmup=1, active=1 (the CLI's example), repeat 0 = forever.
  EXPECT_EQ(phases(schedule(1, 1, 1, 0), 9), "wuAwuAwuA");
  // Everything active from step 0, once.
  EXPECT_EQ(phases(schedule(0, 0, 2, 1), 5), "AAddd");
  // Far steps: no overflow, the cycle still counts.
  EXPECT_EQ(step_phase(schedule(9, 0, 1, 0), 10'000'000'009), StepPhase::active);
  EXPECT_EQ(step_phase(schedule(9, 0, 1, 0), 10'000'000'008), StepPhase::wait);
  EXPECT_EQ(to_string(StepPhase::warmup), "warmup");
  EXPECT_EQ(to_string(StepPhase::done), "done");
}

TEST(TraceSchedule, TheCollectorSwitchesOnForWarmupAndActiveAndTurnsNvtxOnOneStepAhead) {
  const TraceSchedule s = schedule(2, 1, 1, 1);  // w w u A d d
  std::string collect, nvtx_only, recorded;
  for (std::uint64_t i = 0; i < 6; ++i) {
    const StepSwitch sw = step_switch(s, i);
    collect += sw.collect ? '1' : '0';
    nvtx_only += sw.nvtx_only ? '1' : '0';
    recorded += sw.recorded() ? '1' : '0';
  }
  EXPECT_EQ(collect, "001100");
  // Step 1 waits but the warmup step after it must find the NVTX records on at its push.
  EXPECT_EQ(nvtx_only, "010000");
  EXPECT_EQ(recorded, "000100");
  // No warmup: the step before each active one turns NVTX on.
  const TraceSchedule one_in_three = schedule(2, 0, 1, 0);
  EXPECT_TRUE(step_switch(one_in_three, 1).nvtx_only);
  EXPECT_FALSE(step_switch(one_in_three, 0).nvtx_only);
  EXPECT_TRUE(step_switch(one_in_three, 2).collect);
  EXPECT_TRUE(step_switch(one_in_three, 4).nvtx_only);
}

TEST(TraceSchedule, ValidationNamesTheField) {
  EXPECT_EQ(error_of(schedule(1, 1, 1, 0)), "");
  EXPECT_NE(error_of(schedule(1, 1, 0, 0)).find("schedule active must be at least 1"), std::string::npos);
  EXPECT_NE(error_of(schedule(TraceSchedule::max_steps + 1, 0, 1, 0)).find("schedule wait must be at most"), std::string::npos);
  EXPECT_NE(error_of(schedule(0, 0, 1, 0, TraceSchedule::max_steps + 1)).find("skip_first"), std::string::npos);
  TraceSchedule no_range = schedule(1, 0, 1, 0);
  no_range.step_range.clear();
  EXPECT_NE(error_of(no_range).find("schedule step_range is empty"), std::string::npos);
}

TEST(TraceSchedule, JsonRoundTripAndBadJsonNamesTheField) {
  const TraceSchedule s = schedule(4, 2, 3, 5, 7);
  EXPECT_EQ(trace_schedule_from_json(to_json(s)), s);
  nlohmann::json bad = to_json(s);
  bad["warmup"] = -1;
  try {
    trace_schedule_from_json(bad);
    FAIL() << "a negative warmup was read";
  } catch (const ridge::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule warmup must be a non-negative integer"), std::string::npos);
  }
  bad = to_json(s);
  bad["active"] = 0;
  EXPECT_THROW(trace_schedule_from_json(bad), ridge::UsageError);
  EXPECT_THROW(trace_schedule_from_json(nlohmann::json::array()), ridge::UsageError);
}

TEST(TraceSchedule, StepNumbersReadAsRuns) {
  EXPECT_EQ(describe_step_numbers({2, 5, 8}), "2, 5, 8");
  EXPECT_EQ(describe_step_numbers({10, 11, 12, 13, 20, 21}), "10-13, 20, 21");
  EXPECT_EQ(describe_step_numbers({}), "");
}

TEST(StepCounter, CountsPushesOfTheStepRangeOnlyOnAnyThread) {
  ridge::detail::StepCounter c;
  EXPECT_FALSE(c.on_push("step").has_value());  // counts nothing before reset
  c.reset("step");
  EXPECT_EQ(c.on_push("step"), 0u);
  EXPECT_FALSE(c.on_push("forward").has_value());
  EXPECT_FALSE(c.on_push("steps").has_value());
  EXPECT_FALSE(c.on_push(nullptr).has_value());
  EXPECT_EQ(c.on_push("step"), 1u);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) c.on_push("step");
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.steps_begun(), 4002u);
  c.reset("step");
  EXPECT_EQ(c.on_push("step"), 0u);
}

namespace {

/// Six steps of 10 us, each a "step" range with one kernel launched 100 ns into it; the schedule
/// recorded steps 2 and 5 (the collector's spans), step 5's range stamped 5 ns before the push
/// the collector saw.
Trace scheduled_trace() {
  Trace t;
  const std::uint32_t step = t.strings.intern("step"), kernel = t.strings.intern("k"),
                      launch = t.strings.intern("cudaLaunchKernel");
  for (std::uint32_t i = 0; i < 6; ++i) {
    const Nanoseconds base = 10'000 * i;
    NvtxRange r;
    r.name = step;
    r.thread = 1;
    r.start = i == 5 ? base - 5 : base + 10;
    r.end = base + 9'000;
    t.ranges.push_back(r);
    ApiCall a;
    a.name = launch;
    a.thread = 1;
    a.start = base + 100;
    a.end = base + 2'000;
    a.correlation = i + 1;
    t.api_calls.push_back(a);
    Kernel k;
    k.name = kernel;
    k.start = base + 2'500;
    k.end = base + 8'000;
    k.correlation = i + 1;
    t.kernels.push_back(k);
  }
  ApiCall edge;  // the push ending step 2 begins step 3: not kept
  edge.name = launch;
  edge.thread = 1;
  edge.start = 30'000;
  edge.end = 30'500;
  edge.correlation = 99;
  t.api_calls.push_back(edge);
  t.schedule = schedule(2, 0, 1, 0);
  t.recorded_steps = {{2, 20'000, 30'000}, {5, 50'000, 60'000}};
  finalize(t);
  return t;
}

}  // namespace

TEST(TraceSchedule, AScheduledTraceKeepsOnlyItsRecordedStepsNumberedByTheProgram) {
  const Trace kept = keep_recorded_steps(scheduled_trace());
  ASSERT_EQ(kept.kernels.size(), 2u);
  EXPECT_EQ(kept.kernels[0].correlation, 3u);
  EXPECT_EQ(kept.kernels[1].correlation, 6u);
  EXPECT_EQ(kept.api_calls.size(), 2u);  // the call at 30'000 lies past step 2's end
  ASSERT_EQ(kept.ranges.size(), 2u);
  // Step 5's own range began 5 ns before the push the collector saw: within the slack, it widens the span.
  ASSERT_EQ(kept.recorded_steps.size(), 2u);
  EXPECT_EQ(kept.recorded_steps[1].start_ns, 49'995u);
  EXPECT_NE(kept.window.find("the steps recorded by the schedule"), std::string::npos);
  EXPECT_NE(kept.window.find(": 2, 5"), std::string::npos);

  AnalysisOptions options;
  options.step_range = "step";
  const Analysis a = analyze(kept, options);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].number, 2u);
  EXPECT_EQ(a.steps[1].number, 5u);
  EXPECT_EQ(a.steps[0].kernels, 1u);
  EXPECT_EQ(a.steps[1].kernels, 1u);
  EXPECT_NE(format_analysis(a).find("the program's steps 2, 5"), std::string::npos);
  EXPECT_EQ(analysis_from_json(to_json(a)).steps[1].number, 5u);

  // Without a schedule the trace stays whole, and steps are numbered by their place.
  Trace whole = scheduled_trace();
  whole.schedule.reset();
  whole.recorded_steps.clear();
  EXPECT_EQ(keep_recorded_steps(whole).kernels.size(), 6u);
  const Analysis all = analyze(whole, options);
  ASSERT_EQ(all.steps.size(), 6u);
  EXPECT_EQ(all.steps[4].number, 4u);
  EXPECT_EQ(format_analysis(all).find("the program's steps"), std::string::npos);
}

TEST(TraceSchedule, ARangeTooFarBeforeThePushIsNotTheStepsOwn) {
  Trace t = scheduled_trace();
  t.ranges.back().start = 50'000 - step_push_slack_ns - 1;  // step 5's range: outside the slack
  finalize(t);
  const Trace kept = keep_recorded_steps(t);
  EXPECT_EQ(kept.recorded_steps[1].start_ns, 50'000u);
  EXPECT_EQ(kept.ranges.size(), 1u);
  EXPECT_EQ(kept.kernels.size(), 2u);  // its kernel was launched inside the span all the same
}

TEST(TraceSchedule, ConsecutiveStepsStampedBeforeTheirPushesKeepTheirOwnNumbers) {
  Trace t = scheduled_trace();
  for (auto& r : t.ranges)  // every step's range (but step 0's) stamped 5 ns before its push
    if (r.start > 10) r.start = (r.start + 5'000) / 10'000 * 10'000 - 5;
  t.recorded_steps = {{2, 20'000, 30'000}, {3, 30'000, 40'000}};
  finalize(t);
  const Trace kept = keep_recorded_steps(t);
  ASSERT_EQ(kept.recorded_steps.size(), 2u);
  EXPECT_EQ(kept.recorded_steps[0].start_ns, 19'995u);
  EXPECT_EQ(kept.recorded_steps[0].end_ns, 29'995u);  // where step 3's own range began
  EXPECT_EQ(kept.recorded_steps[1].start_ns, 29'995u);
  EXPECT_EQ(kept.recorded_steps[1].end_ns, 39'995u);  // step 4 (not recorded) began there: its range is left out
  EXPECT_EQ(kept.ranges.size(), 2u);
  AnalysisOptions options;
  options.step_range = "step";
  const Analysis a = analyze(kept, options);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].number, 2u);
  EXPECT_EQ(a.steps[1].number, 3u);
  EXPECT_EQ(a.steps[1].kernels, 1u);
}

TEST(TraceSchedule, TheChromeTraceKeepsTheScheduleAndTheRecordedSteps) {
  const Trace kept = keep_recorded_steps(scheduled_trace());
  const Trace back = parse_chrome_json(to_chrome_json(kept));
  ASSERT_TRUE(back.schedule.has_value());
  EXPECT_EQ(*back.schedule, *kept.schedule);
  EXPECT_EQ(back.recorded_steps, kept.recorded_steps);
  AnalysisOptions options;
  options.step_range = "step";
  const Analysis a = analyze(back, options);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[1].number, 5u);
  // A malformed schedule in the metadata is a clear error, not a silent default.
  std::string text = to_chrome_json(kept);
  const auto at = text.find("\"active\":1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "\"active\":0");
  EXPECT_THROW(parse_chrome_json(text), ridge::UsageError);
}
