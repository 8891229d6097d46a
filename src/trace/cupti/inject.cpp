// libridge_inject.so: loaded into an unmodified CUDA program through CUDA_INJECTION64_PATH (the
// driver calls InitializeInjection during cuInit) and configured by environment variables set by
// `ridge trace`. It traces from CUDA initialization to exit (with --profiler-range: only between
// the program's profiler start and stop calls) and writes the trace and its analysis when the
// program exits, returns from main, calls exit(), or dies of a signal (best effort).
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/ranks.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/trace/window.hpp"
#include "ridge/writers.hpp"
#include "trace/cupti/collector.hpp"
#include "trace/cupti/inject_env.hpp"
#include "trace/cupti/kernel_counters.hpp"
#include "trace/model/signals.hpp"

namespace {

namespace env = ridge::detail::inject_env;
using namespace ridge;

struct Config {
  std::string output, summary, command, step_range;
  trace::Window window;
  std::size_t top = 10;
  detail::CollectorOptions collector;
  trace::DistributedInfo distributed;
};

Config* g_config = nullptr;
pid_t g_pid = 0;
std::atomic<bool> g_tracing{false};
std::atomic<bool> g_finished{false};  // finish() has begun (in some thread)
std::atomic<bool> g_written{false};   // finish() is done: the trace and summary are on disk
std::atomic<pthread_t> g_writer{};    // the thread running finish()
std::atomic<bool> g_initialized{false};
/// What finish() is waiting on now, when it is a call into CUDA or CUPTI that may not return
/// (nullptr while ridge writes its own files): named by the exit watch if it does not return.
std::atomic<const char*> g_waiting_on{nullptr};
std::atomic<bool> g_exit_watched{false};
struct sigaction g_previous[NSIG];
const int g_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};

std::string getenv_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : fallback;
}

Config read_config() {
  Config c;
  c.output = getenv_or(env::output);
  c.summary = getenv_or(env::summary);
  c.command = getenv_or(env::command);
  c.step_range = getenv_or(env::step_range);
  c.window.nvtx_range = getenv_or(env::nvtx_range);
  c.window.from_range = getenv_or(env::from_range);
  c.window.profiler_range = getenv_or(env::profiler_range) == "1";
  static_cast<trace::CollectionOptions&>(c.collector) = env::collection_from_environment();
  c.collector.selected_runtime = getenv_or(env::api_domains) != "driver";
  c.collector.detect_other_subscriber = getenv_or(env::detect_subscriber) != "0";
  // --profiler-range switches collection on and off at the profiler calls (unless asked to record
  // everything and only cut the windows out afterwards, for comparison); the windows are cut out
  // afterwards either way, so records straddling a boundary are trimmed the same.
  c.collector.profiler_gated = c.window.profiler_range && getenv_or(env::profiler_gate) != "0";
  c.collector.before_first_context = true;  // InitializeInjection runs inside cuInit
  c.collector.flush_at_gate_stop = getenv_or(env::gate_flush) != "0";
  c.collector.sync_at_gate_stop = getenv_or(env::gate_sync) != "0";
  try {
    if (auto s = getenv_or(env::skip_seconds); !s.empty()) c.window.skip_seconds = std::stod(s);
    if (auto s = getenv_or(env::skip_kernels); !s.empty()) c.window.skip_kernels = std::stoull(s);
    if (auto s = getenv_or(env::top); !s.empty()) c.top = std::stoul(s);
    if (auto s = getenv_or(env::per_thread_buffers); !s.empty()) c.collector.per_thread_buffers = std::stoi(s);
    if (auto s = getenv_or(env::flush_period_ms); !s.empty()) c.collector.flush_period_ms = std::stoul(s);
    if (auto s = getenv_or(env::device_buffer_mb); !s.empty()) c.collector.device_buffer_bytes = std::stoul(s) << 20;
  } catch (const std::exception&) {
    throw UsageError("malformed RIDGE_TRACE_* number in the environment");
  }
  // One rank of a job (mpirun, srun, torchrun: its launcher's variables are in our environment)
  // writes trace.rank<R>.json with distributedInfo, whether ridge runs inside each rank or starts
  // the launcher itself.
  if (auto rank = trace::current_rank()) c.distributed = *rank;
  const bool ranked = c.distributed.known() && c.distributed.world_size > 1;
  if (ranked && !c.output.empty()) c.output = trace::rank_trace_path(c.output, c.distributed.rank);
  // A second CUDA process started by the program (a subprocess inheriting our environment) must
  // not overwrite the first one's files: it writes its trace beside them, named by its pid. Only
  // the first process of all writes the summary `ridge trace` reads; each rank's first process
  // owns its rank file.
  const std::string owner = getenv_or(env::owner);
  auto claim = [](const std::string& path) {
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  };
  if (!owner.empty()) {
    const bool first = claim(owner);
    const bool owns_output = ranked ? claim(fmt::format("{}.rank{}", owner, c.distributed.rank)) : first;
    if (!first) c.summary.clear();
    if (!owns_output && !c.output.empty()) {
      std::filesystem::path p(c.output);
      c.output = (p.parent_path() / fmt::format("{}.pid{}{}", p.stem().string(), getpid(), p.extension().string())).string();
    }
  }
  return c;
}

