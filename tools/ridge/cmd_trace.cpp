// ridge trace: run an unmodified program with ridge's CUPTI injection library, pass its output
// and exit code through, and summarize what its GPU did; or analyze a saved trace.
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "cli.hpp"
#include "trace_counters_output.hpp"
#include "schedule_syntax.hpp"
#include "ridge/catalog.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/launch.hpp"
#include "ridge/trace/ranks.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {
namespace {

struct TraceCommand {
  trace::ProgramTraceOptions options;  // the library's defaults are the command's
  std::string json;
  std::vector<std::string> analyze;
  std::vector<std::string> merge;
  bool output_given = false;
  std::string api_calls = trace::to_string(trace::CollectionOptions::for_program().api_calls);
  std::size_t buffer_mb = trace::CollectionOptions::for_program().buffer_bytes >> 20;
  bool all_api = false;
  bool no_sync = false;  // the default since sync records became opt-in; accepted for old scripts
  bool no_nvtx = false;
  bool steady_state = false;
  CounterFlags counters;
  std::string schedule;  // "wait=9,active=1", "" = record everything
};

/// Several rank traces, or one merged trace: communication against computation per rank, slowest rank per step.
int analyze_ranks(const TraceCommand& c, std::FILE* out) {
  if (!c.options.window.empty())
    throw UsageError("--skip-seconds, --skip-kernels, --nvtx-range and --profiler-range apply to one trace: analyze "
                     "the rank files one at a time to window them");
  const trace::RankAnalysis a = trace::analyze_ranks(trace::load_rank_traces(c.analyze), c.options.analysis.step_range);
  fmt::print(out, "{}", trace::format_rank_analysis(a));
  if (!c.json.empty()) write_json(c.json, trace::to_json(a));
  return 0;
}

int merge_files(const TraceCommand& c, std::FILE* out) {
  if (!c.options.command.empty() || !c.analyze.empty())
    throw UsageError("--merge reads saved rank traces: give it alone, not with --analyze or -- COMMAND");
  const std::string output = c.output_given ? c.options.output : trace::merged_trace_path(c.merge.front());
  if (output.empty()) throw UsageError("--merge needs somewhere to write: give -o FILE");
  const trace::MergeResult m = trace::merge_rank_trace_files(c.merge, output);
  fmt::print(out, "{}", trace::format_merge_result(m, output));
  for (const auto& note : m.notes) fmt::print(stderr, "ridge trace: note: {}\n", note);
  return 0;
}

int analyze_file(const TraceCommand& c, std::FILE* out) {
  if (!c.options.command.empty())
    throw UsageError("--analyze reads a saved trace: give either --analyze FILE or -- COMMAND, not both");
  if (c.analyze.size() > 1 || trace::is_merged_trace_file(c.analyze.front())) return analyze_ranks(c, out);
  const trace::TraceFileAnalysis f = trace::analyze_trace_file(c.analyze.front(), c.options.window, c.options.analysis);
  fmt::print(out, "{}: {}\n", f.file, f.command.empty() ? std::string("(command not recorded)") : f.command);
  fmt::print(out, "{}", trace::format_analysis(f.analysis));
  const auto roofline = print_counter_roofline(c.analyze.front(), c.counters.output(c.options.analysis.step_range), out);
  if (!c.json.empty()) {
    nlohmann::json j = trace::to_json(f);
    if (roofline) j["counter_roofline"] = trace::to_json(*roofline);
    write_json(c.json, j);
  }
  return 0;
}

int run_trace(TraceCommand c) {
  const bool json_to_stdout = c.json == "-";
  std::FILE* out = json_to_stdout ? stderr : stdout;
  trace::ProgramTraceOptions& o = c.options;
  trace::CollectionOptions& collect = o.collection;
  collect.api_calls = c.all_api ? trace::ApiCalls::all : trace::api_calls_from_string(c.api_calls);
  collect.synchronization = collect.synchronization && !c.no_sync;
  collect.nvtx = !c.no_nvtx;
  collect.buffer_bytes = c.buffer_mb << 20;
  if (c.steady_state) {
    if (o.analysis.step_range.empty())
      throw UsageError("--steady-state starts at the first step: name the step's NVTX range with --step-range NAME");
    o.window.from_range = o.analysis.step_range;
  }
  collect.counters = counter_options(c.counters, o.analysis.step_range);  // --step-range marks the steps of both
  if (!c.schedule.empty()) {
    if (o.analysis.step_range.empty())
      throw UsageError("--schedule counts steps by the pushes of an NVTX range: name it with --step-range NAME");
    collect.schedule = parse_schedule(c.schedule);
  }
  o.validate();  // also before --analyze: the flags contradict each other either way
  if (!c.counters.plan.empty()) return print_counter_plan(collect.counters, c.counters.plan, out);
  if (!c.merge.empty()) return merge_files(c, out);
  if (!c.analyze.empty()) return analyze_file(c, out);
  if (o.command.empty())
    throw UsageError("nothing to trace: give the program after --, e.g. `ridge trace -- python3 train.py`, or "
                     "--analyze FILE");

  if (collect.counters) print_counter_plan_before_the_run(*collect.counters, out);
  const trace::ProgramTrace t = trace::trace_program(o);
  std::fflush(stdout);
  fmt::print(out, "\n");
  fmt::print(out, "ridge trace: {} {}\n", o.command.front(),
             t.program.signal != 0 ? fmt::format("was killed by signal {} ({})", t.program.signal, strsignal(t.program.signal))
                                   : fmt::format("exited with code {}", t.program.exit_code));
  for (const auto& note : t.notes) fmt::print(stderr, "ridge trace: {}\n", note);
  if (!t.error.empty()) {
    fmt::print(stderr, "ridge trace: error: {}\n", t.error);
    // The program ran but nothing was traced: on a machine without a usable GPU that is why.
    if (t.program.exit_code == 0 && t.program.signal == 0)
      if (const std::string reason = no_gpu_reason(); !reason.empty())
        throw NoGpuError("nothing could be traced: no CUDA GPU is usable here: " + reason);
    return t.exit_code();
  }
  fmt::print(out, "{}", trace::format_analysis(t.analysis));
  if (collect.counters && !t.trace_file.empty()) print_counter_roofline(t.trace_file, c.counters.output(o.analysis.step_range), out);
  fmt::print(out, "{}", t.collection_text());
  if (!t.merged_trace.empty())
    fmt::print(out, "Compare the ranks: ridge trace --analyze {} --step-range NAME\n", t.merged_trace);
  if (t.cupti_errors > 0)
    fmt::print(stderr, "ridge trace: warning: {} CUPTI call(s) failed while switching tracing on or off, the last: {}\n",
               t.cupti_errors, t.last_cupti_error);
  if (json_to_stdout) std::printf("%s\n", t.summary.dump(2).c_str());
  else if (!c.json.empty()) write_json(c.json, t.summary);  // only after the run: never a half-made file
  return t.exit_code();
}

RIDGE_REGISTER_COMMAND(Command{
    "trace",
    "run a CUDA program (C++ or PyTorch, unmodified) under ridge's CUPTI tracer: top kernels, kernels per step, GPU "
    "idle time and why; a Perfetto trace",
    70, [](CLI::App& app) {
      auto c = std::make_shared<TraceCommand>();
      trace::ProgramTraceOptions& o = c->options;
      app.footer(
          "Usage: ridge trace [OPTIONS] -- PROGRAM [ARGS...]   or   ridge trace --analyze FILE [OPTIONS]\n"
          "The program runs unchanged; its output and exit code pass through (128+N when killed by signal N). The "
          "trace is written when it exits, also after exit() from any thread or a crash/Ctrl-C (best effort), never "
          "half-written. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to ridge are passed on to the program. "
          "Exit codes of ridge itself: 2 usage error (including program not found), 1 tracing failed. Another CUPTI "
          "client (Nsight, PyTorch's profiler) cannot run in the same program at the same time.");
      app.add_option("-o,--output", o.output, "trace to write: Chrome/Perfetto JSON, or Perfetto's protobuf format for a name ending in .pftrace (\"\" = none)")->default_val("runs/trace.json");
      app.add_option("--json", c->json, "write the analysis as JSON to FILE ('-' for stdout)");
      auto* output = app.get_option("--output");
      app.add_option("--analyze", c->analyze,
                     "analyze a trace written earlier by ridge trace (or PyTorch's profiler) instead of running a program; "
                     "several rank traces, or one merged trace: communication (NCCL kernels) against computation per "
                     "rank, their overlap, and with --step-range the slowest rank of each step");
      app.add_option("--merge", c->merge,
                     "merge rank traces (trace.rank*.json, each with distributedInfo) into one Perfetto trace with one "
                     "process track per rank, written to -o (default: <stem>.merged.json beside the first)");
      app.add_option("--merge-timeout", o.merge_timeout_seconds,
                     "in a job of several ranks (mpirun, srun, torchrun), rank 0 waits up to S seconds for the other "
                     "ranks' trace files and merges them into <stem>.merged.json; 0 = no automatic merge")
          ->default_val(60)->check(CLI::NonNegativeNumber);
      app.add_option("--merged-output", o.merged_output, "where the automatic merge writes (default: <stem>.merged.json beside -o)");
      app.add_option("--skip-seconds", o.window.skip_seconds, "leave out what began in the first S seconds after CUDA initialization (with --analyze: after "
                     "the saved trace's start): start-up and warm-up")
          ->default_val(0)->check(CLI::NonNegativeNumber);
      app.add_option("--skip-kernels", o.window.skip_kernels, "leave out everything launched before the (N+1)-th kernel launch")->default_val(0);
      app.add_option("--nvtx-range", o.window.nvtx_range, "keep only what was launched inside NVTX ranges with this name");
      app.add_flag("--profiler-range", o.window.profiler_range,
                   "record only between cudaProfilerStart and cudaProfilerStop calls (torch.cuda.profiler.start()/stop(), "
                   "cuProfilerStart/Stop), any number of times, like nsys --capture-range=cudaProfilerApi: kernel, copy and "
                   "NVTX records are switched on when a start call returns and off when a stop call begins (after waiting "
                   "for the window's kernels), so outside the windows only the launch-call records cost anything (CUPTI "
                   "records them only if they are on from the start). What straddles a boundary is cut by the launch "
                   "call's time (with --analyze: keep only what lies between the calls)");
      app.add_option("--step-range", o.analysis.step_range,
                     "NVTX range name that marks one step (e.g. step): per step, kernels, host range, GPU span (first "
                     "kernel start to last kernel end) and GPU busy time");
      app.add_flag("--steady-state", c->steady_state,
                   "leave start-up out: keep only what began from the first --step-range range on (weight loading, "
                   "compilation and warm-up before it would otherwise count as the GPU waiting on the host)");
      app.add_option("--top", o.analysis.top, "rows in the top-kernel and top-range tables")->default_val(10)->check(CLI::PositiveNumber);
      app.add_option("--api", c->api_calls,
                     "CUDA API calls to record: selected = launches, copies, memsets, syncs, event records, allocations, "
                     "profiler start/stop, module loads, graph capture (only these are hooked: least overhead); most = all "
                     "but trivial queries; all; none (kernels then have no launch call)")
          ->capture_default_str()->check(CLI::IsMember({"none", "selected", "most", "all"}));
      app.add_flag("--all-api", c->all_api, "same as --api all: every CUDA API call, trivial queries (cudaGetDevice, ...) included; most overhead");
      app.add_flag("--sync", o.collection.synchronization,
                   "also record CUPTI synchronization records (waits on events and streams, which call waited). Off by "
                   "default: CUPTI then intercepts every CUDA runtime call (cudaGetDevice: +0.18 us on the H200 host), and "
                   "frameworks make such calls constantly. Without it, waits show as cuda*Synchronize API calls");
      app.add_flag("--no-sync", c->no_sync, "do not record synchronization records (the default; kept for old scripts)");
      app.add_flag("--no-nvtx", c->no_nvtx, "do not record NVTX ranges (cannot be combined with --nvtx-range or --step-range)");
      app.add_option("--buffer-mb", c->buffer_mb, "size of each CUPTI activity buffer in MiB (CUPTI takes as many as it needs)")
          ->capture_default_str()
          ->check(CLI::Range(trace::CollectionOptions::min_buffer_bytes >> 20, trace::CollectionOptions::max_buffer_bytes >> 20));
      add_counter_flags(app, c->counters);
      app.add_option("--schedule", c->schedule,
                     "record only some steps (counted by the --step-range NVTX range), like torch.profiler's schedule: "
                     "KEY=N,... with skip_first (steps left out first), then cycles of wait (collection off), warmup "
                     "(collected, dropped) and active (recorded) steps, repeated repeat times (0 = to the end). "
                     "Defaults skip_first=0,wait=0,warmup=0,active=1,repeat=0; e.g. wait=9,active=1 records 1 step in 10");
      app.add_option("command", o.command, "the program and its arguments (after --)");
      app.positionals_at_end();
      return std::function<int()>([c, output] {
        c->output_given = output->count() > 0;
        return run_trace(*c);
      });
    },
    {{"nvtx", "--no-nvtx"}, {"merge_timeout_seconds", "--merge-timeout"}, {"from_range", "--steady-state"}}});

}  // namespace
}  // namespace ridge::cli
