// The tracer on a workload known in advance, traced in-process (ridge::Tracer) and by injection
// into a separate program (`ridge trace -- trace_target`).
#include <cuda_runtime.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/writers.hpp"
#include "trace_workload.hpp"

namespace fs = std::filesystem;
using namespace ridge::trace;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ridge-trace-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

/// Runs a shell command line; returns its exit code (128 + N for a signal, as a shell reports it).
int run_command(const std::string& line) {
  const int status = std::system(line.c_str());
  if (status == -1) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

/// Everything the workload's trace must show.
void check_workload_trace(const Trace& t, const Analysis& a) {
  namespace w = trace_workload;
  EXPECT_EQ(t.dropped_records, 0u);
  ASSERT_EQ(t.kernels.size(), static_cast<std::size_t>(w::total_kernels));
  EXPECT_EQ(a.kernel_count, static_cast<std::uint64_t>(w::total_kernels));

  std::vector<const Kernel*> busy, adds;
  for (const auto& k : t.kernels) {
    const std::string& name = t.strings.at(k.name);
    if (contains(name, w::busy_kernel_name)) busy.push_back(&k);
    else if (contains(name, w::add_kernel_name)) adds.push_back(&k);
    else ADD_FAILURE() << "unexpected kernel " << name;
  }
  ASSERT_EQ(busy.size(), static_cast<std::size_t>(w::steps * w::busy_per_step));
  ASSERT_EQ(adds.size(), static_cast<std::size_t>(w::steps * w::adds_per_step));

  // Durations: the busy-wait kernels spin 200 us on the GPU's timer.
  for (const Kernel* k : busy) {
    const double us = static_cast<double>(k->end - k->start) / 1e3;
    EXPECT_GE(us, w::busy_ns / 1e3 * 0.99) << "busy-wait kernel shorter than it spins";
    EXPECT_LE(us, w::busy_ns / 1e3 * 1.5) << "busy-wait kernel far longer than it spins";
    EXPECT_EQ(k->grid, (Dim3{1, 1, 1}));
  }
  for (const Kernel* k : adds) EXPECT_EQ(k->block, (Dim3{256, 1, 1}));

  // Two streams, each kernel kind on its own, and kernels of one stream never overlap.
  const std::uint32_t stream_a = busy.front()->stream, stream_b = adds.front()->stream;
  EXPECT_NE(stream_a, stream_b);
  for (const Kernel* k : busy) EXPECT_EQ(k->stream, stream_a);
  for (const Kernel* k : adds) EXPECT_EQ(k->stream, stream_b);
  for (auto* list : {&busy, &adds}) {
    std::sort(list->begin(), list->end(), [](const Kernel* x, const Kernel* y) { return x->start < y->start; });
    for (std::size_t i = 1; i < list->size(); ++i) EXPECT_LE((*list)[i - 1]->end, (*list)[i]->start);
  }

  // Every kernel joins its launch call, which began before it ran (one clock for host and GPU).
  std::map<std::uint32_t, const ApiCall*> calls;
  for (const auto& c : t.api_calls) calls[c.correlation] = &c;
  std::map<std::uint32_t, std::vector<std::pair<Nanoseconds, Nanoseconds>>> launch_then_start;  // per stream
  for (const auto& k : t.kernels) {
    auto it = calls.find(k.correlation);
    ASSERT_NE(it, calls.end()) << "kernel without its launch call";
    EXPECT_TRUE(contains(t.strings.at(it->second->name), "Launch")) << t.strings.at(it->second->name);
    EXPECT_LE(it->second->start, k.start);
    launch_then_start[k.stream].emplace_back(it->second->start, k.start);
  }
  // On one stream, launch order is execution order.
  for (auto& [stream, pairs] : launch_then_start) {
    std::sort(pairs.begin(), pairs.end());
    for (std::size_t i = 1; i < pairs.size(); ++i) EXPECT_LT(pairs[i - 1].second, pairs[i].second) << "stream " << stream;
  }
  EXPECT_EQ(a.launch_latency_count, static_cast<std::uint64_t>(w::total_kernels));
  EXPECT_GE(a.gpu_busy_ns, static_cast<Nanoseconds>(w::steps * w::busy_per_step * w::busy_ns));
  // Each step's second busy-wait kernel is launched while the first still spins on its stream: its
  // latency is time queued (most of 200 us), not launch overhead.
  EXPECT_GE(a.launches_queued, static_cast<std::uint64_t>(w::steps * (w::busy_per_step - 1)));
  EXPECT_GE(a.launch_queued_max_ns, 0.5 * w::busy_ns);
  EXPECT_LT(a.launch_overhead_median_ns, 0.5 * w::busy_ns);
  EXPECT_NEAR(a.launch_queued_mean_ns + a.launch_overhead_mean_ns, a.launch_latency_mean_ns, 1.0);
  // Each step synchronizes inside its range: its GPU span lies within the host range, busy within the span.
  for (const auto& step : a.steps) {
    EXPECT_LE(step.gpu_busy_ns, step.gpu_span_ns);
    EXPECT_LE(step.gpu_start_ns + step.gpu_span_ns, step.start_ns + step.duration_ns);
  }
  EXPECT_EQ(a.steps_gpu_outlasting_host, 0u);
  EXPECT_TRUE(a.rejected_events.empty());

  // One copy each way of the whole buffer.
  std::map<MemcpyKind, std::uint64_t> bytes, copies;
  for (const auto& m : t.memcpys) {
    bytes[m.kind] += m.bytes;
    copies[m.kind]++;
  }
  // (A pageable copy may be reported in pieces; the bytes must add up either way.)
  EXPECT_GE(copies[MemcpyKind::host_to_device], 1u);
  EXPECT_GE(copies[MemcpyKind::device_to_host], 1u);
  EXPECT_EQ(bytes[MemcpyKind::host_to_device], sizeof(float) * w::elements);
  EXPECT_EQ(bytes[MemcpyKind::device_to_host], sizeof(float) * w::elements);
  for (const auto& m : t.memcpys) {
    auto it = calls.find(m.correlation);
    ASSERT_NE(it, calls.end()) << "memcpy without its API call";
    EXPECT_TRUE(contains(t.strings.at(it->second->name), "Memcpy")) << t.strings.at(it->second->name);
  }

  // NVTX: three steps of five kernels, launched on the thread that opened the range.
  std::size_t step_ranges = 0;
  for (const auto& r : t.ranges) step_ranges += t.strings.at(r.name) == w::step_range;
  EXPECT_EQ(step_ranges, static_cast<std::size_t>(w::steps));
  ASSERT_EQ(a.steps.size(), static_cast<std::size_t>(w::steps));
  for (const auto& s : a.steps) {
    EXPECT_EQ(s.kernels, static_cast<std::uint64_t>(w::kernels_per_step));
    EXPECT_GE(s.duration_ns, static_cast<Nanoseconds>(w::busy_per_step * w::busy_ns));  // it synchronizes inside
  }
  bool found_range = false;
  for (const auto& r : a.top_ranges)
    if (r.name == w::step_range) {
      found_range = true;
      EXPECT_EQ(r.kernels, static_cast<std::uint64_t>(w::total_kernels)) << "NVTX and API thread ids disagree";
    }
  EXPECT_TRUE(found_range);
  // The workload waits on each stream every step: synchronization records where they were asked
  // for (the in-process tracer, ridge trace --sync), else the *Synchronize API calls.
  EXPECT_GE(a.sync_count, static_cast<std::uint64_t>(2 * w::steps));
  if (t.syncs.empty()) {
    std::size_t sync_calls = 0;
    for (const auto& c : t.api_calls)
      sync_calls += c.domain == ApiDomain::runtime && contains(t.strings.at(c.name), "Synchronize");
    EXPECT_GE(sync_calls, static_cast<std::size_t>(2 * w::steps));
  } else {
    EXPECT_GE(t.syncs.size(), static_cast<std::size_t>(2 * w::steps));
  }
}

}  // namespace