void write_error_summary(const std::string& path, const std::string& message) {
  if (path.empty()) return;
  try {
    write_json(path, nlohmann::json{{"error", message}, {"pid", getpid()}});
  } catch (...) {
  }
}

/// Lets queued GPU work finish so its records are complete. The driver is loaded (it loaded us).
void synchronize_context() {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (cuda == nullptr) return;
  using Sync = int (*)();
  if (auto sync = reinterpret_cast<Sync>(dlsym(cuda, "cuCtxSynchronize"))) sync();
  dlclose(cuda);
}

/// Writes the trace and the summary, once, from whichever thread gets here first: the main thread
/// returning from main, a thread calling exit() (atexit handlers run in the thread that calls
/// exit), or a signal handler. `sig` is the signal whose handler called it, 0 at exit.
void finish(const char* reason, int sig = 0) {
  if (!g_tracing.load() || getpid() != g_pid) return;  // a fork()ed child inherited our state: its parent writes
  if (g_finished.exchange(true)) return;
  g_writer = pthread_self();
  const Config& c = *g_config;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    g_waiting_on = "cuCtxSynchronize (waiting for the program's GPU work)";
    synchronize_context();
    g_waiting_on = "CUPTI (stopping the trace and the counters, flushing records)";
    trace::Trace t = detail::collector_stop(/*process_exiting=*/true);
    g_waiting_on = nullptr;
    t.command = c.command;
    t.distributed = c.distributed;
    if (!c.window.empty()) t = trace::apply_window(t, c.window);
    const auto t1 = std::chrono::steady_clock::now();
    if (!c.output.empty()) trace::write_trace(t, c.output);
    const auto t2 = std::chrono::steady_clock::now();
    if (!c.summary.empty()) {
      trace::AnalysisOptions options;
      options.top = c.top;
      options.step_range = c.step_range;
      nlohmann::json j = trace::to_json(trace::analyze(t, options));
      j["trace_file"] = c.output;
      j["pid"] = g_pid;
      j["end"] = reason;
      j["end_signal"] = sig;
      j["events"] = t.event_count();
      j["collect_seconds"] = std::chrono::duration<double>(t1 - t0).count();
      j["write_seconds"] = std::chrono::duration<double>(t2 - t1).count();
      const detail::CollectorStats stats = detail::collector_stats();
      j["collector_stats"] = {{"buffers_requested", stats.buffers_requested},
                              {"buffers_completed", stats.buffers_completed},
                              {"records", stats.records},
                              {"completion_seconds", stats.completion_seconds},
                              {"completions_on_start_thread", stats.completions_on_start_thread},
                              {"profiler_gated", stats.profiler_gated},
                              {"profiler_windows", stats.profiler_windows},
                              {"gate_seconds", stats.gate_seconds},
                              {"cupti_errors", stats.cupti_errors},
                              {"last_cupti_error", stats.last_cupti_error},
                              {"scheduled", stats.scheduled},
                              {"steps_seen", stats.steps_seen},
                              {"steps_recorded", stats.steps_recorded}};
      write_json(c.summary, j);
    } else if (!c.output.empty()) {
      std::fprintf(stderr, "ridge trace: process %d wrote %s\n", static_cast<int>(g_pid), c.output.c_str());
    }
  } catch (const std::exception& e) {
    g_waiting_on = nullptr;
    std::fprintf(stderr, "ridge trace: could not write the trace: %s\n", e.what());
    write_error_summary(c.summary, e.what());
  }
  g_written = true;
}

