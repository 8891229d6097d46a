// The bookkeeping of `ridge trace --profiler-range` (src/trace/profiler_gate.hpp): nested profiler
// calls act once, windows open and close by the same rule trace::apply_window cuts by afterwards.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "ridge/trace/events.hpp"
#include "ridge/trace/window.hpp"
#include "trace/cupti/profiler_gate.hpp"

using ridge::detail::ProfilerCallNesting;
using ridge::detail::ProfilerWindows;
using namespace ridge::trace;

TEST(ProfilerGate, TheRuntimeCallAndTheDriverCallInsideItActOnce) {
  ProfilerCallNesting n;
  // cudaProfilerStart (runtime, cbid 171) calls cuProfilerStart (driver, cbid 308): CUPTI calls
  // back enter, enter, exit, exit.
  EXPECT_TRUE(n.enter(100, true, 171, 9));
  EXPECT_FALSE(n.enter(110, false, 308, 10));
  EXPECT_FALSE(n.exit());
  EXPECT_TRUE(n.exit());
  EXPECT_EQ(n.enter_ns, 100u);
  EXPECT_TRUE(n.runtime);
  EXPECT_EQ(n.cbid, 171u);
  EXPECT_EQ(n.correlation, 9u);
  // A driver call made directly is outermost itself.
  EXPECT_TRUE(n.enter(200, false, 309, 11));
  EXPECT_TRUE(n.exit());
  EXPECT_FALSE(n.runtime);
  // An exit whose entry happened before tracing began is ignored, and leaves no debt behind.
  EXPECT_FALSE(n.exit());
  EXPECT_TRUE(n.enter(300, true, 172, 12));
  EXPECT_TRUE(n.exit());
}

TEST(ProfilerGate, WindowsIgnoreAStartWhileOpenAndAStopWhileClosed) {
  ProfilerWindows w;
  EXPECT_FALSE(w.is_open());
  EXPECT_FALSE(w.close(50));  // stop before any start
  EXPECT_TRUE(w.open(100));
  EXPECT_FALSE(w.open(150));  // second start: already collecting
  EXPECT_TRUE(w.is_open());
  EXPECT_TRUE(w.close(200));
  EXPECT_FALSE(w.close(250));
  EXPECT_TRUE(w.open(300));
  EXPECT_EQ(w.count(), 2u);
  ASSERT_EQ(w.windows().size(), 2u);
  EXPECT_EQ(w.windows()[0], (std::pair<std::uint64_t, std::uint64_t>{100, 200}));
  EXPECT_EQ(w.windows()[1].second, ProfilerWindows::still_open);

  // An NVTX range begun inside a closed window ends with it; inside the open one, at the fallback.
  EXPECT_EQ(w.end_of_window(120, 999), 200u);
  EXPECT_EQ(w.end_of_window(310, 999), 999u);
  EXPECT_EQ(w.end_of_window(250, 999), 999u);  // between windows (cannot happen): the fallback
  EXPECT_TRUE(w.close(400));
  EXPECT_EQ(w.end_of_window(310, 999), 400u);
  w.clear();
  EXPECT_EQ(w.count(), 0u);
  EXPECT_FALSE(w.is_open());
}

TEST(ProfilerGate, ACloseBeforeTheOpenTimeStillMakesAnOrderedWindow) {
  ProfilerWindows w;
  EXPECT_TRUE(w.open(100));
  EXPECT_TRUE(w.close(90));  // another thread's clock read raced the open
  EXPECT_EQ(w.windows()[0], (std::pair<std::uint64_t, std::uint64_t>{100, 100}));
}

// The collector switches collection at these calls while the program runs; apply_window cuts the
// windows out of the recorded calls afterwards. Both must find the same kernels inside.
TEST(ProfilerGate, GatingAndTheWindowFilterKeepTheSameKernels) {
  struct Call {
    bool start;
    Nanoseconds enter, exit;
  };
  const Call calls[] = {
      {false, 500, 600},      // stop before any start: nothing
      {true, 1000, 1100},     // window 1 opens at 1100
      {true, 2000, 2100},     // start while open: nothing
      {false, 3000, 3050},    // window 1 closes at 3000
      {false, 3500, 3600},    // stop while closed: nothing
      {true, 5000, 5200},     // window 2 opens at 5200
      {false, 7000, 7100},    // closes at 7000
      {true, 9000, 9100},     // window 3, never stopped
  };
  ProfilerWindows gate;
  Trace t;
  std::uint32_t correlation = 1;
  for (const Call& c : calls) {
    if (c.start) gate.open(c.exit);
    else gate.close(c.enter);
    ApiCall a;  // as the collector records the call
    a.name = t.strings.intern(c.start ? "cudaProfilerStart" : "cudaProfilerStop");
    a.start = c.enter;
    a.end = c.exit;
    a.correlation = correlation++;
    t.api_calls.push_back(a);
  }
  EXPECT_EQ(gate.count(), 3u);

  // A kernel launched every 150 ns from 0 to 10000; the gate would have recorded those whose
  // launch call began while a window was open.
  std::set<Nanoseconds> recorded;
  for (Nanoseconds launch = 25; launch < 10000; launch += 150) {
    ApiCall a;
    a.name = t.strings.intern("cudaLaunchKernel");
    a.start = launch;
    a.end = launch + 40;
    a.correlation = correlation++;
    t.api_calls.push_back(a);
    Kernel k;
    k.name = t.strings.intern("k");
    k.start = launch + 60;  // some run after their window closed: kept by their launch call
    k.end = launch + 400;
    k.correlation = a.correlation;
    t.kernels.push_back(k);
    for (const auto& [open, close] : gate.windows())
      if (launch > open && launch < close) recorded.insert(launch);
  }
  finalize(t);
  const Trace cut = apply_window(t, Window{.profiler_range = true});
  std::map<std::uint32_t, Nanoseconds> launch_of;
  for (const auto& a : t.api_calls) launch_of[a.correlation] = a.start;
  std::set<Nanoseconds> kept;
  for (const auto& k : cut.kernels) kept.insert(launch_of.at(k.correlation));
  EXPECT_EQ(kept, recorded);
  EXPECT_FALSE(recorded.empty());
}