TEST(TraceGpu, InProcessTracerRecordsTheKnownWorkload) {
  RIDGE_REQUIRE_GPU();
  ridge::Tracer tracer;
  tracer.start();
  EXPECT_TRUE(tracer.running());
  ASSERT_EQ(trace_workload::run(), 0);
  tracer.stop();
  const AnalysisOptions options{.step_range = trace_workload::step_range};
  check_workload_trace(tracer.events(), tracer.summary(options));

  // What was written reads back as the same trace.
  const fs::path path = scratch("inprocess.json");
  tracer.write(path.string());
  const Trace back = load_chrome_trace(path.string());
  EXPECT_EQ(back.kernels.size(), tracer.events().kernels.size());
  EXPECT_EQ(to_json(analyze(back, options)), to_json(tracer.summary(options)));
}

TEST(TraceGpu, SecondTracerWhileOneRunsIsAnError) {
  RIDGE_REQUIRE_GPU();
  ridge::Tracer first, second;
  first.start();
  EXPECT_THROW(second.start(), ridge::UsageError);
  first.stop();
  // And a fresh start after a stop works.
  second.start();
  second.stop();
}

TEST(TraceGpu, RidgeTraceInjectsIntoAnUnmodifiedProgram) {
  RIDGE_REQUIRE_GPU();
  const fs::path trace_file = scratch("inject.json"), summary = scratch("inject.summary.json");
  const std::string line = (bin_dir() / "ridge").string() + " trace -o " + trace_file.string() + " --json " +
                           summary.string() + " --step-range step -- " + (bin_dir() / "trace_target").string();
  ASSERT_EQ(run_command(line), 0) << line;
  const Trace t = load_chrome_trace(trace_file.string());
  const nlohmann::json j = nlohmann::json::parse(ridge::read_text(summary));
  EXPECT_EQ(j["program"]["exit_code"], 0);
  EXPECT_EQ(j["end"], "exit");
  check_workload_trace(t, analysis_from_json(j));
  EXPECT_NE(t.command.find("trace_target"), std::string::npos);
  EXPECT_TRUE(t.syncs.empty()) << "synchronization records are opt-in (--sync)";

  // --sync adds CUPTI's synchronization records.
  const fs::path sync_file = scratch("inject_sync.json");
  const std::string sync_line = (bin_dir() / "ridge").string() + " trace --sync -o " + sync_file.string() + " -- " +
                                (bin_dir() / "trace_target").string();
  ASSERT_EQ(run_command(sync_line), 0) << sync_line;
  EXPECT_GE(load_chrome_trace(sync_file.string()).syncs.size(), static_cast<std::size_t>(2 * trace_workload::steps));
}