/// How long a call into CUDA or CUPTI at exit may take before the exit watch ends the process, and
/// how long the rest of the exit may take once the trace is written (CUDA's and CUPTI's teardown).
constexpr double cupti_exit_deadline_seconds = 20;
constexpr double teardown_deadline_seconds = 1;

/// The exit watch: a program traced with counters must end within a second of its own end, whatever
/// CUPTI's or the driver's teardown does. If a CUDA or CUPTI call of finish() does not return within
/// its deadline, or (counters on) the process is still alive a second after the trace was written,
/// the watch says what it waited on and ends the process with the program's own exit status,
/// after flushing its stdout and stderr.
void exit_watch(int status) {
  using namespace std::chrono;
  const auto tick = milliseconds(10);
  auto waited_since = steady_clock::now();
  const char* last = nullptr;
  while (!g_written.load()) {
    const char* now_waiting = g_waiting_on.load();
    if (now_waiting != last) last = now_waiting, waited_since = steady_clock::now();
    if (now_waiting != nullptr && duration<double>(steady_clock::now() - waited_since).count() > cupti_exit_deadline_seconds) {
      const std::string message = fmt::format("at exit, {} did not return within {:.0f} s: the trace was not written; "
                                              "ended the program with its exit status {}",
                                              now_waiting, cupti_exit_deadline_seconds, status);
      std::fprintf(stderr, "ridge trace: %s\n", message.c_str());
      if (g_config != nullptr) write_error_summary(g_config->summary, message);
      for (std::FILE* f : {stdout, stderr})
        if (ftrylockfile(f) == 0) {
          fflush_unlocked(f);
          funlockfile(f);
        }
      _exit(status);
    }
    std::this_thread::sleep_for(tick);
  }
  // The teardown deadline holds with counters on (the profiler is what has hung there); a plain
  // trace leaves the driver's teardown (freeing a large process's memory can take seconds) alone.
  if (g_config == nullptr || !g_config->collector.counters) return;
  std::this_thread::sleep_for(duration<double>(teardown_deadline_seconds));
  // The program's buffered output must not be lost: flush stdout and stderr unless a stuck thread holds them.
  for (std::FILE* f : {stdout, stderr})
    if (ftrylockfile(f) == 0) {
      fflush_unlocked(f);
      funlockfile(f);
    }
  std::fprintf(stderr, "ridge trace: the process was still exiting %.0f s after the trace was written (CUDA or CUPTI "
               "teardown did not return); ended it with the program's exit status %d\n", teardown_deadline_seconds, status);
  _exit(status);
}

/// An exit handler (on_exit: it knows the exit status) that starts the exit watch, once. Registered
/// at start and again when CUPTI's profiler starts, so it runs before any handler CUPTI added.
void start_exit_watch(int status, void*) {
  if (!g_tracing.load() || getpid() != g_pid || g_exit_watched.exchange(true)) return;
  // Until finish() names its own waits, the wait is on the exit handlers that run before it.
  const char* none = nullptr;
  if (!g_finished.load())
    g_waiting_on.compare_exchange_strong(none, "the exit handlers that run before ridge's (CUDA's, CUPTI's)");
  try {
    std::thread([status] { exit_watch(status); }).detach();
  } catch (const std::exception&) {  // no thread: exit unwatched, as before
  }
}

/// How long a signal handler may spend writing before SIGALRM ends the process (a crash inside a
/// CUPTI or collector lock would otherwise hang the program forever instead of letting it die), and
/// how long a signal or exit() waits for another thread that is writing.
constexpr unsigned flush_deadline_seconds = 60;

