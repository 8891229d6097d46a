// `ridge trace -- CMD` as a library call: run an unmodified program with the injection library
// (libridge_inject.so, which the CUDA driver loads into it), wait for it, and read the analysis it
// wrote at exit. CPU-only: the CUPTI side lives in cupti/inject.cpp, configured through the
// environment variables of cupti/inject_env.hpp.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/launch.hpp"
#include "ridge/trace/ranks.hpp"
#include "ridge/writers.hpp"
#include "trace/cupti/inject_env.hpp"
#include "trace/model/rank_finish.hpp"
#include "trace/model/signals.hpp"

extern char** environ;

namespace ridge::trace {

namespace {

namespace fs = std::filesystem;
namespace env = ridge::detail::inject_env;

/// libridge_inject.so ships beside the tool: ../lib (build tree, install) or the same folder.
fs::path find_inject_library(const std::string& given) {
  if (!given.empty()) return fs::absolute(given);
  if (const char* forced = std::getenv("RIDGE_INJECT_LIBRARY")) return fs::absolute(forced);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(fmt::format("cannot locate the ridge executable through /proc/self/exe: {}", ec.message()));
  const fs::path candidates[] = {exe.parent_path() / ".." / "lib" / "libridge_inject.so",
                                 exe.parent_path() / "libridge_inject.so"};
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return fs::weakly_canonical(c);
  throw Error(fmt::format("cannot find libridge_inject.so (looked for {} and {}): rebuild ridge (target ridge_inject) "
                          "or point RIDGE_INJECT_LIBRARY at it",
                          candidates[0].lexically_normal().string(), candidates[1].string()));
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// The program as execve needs it: the path itself when it has a slash, else searched in PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (executable_file(name)) return name;
    throw UsageError(fmt::format("program not found or not executable: {}", name));
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
    const std::string candidate = dir + "/" + name;
    if (executable_file(candidate)) return candidate;
    begin = end + 1;
  }
  throw UsageError(fmt::format("program not found: {} (not in PATH; give its path, e.g. ./{})", name, name));
}

std::string quote_command(const std::vector<std::string>& command) {
  std::string out;
  for (const auto& a : command) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t\"'") == std::string::npos ? a : "'" + a + "'";
  }
  return out;
}

/// Temporary folder for the summary and the ownership claim; removed on destruction.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ridge-trace-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error(fmt::format("cannot create a temporary folder: {}", std::strerror(errno)));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

using Environment = std::vector<std::pair<std::string, std::string>>;

/// This process's environment with `extra` set (an empty NVTX_INJECTION64_PATH removes it
/// instead: NVTX would try to load an empty path).
std::vector<std::string> child_environment(const Environment& extra) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : extra) replaced |= k == key;
    if (!replaced) environment.push_back(entry);
  }
  for (const auto& [k, v] : extra)
    if (!v.empty() || k != "NVTX_INJECTION64_PATH") environment.push_back(k + "=" + v);
  return environment;
}

// The program being waited for, read by forward_signal (a signal handler: lock-free atomics only).
std::atomic<pid_t> g_program_pid{0};
volatile sig_atomic_t g_forwarded_signal = 0;
// A signal that arrived between the fork and g_program_pid being set: its number, plus
// pending_from_terminal when the terminal sent it; 0 = none. Whoever takes it (exchange) passes it on.
std::atomic<int> g_pending_signal{0};
constexpr int pending_from_terminal = 1 << 8;
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

/// Passes `sig` on to the program `pid` (to its process group when it leads one). Async-signal-safe.
void pass_on(pid_t pid, int sig, bool from_terminal) {
  const bool own_group = ::getpgid(pid) == pid;  // asked now: the program may have called setsid
  if (!detail::forward_to_program(sig, from_terminal, own_group)) return;
  g_forwarded_signal = sig;
  ::kill(own_group ? -pid : pid, sig);
}

/// Passes a signal that came before the program's pid was known on, once the pid is.
void pass_on_pending(pid_t pid) {
  if (const int pending = g_pending_signal.exchange(0); pending != 0)
    pass_on(pid, pending & (pending_from_terminal - 1), (pending & pending_from_terminal) != 0);
}