TEST(TraceGpu, RidgeTracePassesExitCodesThroughAndWritesAfterACrash) {
  RIDGE_REQUIRE_GPU();
  const std::string ridge = (bin_dir() / "ridge").string(), target = (bin_dir() / "trace_target").string();
  const fs::path exited = scratch("exit7.json");
  EXPECT_EQ(run_command(ridge + " trace -o " + exited.string() + " -- " + target + " --exit-code 7"), 7);
  EXPECT_EQ(load_chrome_trace(exited.string()).kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));

  const fs::path crashed = scratch("abort.json");
  EXPECT_EQ(run_command(ridge + " trace -o " + crashed.string() + " -- " + target + " --abort"), 128 + SIGABRT);
  ASSERT_TRUE(fs::exists(crashed)) << "the trace must be written when the program aborts";
  EXPECT_EQ(load_chrome_trace(crashed.string()).kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));
}

/// The trace and summary of `ridge trace -- trace_target ARGS` hold every kernel of the workload,
/// which ran before the program crashed, was interrupted or exited from a thread.
void expect_whole_workload(const fs::path& trace_file, const fs::path& summary, const char* end) {
  ASSERT_TRUE(fs::exists(trace_file)) << "the trace must be written: " << trace_file;
  EXPECT_EQ(load_chrome_trace(trace_file.string()).kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));
  ASSERT_TRUE(fs::exists(summary)) << summary;
  const nlohmann::json j = nlohmann::json::parse(ridge::read_text(summary));
  EXPECT_EQ(j["end"], end);
  EXPECT_EQ(j["kernel_count"], trace_workload::total_kernels);
}

TEST(TraceGpu, RidgeTraceWritesWhatRanBeforeACrashOrAnExitFromAThread) {
  RIDGE_REQUIRE_GPU();
  const std::string ridge = (bin_dir() / "ridge").string(), target = (bin_dir() / "trace_target").string();
  struct Case {
    const char* how;
    int exit_code;
    const char* end;
  };
  for (const Case& c : {Case{"segv", 128 + SIGSEGV, "crash"}, Case{"abort", 128 + SIGABRT, "crash"},
                        Case{"thread-exit", 5, "exit"}}) {
    SCOPED_TRACE(c.how);
    const fs::path trace_file = scratch(std::string("crash-") + c.how + ".json");
    const fs::path summary = scratch(std::string("crash-") + c.how + ".summary.json");
    const std::string line = "timeout -s KILL 300 " + ridge + " trace -o " + trace_file.string() + " --json " +
                             summary.string() + " -- " + target + " --crash " + c.how;
    EXPECT_EQ(run_command(line), c.exit_code) << line;
    expect_whole_workload(trace_file, summary, c.end);
  }
}