/// A signal arriving while another thread writes (SIGTERM during an exit() from a worker thread)
/// must not end the process mid-write: wait for the writer, up to `seconds`.
void wait_for_other_writer(unsigned seconds) {
  if (!g_finished.load() || g_written.load() || pthread_equal(g_writer.load(), pthread_self())) return;
  const timespec tick{0, 10'000'000};
  for (unsigned i = 0; i < seconds * 100 && !g_written.load(); ++i) nanosleep(&tick, nullptr);
}

void at_exit(int status, void* arg) {
  start_exit_watch(status, arg);
  wait_for_other_writer(flush_deadline_seconds);
  finish("exit");
}

detail::PreviousHandler previous_handler(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO)
    return a.sa_sigaction != nullptr ? detail::PreviousHandler::function : detail::PreviousHandler::default_action;
  if (a.sa_handler == SIG_IGN) return detail::PreviousHandler::ignored;
  return a.sa_handler == SIG_DFL ? detail::PreviousHandler::default_action : detail::PreviousHandler::function;
}

void call_previous(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[sig];
  if (previous.sa_flags & SA_SIGINFO)
    previous.sa_sigaction(sig, info, context);
  else
    previous.sa_handler(sig);
}

// Not async-signal-safe, knowingly: flushing CUPTI, synchronizing the context, building the
// analysis and writing files all allocate and take locks. After a crash the heap or a lock may be
// broken, so this is best effort: the minimum (flush and write, no chaining in between) under a
// SIGALRM deadline, then the program's own disposition is restored and the signal raised again,
// so the process ends exactly as it would have without us.
void on_signal(int sig, siginfo_t* info, void* context) {
  switch (detail::action_for(sig, previous_handler(g_previous[sig]))) {
    case detail::SignalAction::chain:
      // The program handles this signal itself (Python turns SIGINT into KeyboardInterrupt):
      // let it; the trace is written at its exit.
      call_previous(sig, info, context);
      return;
    case detail::SignalAction::ignore: return;
    case detail::SignalAction::flush_and_reraise: break;
  }
  // The deadline borrows SIGALRM; the program's own alarm and handler are put back afterwards, for
  // a program whose fault handler recovers.
  struct sigaction alarm_default {}, program_alarm {};
  alarm_default.sa_handler = SIG_DFL;
  sigemptyset(&alarm_default.sa_mask);
  sigaction(SIGALRM, &alarm_default, &program_alarm);
  const unsigned program_alarm_left = alarm(flush_deadline_seconds);
  wait_for_other_writer(flush_deadline_seconds);
  finish(detail::end_reason(sig), sig);
  alarm(0);
  sigaction(SIGALRM, &program_alarm, nullptr);
  if (program_alarm_left != 0) alarm(program_alarm_left);
  // Back to the program's disposition: the default ends the process when this handler returns
  // (the signal is blocked until then); a program's fault handler runs when the fault recurs.
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);
}

void install_signal_handlers() {
  for (int sig : g_signals) {
    struct sigaction ours {};
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (sigaction(sig, nullptr, &g_previous[sig]) != 0) continue;
    sigaction(sig, &ours, nullptr);
  }
}

}  // namespace

/// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_initialized.exchange(true)) return 1;
  Config config;
  try {
    config = read_config();
    g_config = new Config(config);
    detail::collector_start(config.collector);
    g_pid = getpid();
    g_tracing = true;
    on_exit(at_exit, nullptr);
    detail::counters_on_profiler_initialized([] { on_exit(start_exit_watch, nullptr); });
    install_signal_handlers();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ridge trace: cannot trace this process: %s\n", e.what());
    write_error_summary(config.summary, e.what());
  }
  return 1;
}

/// NVTX's injection entry point (NVTX_INJECTION64_PATH names this library too): forwarded to the
/// CUPTI library loaded in this process, so NVTX ranges reach the same CUPTI instance that traces
/// CUDA, even when the program (PyTorch) brings its own copy of CUPTI.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* get_export_table) {
  using Init = int (*)(const void*);
  static const Init init = []() -> Init {
    const std::string path = detail::cupti_library_path();
    void* handle = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    return handle != nullptr ? reinterpret_cast<Init>(dlsym(handle, "InitializeInjectionNvtx2")) : nullptr;
  }();
  return init != nullptr ? init(get_export_table) : 0;
}
