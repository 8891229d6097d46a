// Hardware counters collected on the GPU by `ridge trace --counters`: replayed by the program's
// own steps (identical steps get every pass's counters; steps that differ get none and are named),
// and a traced ridge timer that ends on its own within the time its work takes.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gpu_test_util.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/trace/launch_work.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/writers.hpp"
#include "trace_workload.hpp"

namespace fs = std::filesystem;
using namespace ridge::trace;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ridge-counters-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

/// Runs `ridge trace ARGS -o FILE -- trace_target TARGET_ARGS`; the exit status and the seconds taken.
std::pair<int, double> trace_target(const std::string& args, const fs::path& file, const std::string& target_args) {
  const std::string line = (bin_dir() / "ridge").string() + " trace " + args + " -o " + file.string() + " -- " +
                           (bin_dir() / "trace_target").string() + " " + target_args;
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(line.c_str());
  return {status, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

}  // namespace

TEST(TraceCountersGpu, StepReplayGivesEachLaunchOfIdenticalStepsItsCounters) {
  RIDGE_REQUIRE_GPU();
  namespace same = trace_workload::identical_steps;
  const fs::path file = scratch("identical.json");
  const auto [status, seconds] = trace_target("--counters roofline --counters-steps 2..3 --step-range step", file,
                                              "--identical-steps 16");
  ASSERT_EQ(status, 0);
  const Trace t = load_chrome_trace(file.string());
  const KernelCounters& c = t.counters;
  EXPECT_EQ(c.replay, CounterReplay::steps);
  ASSERT_GE(c.passes, 1u);
  EXPECT_EQ(c.steps_taken, (std::pair<std::uint64_t, std::uint64_t>{2, 2 + 2 * c.passes - 1}));
  EXPECT_EQ(c.steps_profiled, 2u);
  EXPECT_TRUE(c.mismatches.empty()) << c.mismatches.front();
  EXPECT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.rows.size(), 2u * same::copy_kernels_per_step);
  // The later passes' launches ran under profiling, without rows of their own.
  EXPECT_EQ(c.perturbed.size(), 2u * same::copy_kernels_per_step * (c.passes - 1));
  const double bytes = 4.0 * static_cast<double>(same::floats);
  // 5%: up to an L2 (50 MB of the 1.07 GB) of one kernel's writes may leave the cache during the next.
  for (const auto& row : c.rows) {
    const LaunchWork w = launch_work(c, row);
    EXPECT_NEAR(w.dram_read_bytes, bytes, 0.05 * bytes) << "a copy reads its input once";
    EXPECT_NEAR(w.dram_write_bytes, bytes, 0.05 * bytes) << "and writes its output once";
    EXPECT_EQ(w.total_flops(), 0.0) << "a copy does no arithmetic";
  }
}

TEST(TraceCountersGpu, StepReplayGivesStepsThatDifferNoCountersAndNamesTheDifference) {
  RIDGE_REQUIRE_GPU();
  // Each numbered step launches its kernels with a grid of step + 1 blocks: no two passes agree.
  const fs::path file = scratch("numbered.json");
  const auto [status, seconds] = trace_target("--counters roofline --counters-steps 2..2 --step-range step", file,
                                              "--numbered-steps 12");
  ASSERT_EQ(status, 0);
  const Trace t = load_chrome_trace(file.string());
  const KernelCounters& c = t.counters;
  if (c.passes < 2) GTEST_SKIP() << "the roofline set fits one pass on this GPU: no later pass to differ";
  EXPECT_TRUE(c.rows.empty()) << "a launch got counters from a pass that ran another grid";
  ASSERT_FALSE(c.mismatches.empty());
  EXPECT_NE(c.mismatches.front().find(trace_workload::numbered_steps::kernel_name), std::string::npos) << c.mismatches.front();
}

TEST(TraceCountersGpu, RidgeTimersTracedWithCountersEndOnTheirOwn) {
  RIDGE_REQUIRE_GPU();
  // The timers under counters: spin (a held stream), graph replay and the empty-launch floor. On
  // the H100 this used to hang after its table until killed.
  for (const char* method : {"spin", "events", "graph"}) {
    const fs::path file = scratch(std::string("bandwidth_") + method + ".json");
    const std::string line = (bin_dir() / "ridge").string() + " trace --counters memory -o " + file.string() + " -- " +
                             (bin_dir() / "ridge").string() + " bandwidth --ops add,copy --variants vec4 --sizes 2^24 " +
                             "--method " + method + " --samples 3 --warmup 1 --ceilings none";
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(std::system(line.c_str()), 0) << line;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 60.0) << method;
    const Trace t = load_chrome_trace(file.string());
    EXPECT_FALSE(t.counters.rows.empty()) << method << ": the stream kernels must have counters";
    const CounterRowIndex rows(t.counters);
    for (const auto& k : t.kernels) {
      if (rows.find(k) == nullptr) continue;
      EXPECT_FALSE(is_timing_probe_kernel(t.strings.at(k.name))) << method << ": ridge's own timing kernel was profiled";
    }
  }
}

TEST(TraceCountersGpu, InProcessStepReplayEndsTheLastPassAtStop) {
  RIDGE_REQUIRE_GPU();
  namespace same = trace_workload::identical_steps;
  // The memory set is one pass: steps 1 and 2 are each a profiled step of their own. Step 2 has no
  // step after it: stop() must end its pass and decode it.
  ridge::TracerOptions options;
  CounterOptions counters;
  counters.metric_set = "memory";
  counters.steps = std::pair<std::uint64_t, std::uint64_t>{1, 2};
  counters.step_range = trace_workload::step_range;
  options.counters = counters;
  ridge::Tracer tracer(options);
  tracer.start();
  ASSERT_EQ(same::run(3), 0);
  tracer.stop();
  const KernelCounters& c = tracer.events().counters;
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_EQ(c.replay, CounterReplay::steps);
  EXPECT_EQ(c.passes, 1u);
  EXPECT_EQ(c.steps_profiled, 2u);
  EXPECT_EQ(c.rows.size(), 2u * same::copy_kernels_per_step);
  EXPECT_TRUE(c.perturbed.empty()) << "one pass: no later pass to perturb";
  EXPECT_TRUE(c.mismatches.empty()) << c.mismatches.front();
  // Each row belongs to one kernel, its launch's: kernels of the profiler's own that share the
  // launch's correlation id (the range profiler's WaitNs) get none.
  const Trace& t = tracer.events();
  const CounterRowIndex rows(c);
  std::size_t with_row = 0;
  for (const auto& k : t.kernels)
    if (rows.find(k) != nullptr) {
      ++with_row;
      EXPECT_NE(t.strings.at(k.name), "WaitNs");
    }
  EXPECT_EQ(with_row, c.rows.size());
  for (const auto& r : c.rows) EXPECT_GT(r.grid[0], 0) << "the launch's grid is recorded with its row";
}