/// `ridge trace -- trace_target --wait-for-signal` started with its stdout on a pipe; sends `sig`
/// to ridge (not to the program: ridge must forward it) once the program says "ready". Returns
/// ridge's exit code, or -1 when something timed out (the process is killed then).
int signal_ridge_when_ready(const std::vector<std::string>& args, int sig) {
  std::vector<char*> argv;  // built before fork: the child of a threaded process must not allocate
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int out[2];
  if (::pipe(out) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);  // whatever the test runner ignores, ridge must see the signal
    ::signal(SIGTERM, SIG_DFL);
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string seen;
  bool signalled = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  // Read everything ridge and the program print (so that neither blocks on a full pipe) until EOF.
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    seen.append(buffer, static_cast<std::size_t>(n));
    if (!signalled && seen.find("ready\n") != std::string::npos) {
      ::kill(pid, sig);
      signalled = true;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline && ::waitpid(pid, &status, WNOHANG) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (std::chrono::steady_clock::now() >= deadline || !signalled) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ADD_FAILURE() << (signalled ? "ridge trace did not end after the signal" : "the program never said ready")
                  << "; its output:\n" << seen;
    return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

TEST(TraceGpu, RidgeTraceForwardsSigintAndSigtermAndWritesWhatWasCollected) {
  RIDGE_REQUIRE_GPU();
  const std::string ridge = (bin_dir() / "ridge").string(), target = (bin_dir() / "trace_target").string();
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(strsignal(sig));
    const fs::path trace_file = scratch("signal" + std::to_string(sig) + ".json");
    const fs::path summary = scratch("signal" + std::to_string(sig) + ".summary.json");
    // The program dies of the forwarded signal (its default action, after the injection library
    // wrote the trace), and ridge exits as it did.
    EXPECT_EQ(signal_ridge_when_ready(
                  {ridge, "trace", "-o", trace_file.string(), "--json", summary.string(), "--", target, "--wait-for-signal"},
                  sig),
              128 + sig);
    expect_whole_workload(trace_file, summary, "signal");
    const nlohmann::json j = nlohmann::json::parse(ridge::read_text(summary));
    EXPECT_EQ(j["program"]["forwarded_signal"], sig);
    EXPECT_EQ(j["program"]["signal"], sig);
    EXPECT_EQ(j["end_signal"], sig);
  }
}

TEST(TraceGpu, RidgeTraceWindowsLeaveWarmupOut) {
  RIDGE_REQUIRE_GPU();
  const std::string ridge = (bin_dir() / "ridge").string(), target = (bin_dir() / "trace_target").string();
  const fs::path skipped = scratch("skip.json");
  ASSERT_EQ(run_command(ridge + " trace --skip-kernels 5 -o " + skipped.string() + " -- " + target), 0);
  EXPECT_EQ(load_chrome_trace(skipped.string()).kernels.size(),
            static_cast<std::size_t>(trace_workload::total_kernels - 5));
  const fs::path ranged = scratch("range.json");
  ASSERT_EQ(run_command(ridge + " trace --nvtx-range step -o " + ranged.string() + " -- " + target), 0);
  const Trace t = load_chrome_trace(ranged.string());
  EXPECT_EQ(t.kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));
  EXPECT_TRUE(t.memcpys.empty()) << "the copies happen outside the step ranges";
}

