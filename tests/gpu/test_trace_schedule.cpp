// The tracer's schedule on the GPU: a loop of numbered steps (each kernel's grid tells its step),
// traced with a schedule by injection (`ridge trace --schedule`) and in-process (ridge::Tracer):
// exactly the active steps' kernels are in the trace, and the analysis numbers its steps by them.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "gpu_test_util.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/schedule.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/writers.hpp"
#include "trace_workload.hpp"

namespace fs = std::filesystem;
using namespace ridge::trace;
namespace numbered = trace_workload::numbered_steps;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ridge-schedule-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

/// The workload's kernels in `t`, counted by the step their grid tells.
std::map<std::uint64_t, int> kernels_by_step(const Trace& t) {
  std::map<std::uint64_t, int> out;
  for (const auto& k : t.kernels) {
    EXPECT_NE(t.strings.at(k.name).find(numbered::kernel_name), std::string::npos) << t.strings.at(k.name);
    ++out[static_cast<std::uint64_t>(k.grid.x) - 1];
  }
  return out;
}

/// The steps `s` records among the first `steps`, each with the workload's kernels per step.
std::map<std::uint64_t, int> expected_kernels(const TraceSchedule& s, int steps) {
  std::map<std::uint64_t, int> out;
  for (int i = 0; i < steps; ++i)
    if (step_phase(s, static_cast<std::uint64_t>(i)) == StepPhase::active) out[static_cast<std::uint64_t>(i)] = numbered::kernels_per_step;
  return out;
}

std::vector<std::uint64_t> analysis_step_numbers(const Analysis& a) {
  std::vector<std::uint64_t> out;
  for (const auto& s : a.steps) out.push_back(s.number);
  return out;
}

std::vector<std::uint64_t> keys(const std::map<std::uint64_t, int>& m) {
  std::vector<std::uint64_t> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace

TEST(TraceScheduleGpu, RidgeTraceRecordsExactlyTheActiveSteps) {
  RIDGE_REQUIRE_GPU();
  constexpr int steps = 20;
  // skip 1, then twice: wait 2, warmup 1, active 2 -> steps 4, 5, 9, 10 recorded, 11.. done.
  TraceSchedule s;
  s.skip_first = 1;
  s.wait = 2;
  s.warmup = 1;
  s.active = 2;
  s.repeat = 2;
  s.step_range = trace_workload::step_range;
  const fs::path file = scratch("scheduled.json"), summary = scratch("scheduled.summary.json");
  const std::string line = (bin_dir() / "ridge").string() + " trace --step-range step --schedule "
                           "skip_first=1,wait=2,warmup=1,active=2,repeat=2 -o " + file.string() + " --json " +
                           summary.string() + " -- " + (bin_dir() / "trace_target").string() + " --numbered-steps " +
                           std::to_string(steps);
  ASSERT_EQ(std::system(line.c_str()), 0) << line;
  const Trace t = load_chrome_trace(file.string());
  const auto expected = expected_kernels(s, steps);
  ASSERT_EQ(keys(expected), (std::vector<std::uint64_t>{4, 5, 9, 10}));
  EXPECT_EQ(kernels_by_step(t), expected) << "warmup, waiting and done steps must leave no kernel in the trace";
  EXPECT_EQ(t.dropped_records, 0u);
  EXPECT_EQ(t.incomplete_records, 0u);
  ASSERT_TRUE(t.schedule.has_value());
  EXPECT_EQ(*t.schedule, s);
  EXPECT_EQ(step_numbers(t.recorded_steps), keys(expected));

  const nlohmann::json j = nlohmann::json::parse(ridge::read_text(summary));
  const nlohmann::json& stats = j["collector_stats"];
  EXPECT_EQ(stats["scheduled"], true);
  EXPECT_EQ(stats["steps_seen"], steps);
  EXPECT_EQ(stats["steps_recorded"], 4);
  EXPECT_EQ(stats["cupti_errors"], 0) << stats["last_cupti_error"];
  const Analysis a = analysis_from_json(j);
  EXPECT_EQ(a.kernel_count, 4u * numbered::kernels_per_step);
  EXPECT_EQ(analysis_step_numbers(a), keys(expected)) << "each recorded step's own NVTX range must be in the trace";
  for (const auto& step : a.steps) EXPECT_EQ(step.kernels, static_cast<std::uint64_t>(numbered::kernels_per_step));
  // Every kernel kept joins its launch call (recorded from callbacks in the active steps).
  std::set<std::uint32_t> calls;
  for (const auto& c : t.api_calls) calls.insert(c.correlation);
  for (const auto& k : t.kernels) EXPECT_TRUE(calls.count(k.correlation)) << "a kernel without its launch call";
}

TEST(TraceScheduleGpu, InProcessTracerWithoutWarmupRecordsWholeActiveSteps) {
  RIDGE_REQUIRE_GPU();
  constexpr int steps = 12;
  ridge::TracerOptions options;
  TraceSchedule s;
  s.wait = 3;  // no warmup: each active step's push switches collection on
  s.active = 1;
  s.step_range = trace_workload::step_range;
  options.schedule = s;
  ridge::Tracer tracer(options);
  tracer.start();
  ASSERT_EQ(numbered::run(steps), 0);
  tracer.stop();
  const Trace& t = tracer.events();
  const auto expected = expected_kernels(s, steps);
  ASSERT_EQ(keys(expected), (std::vector<std::uint64_t>{3, 7, 11}));
  EXPECT_EQ(kernels_by_step(t), expected);
  EXPECT_EQ(step_numbers(t.recorded_steps), keys(expected));
  const Analysis a = tracer.summary({.step_range = trace_workload::step_range});
  EXPECT_EQ(analysis_step_numbers(a), keys(expected));
  EXPECT_NE(a.window.find("recorded by the schedule"), std::string::npos) << a.window;

  // A schedule and hardware counters with another step range contradict each other.
  ridge::TracerOptions both = options;
  both.counters = CounterOptions{};
  both.counters->steps = std::pair<std::uint64_t, std::uint64_t>{1, 2};
  both.counters->step_range = "other";
  ridge::Tracer contradictory(both);
  EXPECT_THROW(contradictory.start(), ridge::UsageError);
}