/// SIGINT/SIGTERM/SIGHUP/SIGQUIT reaching `ridge trace` while the program runs: passed on (to its
/// process group when it leads one), so that it ends and its injection library writes the trace,
/// which we then read. Only async-signal-safe calls here (kill, getpgid, lock-free atomics). One
/// that comes between the fork and the pid being known is left pending for run_child; it may run
/// in any thread, so both sides take the pending signal with one exchange and only one passes it on.
void forward_signal(int sig, siginfo_t* info, void*) {
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  g_pending_signal.store(sig | (from_terminal ? pending_from_terminal : 0));
  if (const pid_t pid = g_program_pid.load(); pid > 0) pass_on_pending(pid);
}

/// Installs forward_signal for the forwarded signals, and puts the previous dispositions back
/// when destroyed. Installed before fork, so no signal slips between the fork and the wait.
struct SignalForwarding {
  struct sigaction previous[std::size(detail::forwarded_signals)] {};
  SignalForwarding() {
    g_program_pid = 0;
    g_forwarded_signal = 0;
    g_pending_signal = 0;
    struct sigaction forward {};
    forward.sa_sigaction = forward_signal;
    forward.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&forward.sa_mask);
    for (std::size_t i = 0; i < std::size(previous); ++i) {
      const int sig = detail::forwarded_signals[i];
      sigaction(sig, nullptr, &previous[i]);
      // An ignored signal stays ignored, for the program too (nohup's SIGHUP).
      const bool ignored = !(previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_handler == SIG_IGN;
      if (!ignored) sigaction(sig, &forward, nullptr);
    }
  }
  ~SignalForwarding() {
    for (std::size_t i = 0; i < std::size(previous); ++i)
      sigaction(detail::forwarded_signals[i], &previous[i], nullptr);
    g_program_pid = 0;
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;
};

/// Runs the program with `extra` in its environment; its stdio is ours, and so is its process
/// group: Ctrl-C at the terminal reaches it directly. Signals sent to us alone are forwarded
/// (forward_signal); we wait for the program either way, to read what it wrote.
ProgramExit run_child(const std::string& program, const std::vector<std::string>& args, const Environment& extra) {
  std::vector<std::string> environment = child_environment(extra);
  std::vector<char*> envp, argv;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_copy = args;
  for (auto& a : args_copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(fmt::format("pipe failed: {}", std::strerror(errno)));
  std::fflush(nullptr);
  SignalForwarding forwarding;
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::execve(program.c_str(), argv.data(), envp.data());  // exec resets forward_signal to the default
    const int error = errno;  // only reached when exec failed: tell the parent why
    [[maybe_unused]] auto n = ::write(pipe_fds[1], &error, sizeof error);
    ::_exit(127);
  }
  g_program_pid = pid;
  pass_on_pending(pid);  // a signal that came before the pid was known
  ::close(pipe_fds[1]);
  int exec_error = 0;
  ssize_t got = 0;
  while ((got = ::read(pipe_fds[0], &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  const bool exec_failed = got == static_cast<ssize_t>(sizeof exec_error);
  ::close(pipe_fds[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_failed) throw UsageError(fmt::format("cannot run {}: {}", program, std::strerror(exec_error)));

  ProgramExit result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  }
  result.forwarded_signal = g_forwarded_signal;
  return result;
}

/// Traces written by other CUDA processes the program started (named <stem>.pid<N><ext>).
std::vector<std::string> sibling_traces(const fs::path& output) {
  std::vector<std::string> found;
  std::error_code ec;
  const fs::path dir = output.parent_path().empty() ? fs::path(".") : output.parent_path();
  const std::string prefix = output.stem().string() + ".pid";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.path().extension() == output.extension()) found.push_back(entry.path().string());
  }
  return found;
}

/// The collection with the step range of its counters and schedule filled in from the analysis's.
CollectionOptions effective_collection(const ProgramTraceOptions& o) {
  CollectionOptions c = o.collection;
  if (c.counters && c.counters->step_range.empty()) c.counters->step_range = o.analysis.step_range;
  if (c.schedule && c.schedule->step_range.empty()) c.schedule->step_range = o.analysis.step_range;
  return c;
}

/// The settings libridge_inject.so reads in the program (inject_env.hpp).
Environment injection_environment(const ProgramTraceOptions& o, const fs::path& library, const fs::path& output,
                                  const fs::path& summary, const fs::path& owner) {
  Environment e = {
      {"CUDA_INJECTION64_PATH", library.string()},
      // NVTX ranges reach the same CUPTI through the injection library's forwarder.
      {"NVTX_INJECTION64_PATH", o.collection.nvtx ? library.string() : std::string()},
      {env::output, output.string()},
      {env::summary, summary.string()},
      {env::owner, owner.string()},
      {env::command, quote_command(o.command)},
      {env::step_range, o.analysis.step_range},
      {env::nvtx_range, o.window.nvtx_range},
      {env::from_range, o.window.from_range},
      {env::profiler_range, o.window.profiler_range ? "1" : "0"},
      {env::skip_seconds, fmt::format("{}", o.window.skip_seconds)},
      {env::skip_kernels, fmt::format("{}", o.window.skip_kernels)},
      {env::top, fmt::format("{}", o.analysis.top)},
  };
  for (auto& setting : env::collection_environment(effective_collection(o))) e.push_back(std::move(setting));
  return e;
}

/// Fills `result` from the summary the program wrote, or says why there is none.
void read_summary(const fs::path& summary, ProgramTrace& result) {
  std::error_code ec;
  nlohmann::json j;
  bool have_summary = false;
  if (fs::exists(summary, ec)) {
    try {
      j = read_json_file(summary);
      have_summary = j.is_object();
    } catch (const std::exception& e) {
      result.notes.push_back(fmt::format("the summary {} is unreadable: {}", summary.string(), e.what()));
    }
  }
  if (have_summary && j.contains("error")) {
    result.error = "tracing failed inside the program: " + j["error"].get<std::string>();
    return;
  }
  if (!have_summary) {
    result.error = "no trace was written. Either the program never initialized CUDA (no GPU work, or no GPU: check "
                   "`nvidia-smi`), or it ended without running exit handlers (_exit, SIGKILL).";
    return;
  }
  result.analysis = analysis_from_json(j);
  result.events = j.value("events", std::uint64_t{0});
  result.write_seconds = j.value("write_seconds", 0.0);
  result.end = j.value("end", std::string("?"));
  const nlohmann::json stats = j.value("collector_stats", nlohmann::json::object());
  result.end_signal = j.value("end_signal", 0);
  result.profiler_gated = stats.value("profiler_gated", false);
  result.profiler_windows = stats.value("profiler_windows", std::uint64_t{0});
  result.gate_seconds = stats.value("gate_seconds", 0.0);
  result.cupti_errors = stats.value("cupti_errors", std::uint64_t{0});
  result.last_cupti_error = stats.value("last_cupti_error", std::string());
  result.scheduled = stats.value("scheduled", false);
  result.steps_seen = stats.value("steps_seen", std::uint64_t{0});
  result.steps_recorded = stats.value("steps_recorded", std::uint64_t{0});
  result.summary = std::move(j);
}

}  // namespace

void ProgramTraceOptions::validate() const {
  const bool nvtx = collection.nvtx;
  if (!nvtx && (!analysis.step_range.empty() || !window.nvtx_range.empty() || !window.from_range.empty()))
    throw UsageError("nvtx is off, so there are no NVTX ranges to find for step_range, nvtx_range or from_range: "
                     "record NVTX, or leave those empty");
  if (collection.api_calls == ApiCalls::none && (window.profiler_range || window.skip_kernels > 0))
    throw UsageError("api none records no API calls, so no cudaProfilerStart/Stop or launch calls to window by: "
                     "record api selected (the default) to use profiler_range or skip_kernels");
  if (!(window.skip_seconds >= 0)) throw UsageError(fmt::format("skip_seconds must be >= 0, got {}", window.skip_seconds));
  if (analysis.top == 0) throw UsageError("top must be at least 1");
  if (collection.schedule && window.profiler_range)
    throw UsageError("a schedule and profiler_range both switch collection on and off: choose one");
  effective_collection(*this).validate();
  if (!(merge_timeout_seconds >= 0))
    throw UsageError(fmt::format("merge_timeout_seconds must be >= 0, got {}", merge_timeout_seconds));
}

int ProgramTrace::exit_code() const {
  if (error.empty() || program.exit_code != 0) return program.exit_code;
  return static_cast<int>(ExitCode::runtime_error);
}

std::string ProgramTrace::collection_text() const {
  std::string text;
  auto out = std::back_inserter(text);
  if (!trace_file.empty())
    fmt::format_to(out, "\nTrace: {} ({} events; written in {:.2f} s) - open it in https://ui.perfetto.dev\n", trace_file,
                   events, write_seconds);
  if (profiler_gated) {
    if (profiler_windows == 0)
      fmt::format_to(out, "\nProfiler range: the program never called cudaProfilerStart (torch.cuda.profiler.start()), "
                          "so nothing was recorded.\n");
    else
      fmt::format_to(out, "\nProfiler range: recorded inside {} cudaProfilerStart/Stop window(s) only; outside them "
                          "CUPTI recorded launch calls only (switching took {:.2f} ms in all).\n",
                     profiler_windows, 1e3 * gate_seconds);
  }
  if (scheduled)
    fmt::format_to(out, "\nSchedule: recorded {} of the {} steps the program began; CUPTI's collection was off in the "
                        "waiting steps, and the warmup steps' records were dropped (switching took {:.2f} ms in all).\n",
                   steps_recorded, steps_seen, 1e3 * gate_seconds);
  if (end != "exit")
    fmt::format_to(out, "The trace was written from a signal handler ({}): it holds what was collected until then.\n", end);
  for (const auto& other : other_traces)
    fmt::format_to(out, "Another CUDA process started by the program was traced too: {}\n", other);
  if (distributed.known())
    fmt::format_to(out, "Rank {} of {} ({}{}): the trace carries distributedInfo for Holistic Trace Analysis.\n",
                   distributed.rank, distributed.world_size, distributed.launcher,
                   distributed.job.empty() ? std::string() : ", job " + distributed.job);
  if (!merged_trace.empty())
    fmt::format_to(out, "Merged trace of all ranks: {} (one process track per rank)\n", merged_trace);
  return text;
}

ProgramTrace trace_program(const ProgramTraceOptions& o) {
  o.validate();
  if (o.command.empty())
    throw UsageError("nothing to trace: the command is empty; give the program to run and its arguments");
  const std::string program = find_program(o.command.front());
  const std::optional<DistributedInfo> rank = current_rank();  // malformed launcher variables: a usage error now
  const double started = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const fs::path library = find_inject_library(o.inject_library);
  const fs::path output = o.output.empty() ? fs::path() : fs::absolute(o.output);
  TempDir temp;
  const fs::path summary = temp.path / "summary.json";  // the program's analysis, read once it ends
  std::error_code ec;
  if (!output.empty()) {
    fs::create_directories(output.parent_path(), ec);
    if (ec) throw UsageError(fmt::format("cannot create the folder for {}: {}", output.string(), ec.message()));
  }

  ProgramTrace result;
  result.command = o.command;
  result.trace_file = o.output;
  result.program = run_child(program, o.command, injection_environment(o, library, output, summary, temp.path / "owner"));
  read_summary(summary, result);
  if (!result.error.empty()) {
    if (result.program.forwarded_signal != 0)
      result.notes.push_back(fmt::format("ridge trace passed signal {} ({}) on to the program",
                                         result.program.forwarded_signal, strsignal(result.program.forwarded_signal)));
    return result;
  }
  if (std::string note = detail::partial_trace_note(result.end, result.program.signal != 0 ? result.program.signal
                                                                                                   : result.end_signal,
                                                           result.program.forwarded_signal);
      !note.empty())
    result.notes.push_back(std::move(note));
  if (!output.empty()) result.other_traces = sibling_traces(output);
  detail::finish_rank_traces(o, rank, started, result);
  result.summary["program"] = {
      {"command", o.command}, {"exit_code", result.program.exit_code}, {"signal", result.program.signal},
      {"forwarded_signal", result.program.forwarded_signal}};
  return result;
}

}  // namespace ridge::trace