namespace {

TEST(TraceGpu, GraphKernelsJoinTheirGraphLaunch) {
  RIDGE_REQUIRE_GPU();
  const fs::path trace_file = scratch("graph.json");
  const std::string line = (bin_dir() / "ridge").string() + " trace -o " + trace_file.string() + " -- " +
                           (bin_dir() / "trace_target").string() + " --graph 5";
  ASSERT_EQ(run_command(line), 0) << line;
  const Trace t = load_chrome_trace(trace_file.string());
  std::map<std::uint32_t, std::string> calls;
  for (const auto& c : t.api_calls) calls[c.correlation] = t.strings.at(c.name);
  std::size_t from_graph = 0;
  for (const auto& k : t.kernels) {
    auto it = calls.find(k.correlation);
    ASSERT_NE(it, calls.end()) << "kernel without its launch call";
    from_graph += contains(it->second, "GraphLaunch");
  }
  EXPECT_EQ(from_graph, 20u) << "5 launches of a graph of 4 kernels";
}

TEST(TraceGpu, EveryApiLevelKeepsTheKernels) {
  RIDGE_REQUIRE_GPU();
  const std::string ridge = (bin_dir() / "ridge").string(), target = (bin_dir() / "trace_target").string();
  for (const char* level : {"none", "selected", "most", "all"}) {
    const fs::path file = scratch(std::string("api_") + level + ".json");
    ASSERT_EQ(run_command(ridge + " trace --api " + level + " -o " + file.string() + " -- " + target), 0) << level;
    const Trace t = load_chrome_trace(file.string());
    EXPECT_EQ(t.kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels)) << level;
    if (std::string(level) == "none") {
      EXPECT_TRUE(t.api_calls.empty());
      continue;
    }
    std::map<std::uint32_t, bool> calls;
    for (const auto& c : t.api_calls) calls[c.correlation] = true;
    for (const auto& k : t.kernels) EXPECT_TRUE(calls.count(k.correlation)) << level << ": kernel without its launch call";
  }
}

}  // namespace

namespace {

/// "cudaLaunchKernel x12, cuLaunchKernel x3, ...": what API calls a trace holds, for failure messages.
std::string api_call_census(const Trace& t) {
  std::map<std::string, int> names;
  for (const auto& c : t.api_calls) names[t.strings.at(c.name)]++;
  std::string out;
  for (const auto& [name, count] : names) out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  return out.empty() ? "(none)" : out;
}

std::size_t count_named(const Trace& t, const char* part) {
  std::size_t n = 0;
  for (const auto& k : t.kernels) n += contains(t.strings.at(k.name), part);
  return n;
}

std::size_t count_api(const Trace& t, const std::string& name) {
  std::size_t n = 0;
  for (const auto& c : t.api_calls) n += t.strings.at(c.name) == name;
  return n;
}

}  // namespace

