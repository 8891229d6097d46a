// ridge trace: run an unmodified program with ridge's CUPTI injection library, pass its output
// and exit code through, and summarize what its GPU did; or analyze a saved trace.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace.hpp"
#include "ridge/writers.hpp"
#include "trace/cupti/inject_env.hpp"

extern char** environ;

namespace ridge::cli {
namespace {

namespace fs = std::filesystem;
namespace env = ridge::inject_env;

struct TraceOptions {
  std::string output = "runs/trace.json";
  std::string json;
  std::string analyze;
  double skip_seconds = 0;
  std::uint64_t skip_kernels = 0;
  std::string nvtx_range;
  bool profiler_range = false;
  std::string step_range;
  std::size_t top = 10;
  bool all_api = false;
  std::string api = "selected";
  bool sync = false;
  bool no_sync = false;  // the default since sync records became opt-in; accepted for old scripts
  bool no_nvtx = false;
  std::size_t buffer_mb = 32;
  std::vector<std::string> command;
};

trace::Window window_of(const TraceOptions& o) {
  trace::Window w;
  w.skip_seconds = o.skip_seconds;
  w.skip_kernels = o.skip_kernels;
  w.nvtx_range = o.nvtx_range;
  w.profiler_range = o.profiler_range;
  return w;
}

/// libridge_inject.so ships beside the tool: ../lib (build tree, install) or the same folder.
fs::path find_inject_library() {
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

struct ChildStatus {
  int exit_code = 0;  ///< what ridge returns: the program's code, or 128 + signal
  int signal = 0;
};

/// Runs the program with `extra` added to the environment (an empty NVTX_INJECTION64_PATH removes
/// it instead: NVTX would try to load an empty path); its stdio is ours. Ctrl-C reaches the
/// program (same process group), which decides what to do; ridge waits for it either way.
ChildStatus run_child(const std::string& program, const std::vector<std::string>& args,
                      const std::vector<std::pair<std::string, std::string>>& extra) {
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
  std::vector<char*> envp, argv;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_copy = args;
  for (auto& a : args_copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(fmt::format("pipe failed: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::execve(program.c_str(), argv.data(), envp.data());
    const int error = errno;  // only reached when exec failed: tell the parent why
    [[maybe_unused]] auto n = ::write(pipe_fds[1], &error, sizeof error);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  int exec_error = 0;
  const bool exec_failed = ::read(pipe_fds[0], &exec_error, sizeof exec_error) == static_cast<ssize_t>(sizeof exec_error);
  ::close(pipe_fds[0]);

  // The terminal's Ctrl-C goes to the program too; ridge outlives it to write the summary.
  struct sigaction ignore {}, old_int {}, old_quit {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (exec_failed) throw UsageError(fmt::format("cannot run {}: {}", program, std::strerror(exec_error)));

  ChildStatus result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  }
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

int run_trace(const TraceOptions& o) {
  const bool json_to_stdout = o.json == "-";
  if (o.no_nvtx && (!o.step_range.empty() || !o.nvtx_range.empty()))
    throw UsageError("--no-nvtx leaves no NVTX ranges to find: drop it, or drop --step-range/--nvtx-range");
  if (o.api == "none" && !o.all_api && (o.profiler_range || o.skip_kernels > 0))
    throw UsageError("--api none records no API calls, so no cudaProfilerStart/Stop or launch calls to window by: "
                     "use --api selected (the default) with --profiler-range or --skip-kernels");
  std::FILE* out = json_to_stdout ? stderr : stdout;
  trace::AnalysisOptions analysis_options;
  analysis_options.top = o.top;
  analysis_options.step_range = o.step_range;

  if (!o.analyze.empty()) {
    if (!o.command.empty()) throw UsageError("--analyze reads a saved trace: give either --analyze FILE or -- COMMAND, not both");
    trace::Trace t = trace::load_chrome_trace(o.analyze);
    const trace::Window w = window_of(o);
    if (!w.empty()) t = trace::apply_window(t, w);
    const trace::Analysis a = trace::analyze(t, analysis_options);
    fmt::print(out, "{}: {}\n", o.analyze, t.command.empty() ? std::string("(command not recorded)") : t.command);
    fmt::print(out, "{}", trace::format_analysis(a));
    if (!o.json.empty()) {
      nlohmann::json j = trace::to_json(a);
      j["trace_file"] = o.analyze;
      write_json(o.json, j);
    }
    return 0;
  }

  if (o.command.empty())
    throw UsageError("nothing to trace: give the program after --, e.g. `ridge trace -- python3 train.py`, or "
                     "--analyze FILE");
  const std::string program = find_program(o.command.front());
  const fs::path library = find_inject_library();
  const fs::path output = o.output.empty() ? fs::path() : fs::absolute(o.output);
  TempDir temp;
  const fs::path summary = temp.path / "summary.json";  // --json FILE is written only after the run
  std::error_code ec;
  fs::remove(summary, ec);  // a summary left by an earlier run must not pass for this one's
  if (!output.empty()) {
    fs::create_directories(output.parent_path(), ec);
    if (ec) throw UsageError(fmt::format("cannot create the folder for {}: {}", output.string(), ec.message()));
  }

  std::vector<std::pair<std::string, std::string>> extra{
      {"CUDA_INJECTION64_PATH", library.string()},
      // NVTX ranges reach the same CUPTI through the injection library's forwarder.
      {"NVTX_INJECTION64_PATH", o.no_nvtx ? std::string() : library.string()},
      {env::output, output.string()},
      {env::summary, summary.string()},
      {env::owner, (temp.path / "owner").string()},
      {env::command, quote_command(o.command)},
      {env::step_range, o.step_range},
      {env::nvtx_range, o.nvtx_range},
      {env::profiler_range, o.profiler_range ? "1" : "0"},
      {env::skip_seconds, fmt::format("{}", o.skip_seconds)},
      {env::skip_kernels, fmt::format("{}", o.skip_kernels)},
      {env::top, fmt::format("{}", o.top)},
      {env::all_api, o.all_api ? "1" : "0"},
      {env::api, o.api},
      {env::sync, o.sync && !o.no_sync ? "1" : "0"},
      {env::nvtx, o.no_nvtx ? "0" : "1"},
      {env::buffer_mb, fmt::format("{}", o.buffer_mb)},
  };
  const ChildStatus child = run_child(program, o.command, extra);

  std::fflush(stdout);
  fmt::print(out, "\n");
  if (child.signal != 0)
    fmt::print(out, "ridge trace: {} was killed by signal {} ({})\n", o.command.front(), child.signal, strsignal(child.signal));
  else
    fmt::print(out, "ridge trace: {} exited with code {}\n", o.command.front(), child.exit_code);

  nlohmann::json j;
  bool have_summary = false;
  if (fs::exists(summary, ec)) {
    try {
      j = read_json_file(summary);
      have_summary = j.is_object();
    } catch (const std::exception& e) {
      fmt::print(stderr, "ridge trace: the summary {} is unreadable: {}\n", summary.string(), e.what());
    }
  }
  if (have_summary && j.contains("error")) {
    fmt::print(stderr, "ridge trace: error: tracing failed inside the program: {}\n", j["error"].get<std::string>());
    return child.exit_code != 0 ? child.exit_code : static_cast<int>(ExitCode::runtime_error);
  }
  if (!have_summary) {
    fmt::print(stderr,
               "ridge trace: error: no trace was written. Either the program never initialized CUDA (no GPU work, "
               "or no GPU: check `nvidia-smi`), or it ended without running exit handlers (_exit, SIGKILL).\n");
    return child.exit_code != 0 ? child.exit_code : static_cast<int>(ExitCode::runtime_error);
  }
  const trace::Analysis a = trace::analysis_from_json(j);
  fmt::print(out, "{}", trace::format_analysis(a));
  if (!output.empty())
    fmt::print(out, "\nTrace: {} ({} events; written in {:.2f} s) - open it in https://ui.perfetto.dev\n",
               o.output, j.value("events", 0ull), j.value("write_seconds", 0.0));
  const nlohmann::json stats = j.value("collector_stats", nlohmann::json::object());
  if (stats.value("profiler_gated", false)) {
    const auto windows = stats.value("profiler_windows", std::uint64_t{0});
    if (windows == 0)
      fmt::print(out, "\n--profiler-range: the program never called cudaProfilerStart (torch.cuda.profiler.start()), so "
                      "nothing was recorded.\n");
    else
      fmt::print(out, "\n--profiler-range: recorded inside {} cudaProfilerStart/Stop window(s) only; outside them CUPTI "
                      "recorded launch calls only (switching took {:.2f} ms in all).\n",
                 windows, 1e3 * stats.value("gate_seconds", 0.0));
  }
  if (stats.value("cupti_errors", std::uint64_t{0}) > 0)
    fmt::print(stderr, "ridge trace: warning: {} CUPTI call(s) failed while switching tracing on or off, the last: {}\n",
               stats.value("cupti_errors", std::uint64_t{0}), stats.value("last_cupti_error", std::string()));
  if (j.value("end", std::string()) != "exit")
    fmt::print(out, "The trace was written from a signal handler ({}): it holds what was collected until then.\n",
               j.value("end", std::string("?")));
  if (!output.empty())
    for (const auto& other : sibling_traces(output))
      fmt::print(out, "Another CUDA process started by the program was traced too: {}\n", other);

  j["program"] = {{"command", o.command}, {"exit_code", child.exit_code}, {"signal", child.signal}};
  if (json_to_stdout) std::printf("%s\n", j.dump(2).c_str());
  else if (!o.json.empty()) write_json(o.json, j);
  return child.exit_code;
}

RIDGE_REGISTER_COMMAND(Command{
    "trace",
    "run a CUDA program (C++ or PyTorch, unmodified) under ridge's CUPTI tracer: top kernels, kernels per step, GPU "
    "idle time and why; a Perfetto trace",
    70, [](CLI::App& app) {
      auto o = std::make_shared<TraceOptions>();
      app.footer(
          "Usage: ridge trace [OPTIONS] -- PROGRAM [ARGS...]   or   ridge trace --analyze FILE [OPTIONS]\n"
          "The program runs unchanged; its output and exit code pass through (128+N when killed by signal N). The "
          "trace is written when it exits, also after exit() or a crash/Ctrl-C (best effort), never half-written. "
          "Exit codes of ridge itself: 2 usage error (including program not found), 1 tracing failed. Another CUPTI "
          "client (Nsight, PyTorch's profiler) cannot run in the same program at the same time.");
      app.add_option("-o,--output", o->output, "Chrome/Perfetto trace JSON to write (\"\" = none)")->default_val("runs/trace.json");
      app.add_option("--json", o->json, "write the analysis as JSON to FILE ('-' for stdout)");
      app.add_option("--analyze", o->analyze, "analyze a trace written earlier by ridge trace (or PyTorch's profiler) instead of running a program");
      app.add_option("--skip-seconds", o->skip_seconds, "leave out what began in the first S seconds after CUDA initialization (warm-up)")
          ->default_val(0)->check(CLI::NonNegativeNumber);
      app.add_option("--skip-kernels", o->skip_kernels, "leave out everything launched before the (N+1)-th kernel launch")->default_val(0);
      app.add_option("--nvtx-range", o->nvtx_range, "keep only what was launched inside NVTX ranges with this name");
      app.add_flag("--profiler-range", o->profiler_range,
                   "record only between cudaProfilerStart and cudaProfilerStop calls (torch.cuda.profiler.start()/stop(), "
                   "cuProfilerStart/Stop), any number of times, like nsys --capture-range=cudaProfilerApi: kernel, copy and "
                   "NVTX records are switched on when a start call returns and off when a stop call begins (after waiting "
                   "for the window's kernels), so outside the windows only the launch-call records cost anything (CUPTI "
                   "records them only if they are on from the start). What straddles a boundary is cut by the launch "
                   "call's time (with --analyze: keep only what lies between the calls)");
      app.add_option("--step-range", o->step_range, "NVTX range name that marks one step (e.g. step): kernels and GPU busy time per step");
      app.add_option("--top", o->top, "rows in the top-kernel and top-range tables")->default_val(10)->check(CLI::PositiveNumber);
      app.add_option("--api", o->api,
                     "CUDA API calls to record: selected = launches, copies, memsets, syncs, event records, allocations, "
                     "profiler start/stop, module loads, graph capture (only these are hooked: least overhead); most = all "
                     "but trivial queries; all; none (kernels then have no launch call)")
          ->default_val("selected")->check(CLI::IsMember({"none", "selected", "most", "all"}));
      app.add_flag("--all-api", o->all_api, "same as --api all: every CUDA API call, trivial queries (cudaGetDevice, ...) included; most overhead");
      app.add_flag("--sync", o->sync,
                   "also record CUPTI synchronization records (waits on events and streams, which call waited). Off by "
                   "default: CUPTI then intercepts every CUDA runtime call (cudaGetDevice: +0.18 us on the H200 host), and "
                   "frameworks make such calls constantly. Without it, waits show as cuda*Synchronize API calls");
      app.add_flag("--no-sync", o->no_sync, "do not record synchronization records (the default; kept for old scripts)");
      app.add_flag("--no-nvtx", o->no_nvtx, "do not record NVTX ranges (cannot be combined with --nvtx-range or --step-range)");
      app.add_option("--buffer-mb", o->buffer_mb, "size of each CUPTI activity buffer in MiB (CUPTI takes as many as it needs)")
          ->default_val(32)->check(CLI::Range(1, 1024));
      app.add_option("command", o->command, "the program and its arguments (after --)");
      app.positionals_at_end();
      return std::function<int()>([o] { return run_trace(*o); });
    }});

}  // namespace
}  // namespace ridge::cli
