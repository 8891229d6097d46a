#pragma once
// Tracing an unmodified program under the injection library, `ridge trace -- CMD` (src/trace/launch.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/trace/analysis.hpp"
#include "ridge/trace/collection.hpp"
#include "ridge/trace/schedule.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/window.hpp"

namespace ridge::trace {

/// How trace_program runs a program under the injection library (libridge_inject.so), which the
/// CUDA driver loads into it: the program itself is not changed.
struct ProgramTraceOptions {
  std::vector<std::string> command;        ///< the program (a path, or a name looked up in PATH) and its arguments
  std::string output = "runs/trace.json";  ///< Chrome/Perfetto trace the program writes when it ends ("" = none)
  Window window;        ///< what the trace and analysis keep (e.g. warm-up left out); profiler_range also
                        ///< switches CUPTI's kernel, copy and NVTX records off outside the windows
  AnalysisOptions analysis;       ///< rows of the top tables, the NVTX range marking a step
  /// What is collected: API calls, NVTX, buffers, hardware counters, a schedule (whole-program
  /// defaults). Counters or a schedule without their own step range use analysis.step_range.
  CollectionOptions collection = CollectionOptions::for_program();
  /// Inside a job of several ranks, rank 0 waits this long for the other ranks' files and merges
  /// them (ridge/trace/ranks.hpp); 0 = no automatic merge.
  double merge_timeout_seconds = 60;
  std::string merged_output;      ///< the merged trace ("" = <stem>.merged<ext> beside the output)
  /// The injection library; "" = $RIDGE_INJECT_LIBRARY, else ../lib or the folder of the running executable.
  std::string inject_library;

  /// Throws UsageError for contradictory or out-of-range options (before anything runs).
  void validate() const;
};

/// How the traced program ended.
struct ProgramExit {
  int exit_code = 0;  ///< its exit code, or 128 + signal when a signal killed it
  int signal = 0;     ///< the signal that killed it, 0 when it exited
  /// The signal `ridge trace` received and passed on to the program (SIGINT, SIGTERM, SIGHUP,
  /// SIGQUIT sent to ridge), 0 when none. The program may have handled it and exited normally.
  int forwarded_signal = 0;
};

/// What trace_program found.
struct ProgramTrace {
  std::vector<std::string> command;
  ProgramExit program;
  /// Why there is no analysis: tracing failed inside the program, or no trace was written. "" = traced.
  std::string error;
  Analysis analysis;  ///< the program's trace analysed (dropped-record counts included); empty on error
  std::string trace_file;  ///< the Chrome trace written, as given in the options ("" = none asked)
  std::uint64_t events = 0;  ///< events in the trace file
  double write_seconds = 0;  ///< time the program spent writing it, in seconds
  std::string end;           ///< when the trace was written: "exit", or "signal"/"crash" (from a signal handler)
  int end_signal = 0;        ///< the signal whose handler wrote the trace (end "signal"/"crash"), else 0
  // How collection went (CUPTI's own counters).
  bool profiler_gated = false;        ///< collection was switched on and off at cudaProfilerStart/Stop
  std::uint64_t profiler_windows = 0; ///< cudaProfilerStart/Stop windows seen
  double gate_seconds = 0;            ///< time spent switching CUPTI on and off, in seconds
  std::uint64_t cupti_errors = 0;     ///< CUPTI calls that failed while switching
  std::string last_cupti_error;
  bool scheduled = false;             ///< collection followed options.schedule
  std::uint64_t steps_seen = 0;       ///< steps the program began (pushes of the step range)
  std::uint64_t steps_recorded = 0;   ///< of them, recorded (the schedule's active steps)
  /// Traces written by further CUDA processes the program started (<stem>.pid<N><ext>, and
  /// <stem>.rank<R><ext> when the program is a launcher such as mpirun).
  std::vector<std::string> other_traces;
  DistributedInfo distributed;  ///< this process's rank when run under a launcher (rank -1 otherwise)
  std::string merged_trace;     ///< the merged trace of all ranks written at the end ("" = none)
  /// Things worth saying that are not errors (e.g. an unreadable summary file).
  std::vector<std::string> notes;
  /// The program's summary as it wrote it, with "program": {command, exit_code, signal,
  /// forwarded_signal} added.
  nlohmann::json summary;

  /// What `ridge trace` exits with: the program's code; when tracing failed, that code if it is
  /// non-zero, else 1 (runtime error).
  int exit_code() const;
  /// What the collection says beyond the analysis, one paragraph each: where the trace went, the
  /// profiler windows or the schedule's steps, how it ended, other processes and ranks traced.
  /// CUPTI errors are not in it (a warning: cupti_errors, last_cupti_error).
  std::string collection_text() const;
};

/// Runs `options.command` with the injection library, its standard streams and Ctrl-C shared with
/// the caller, waits for it and reads the analysis it wrote. SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// sent to the caller meanwhile are passed on to the program (to its process group when it leads
/// one; a Ctrl-C typed at the terminal reaches it directly), whose injection library then writes
/// what it collected; ProgramExit::forwarded_signal and a note say so. Throws UsageError for bad options or a
/// program that cannot be found or run, Error when the injection library is missing. A program that
/// runs but leaves no trace is not an exception: see ProgramTrace::error.
ProgramTrace trace_program(const ProgramTraceOptions& options);

}  // namespace ridge::trace