// --profiler-range switches CUPTI on at each start call and off at each stop call: only the
// windows' kernels are recorded, a start inside a window and a stop outside one change nothing,
// and kernels still running when their window's stop is called are recorded complete.
TEST(TraceGpu, ProfilerRangeRecordsOnlyInsideTheWindows) {
  RIDGE_REQUIRE_GPU();
  namespace w = trace_workload::profiler_windows;
  const std::string ridge = (bin_dir() / "ridge").string(), target = (bin_dir() / "trace_target").string();

  // Untraced windows aside, the program launches what it says.
  const fs::path all_file = scratch("windows_all.json");
  ASSERT_EQ(run_command(ridge + " trace -o " + all_file.string() + " -- " + target + " --profiler-windows"), 0);
  const Trace all = load_chrome_trace(all_file.string());
  EXPECT_EQ(count_named(all, w::inside_kernel_name), static_cast<std::size_t>(w::inside));
  EXPECT_EQ(count_named(all, w::outside_kernel_name), static_cast<std::size_t>(w::outside));

  const fs::path file = scratch("windows.json"), summary = scratch("windows.summary.json");
  const std::string line = ridge + " trace --profiler-range -o " + file.string() + " --json " + summary.string() + " -- " +
                           target + " --profiler-windows";
  ASSERT_EQ(run_command(line), 0) << line;
  const Trace t = load_chrome_trace(file.string());
  const nlohmann::json j = nlohmann::json::parse(ridge::read_text(summary));
  const nlohmann::json& stats = j["collector_stats"];
  EXPECT_EQ(stats["profiler_gated"], true);
  EXPECT_EQ(stats["profiler_windows"], 2) << "two windows; the start inside window 1 opens none";
  EXPECT_EQ(stats["cupti_errors"], 0) << stats["last_cupti_error"];
  EXPECT_EQ(t.dropped_records, 0u);
  EXPECT_EQ(t.incomplete_records, 0u) << "kernels running when their window closed came back without timestamps";

  EXPECT_EQ(t.kernels.size(), static_cast<std::size_t>(w::inside)) << api_call_census(t);
  EXPECT_EQ(count_named(t, w::inside_kernel_name), static_cast<std::size_t>(w::inside));
  EXPECT_EQ(count_named(t, w::outside_kernel_name), 0u) << "a kernel from outside the windows was recorded";
  EXPECT_EQ(j["kernel_count"], w::inside);

  // Every kernel joins its launch call; window 2's kernels ran their full spin after its stop.
  std::map<std::uint32_t, const ApiCall*> calls;
  for (const auto& c : t.api_calls) calls[c.correlation] = &c;
  std::size_t long_ones = 0;
  for (const auto& k : t.kernels) {
    auto it = calls.find(k.correlation);
    ASSERT_NE(it, calls.end()) << "kernel without its launch call; API calls: " << api_call_census(t);
    EXPECT_TRUE(contains(t.strings.at(it->second->name), "Launch")) << t.strings.at(it->second->name);
    long_ones += static_cast<double>(k.end - k.start) >= w::window2_spin_ns * 0.99;
  }
  EXPECT_EQ(long_ones, static_cast<std::size_t>(w::window2));

  // The profiler calls are recorded, each once (the runtime call, not also the driver call it
  // makes). The window filter keeps those that begin inside a window: the start made while
  // window 1 was open and the two stops that close the windows (a window ends where its stop
  // call begins); the starts that open windows and the stray stop lie outside.
  // (Runtime and driver names together: which of the two nested calls is outermost is CUPTI's
  // business; counted twice would mean the nesting failed.)
  EXPECT_EQ(count_api(t, "cudaProfilerStart") + count_api(t, "cuProfilerStart"), 1u) << api_call_census(t);
  EXPECT_EQ(count_api(t, "cudaProfilerStop") + count_api(t, "cuProfilerStop"), 2u) << api_call_census(t);
  EXPECT_GE(count_api(t, "cuProfilerStop"), 1u) << "window 2's stop is a driver call; " << api_call_census(t);
  std::size_t ranges = 0;
  for (const auto& r : t.ranges) ranges += t.strings.at(r.name) == w::window_range;
  EXPECT_EQ(ranges, 1u);

  // Gating, not only filtering: recording everything and cutting afterwards keeps the same
  // kernels but handles every outside kernel too. (The selected API calls, launches among them,
  // stay on between the windows: switched on again after the first context CUPTI records none.)
  const fs::path ungated_summary = scratch("windows_ungated.summary.json");
  const std::string ungated = "RIDGE_TRACE_PROFILER_GATE=0 " + ridge + " trace --profiler-range -o '' --json " +
                              ungated_summary.string() + " -- " + target + " --profiler-windows";
  ASSERT_EQ(run_command(ungated), 0) << ungated;
  const nlohmann::json u = nlohmann::json::parse(ridge::read_text(ungated_summary));
  EXPECT_EQ(u["kernel_count"], w::inside);
  EXPECT_EQ(u["collector_stats"]["profiler_gated"], false);
  EXPECT_GE(u["collector_stats"]["records"].get<std::uint64_t>(),
            stats["records"].get<std::uint64_t>() + w::outside / 2)
      << "gated, CUPTI should not have seen the outside kernels (31 records; on the H200 the gated run's own "
         "extra records, such as the sync waits of its stop calls, made the difference 29)";
}

// ridge::Tracer in its default API mode (selected calls), started after the program has already
// run CUDA work, the way `ridge profile` starts it after its warm-up: the launch calls must be
// recorded and joined to their kernels. Several sessions, since ridge profile traces twice; one
// records every API call, for comparison when the selected mode loses the launch calls.
// The callbacks tell a fork()ed child from the traced process by a cached process id (getpid() is
// a system call per use): the child's CUDA calls and its exit must not touch CUPTI or the trace.
TEST(TraceGpu, AForkedChildOfATracedProcessExitsCleanly) {
  RIDGE_REQUIRE_GPU();
  ASSERT_EQ(trace_workload::run(), 0);
  ridge::Tracer tracer;
  tracer.start();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(30);  // a hang in the child fails the test instead of stalling it
    void* p = nullptr;
    (void)cudaMalloc(&p, 256);  // fails in a forked child, after CUPTI's callbacks ran
    (void)cudaDeviceSynchronize();
    std::exit(0);  // runs the tracer's exit hook, which must leave a child's CUPTI alone
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_EQ(trace_workload::run(), 0);
  tracer.stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the forked child " << (WIFSIGNALED(status) ? "died of signal " + std::to_string(WTERMSIG(status)) : "failed");
  EXPECT_EQ(tracer.events().kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));
  for (const auto& c : tracer.events().api_calls) EXPECT_EQ(c.process, static_cast<std::uint32_t>(getpid()));
}

TEST(TraceGpu, WithoutLaunchCallsEachKernelCarriesItsQueueTime) {
  RIDGE_REQUIRE_GPU();
  ridge::enable_nvtx_capture();
  ASSERT_EQ(trace_workload::run(), 0);  // started mid-program, as ridge.trace is
  ridge::Tracer tracer(ridge::TracerOptions{.synchronization = false, .launch_calls = false});
  tracer.start();
  ASSERT_EQ(trace_workload::run(), 0);
  tracer.stop();
  const Trace& t = tracer.events();
  ASSERT_EQ(t.kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));
  for (const auto& c : t.api_calls) EXPECT_FALSE(contains(t.strings.at(c.name), "LaunchKernel")) << t.strings.at(c.name);
  for (const auto& k : t.kernels) {
    EXPECT_GT(k.queued, 0u);
    EXPECT_LE(k.queued, k.start);
    EXPECT_LT(k.start - k.queued, 1'000'000'000u);  // queued a moment before it ran, on the same clock
  }
  // The copies and synchronizations are still recorded calls.
  std::map<std::uint32_t, const ApiCall*> calls;
  for (const auto& c : t.api_calls) calls[c.correlation] = &c;
  for (const auto& m : t.memcpys) EXPECT_TRUE(calls.count(m.correlation)) << "memcpy without its API call";

  const AnalysisOptions options{.step_range = trace_workload::step_range};
  const Analysis a = tracer.summary(options);
  EXPECT_EQ(a.kernels_without_launch_call, 0u);
  EXPECT_EQ(a.launch_latency_count, static_cast<std::uint64_t>(trace_workload::total_kernels));
  EXPECT_EQ(a.launches_timed_from_queue, a.launch_latency_count);
  // Each step's second busy-wait kernel is queued while the first still spins: time queued behind it.
  EXPECT_GE(a.launches_queued, static_cast<std::uint64_t>(trace_workload::steps * (trace_workload::busy_per_step - 1)));
  ASSERT_EQ(a.steps.size(), static_cast<std::size_t>(trace_workload::steps));
  for (const auto& s : a.steps) EXPECT_EQ(s.kernels, static_cast<std::uint64_t>(trace_workload::kernels_per_step));
  bool found_range = false;
  for (const auto& r : a.top_ranges)
    if (r.name == trace_workload::step_range) {
      found_range = true;
      EXPECT_EQ(r.kernels, static_cast<std::uint64_t>(trace_workload::total_kernels));
    }
  EXPECT_TRUE(found_range);
  const fs::path path = scratch("queue_times.json");
  tracer.write(path.string());
  EXPECT_EQ(to_json(analyze(load_chrome_trace(path.string()), options)), to_json(a));
}

TEST(TraceGpu, InProcessTracerStartedAfterCudaWorkRecordsLaunchCalls) {
  RIDGE_REQUIRE_GPU();
  ridge::enable_nvtx_capture();  // before the first NVTX call, as ridge profile does
  ASSERT_EQ(trace_workload::run(), 0);  // context, module loads, launches, copies: all untraced
  const AnalysisOptions options{.step_range = trace_workload::step_range};
  struct Session {
    const char* name;
    bool all_api_calls;
  };
  for (const Session& session : {Session{"selected", false}, Session{"all", true}, Session{"selected again", false}}) {
    SCOPED_TRACE(session.name);
    ridge::Tracer tracer(ridge::TracerOptions{.api_calls = session.all_api_calls ? ridge::trace::ApiCalls::all : ridge::trace::ApiCalls::selected});
    tracer.start();
    ASSERT_EQ(trace_workload::run(), 0);
    tracer.stop();
    const Trace& t = tracer.events();
    std::map<std::uint32_t, bool> calls;
    for (const auto& c : t.api_calls) calls[c.correlation] = true;
    std::size_t unjoined = 0;
    for (const auto& k : t.kernels) unjoined += !calls.count(k.correlation);
    // Printed either way: on the GPU machine this line is the diagnosis.
    std::printf("[ tracer mid-program, %s ] %zu kernels, %zu without their launch call; API calls: %s\n", session.name,
                t.kernels.size(), unjoined, api_call_census(t).c_str());
    EXPECT_EQ(t.kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels));
    EXPECT_EQ(unjoined, 0u) << "kernels without their launch call with the tracer started mid-program";
    if (unjoined == 0) check_workload_trace(t, tracer.summary(options));
  }
}
