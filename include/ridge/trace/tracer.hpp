#pragma once
// ridge::Tracer: in-process tracing of CUDA work (CUPTI activity API) and NVTX ranges
// (src/trace/cupti/tracer.cpp, nvtx.cpp). Host-only header: no CUDA or CUPTI types. Link ridge::ridge.
//
//   ridge::Tracer tracer;
//   tracer.start();
//   { ridge::NvtxRange step("step"); run_my_step(); }
//   tracer.stop();                       // synchronizes the device, flushes CUPTI
//   tracer.write("runs/trace.json");     // open in https://ui.perfetto.dev
//   std::puts(ridge::trace::format_analysis(tracer.summary({.step_range = "step"})).c_str());
#include <cstdint>
#include <optional>
#include <string>

#include "ridge/trace/analysis.hpp"
#include "ridge/trace/collection.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/schedule.hpp"
#include "ridge/trace/window.hpp"

namespace ridge {

/// What ridge::Tracer collects: the options of every way of tracing (ridge/trace/collection.hpp),
/// with the defaults for ridge's own few calls (synchronization records on, 8 MiB buffers).
using TracerOptions = trace::CollectionOptions;

/// Traces this process's CUDA activity between start() and stop(): kernels (concurrent kind,
/// which never serializes them), memcpy, memset, runtime and driver calls, synchronization, NVTX
/// ranges and external correlations, all on CUPTI's clock. One tracer may run at a time in a
/// process, and none while another CUPTI client (Nsight Systems/Compute, PyTorch's profiler) is
/// attached: start() then throws ridge::Error saying so (ridge::NoGpuError when no GPU is usable).
class Tracer {
 public:
  explicit Tracer(TracerOptions options = {});
  ~Tracer();  ///< stops a running trace (errors swallowed)
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /// Begins recording. Throws Error when CUPTI cannot start (another subscriber, no CUPTI).
  void start();
  /// Synchronizes the current device (when a GPU is present), stops recording, flushes every
  /// CUPTI buffer and makes the events available. Events of a previous start/stop are replaced.
  void stop();
  bool running() const { return running_; }

  /// The events recorded by the last start/stop (finalized: sorted, nesting computed).
  const trace::Trace& events() const { return trace_; }
  /// Writes the trace atomically: Chrome/Perfetto JSON, or Perfetto's protobuf format when the
  /// name ends in .pftrace (trace::write_trace(events(), path, format) to choose otherwise).
  void write(const std::string& path) const;
  /// Top kernels, GPU busy and idle, launch latency, steps: see trace::analyze. `window` (e.g. the
  /// steady state from the first step on) limits what is analysed; its description is in the result.
  trace::Analysis summary(const trace::AnalysisOptions& options = {}, const trace::Window& window = {}) const;
  /// Records CUPTI dropped for lack of buffer space during the last trace (reported, never hidden).
  std::uint64_t dropped_records() const { return trace_.dropped_records; }

 private:
  TracerOptions options_;
  trace::Trace trace_;
  bool running_ = false;
};

/// RAII NVTX range: pushed on construction, popped on destruction (NVTX v3, header-only from the
/// CUDA toolkit). Costs a few nanoseconds when no tool listens.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

/// An instantaneous NVTX marker.
void nvtx_mark(const char* name);

/// Routes this process's NVTX calls to CUPTI by setting NVTX_INJECTION64_PATH to the loaded CUPTI
/// library, unless it is already set. NVTX reads the variable at the process's first NVTX call,
/// so this must run before it; Tracer::start() calls it. Returns false if CUPTI's path is unknown.
bool enable_nvtx_capture();

/// Throws CountersUnavailableError when this process may not read GPU `device`'s hardware
/// counters (ERR_NVGPUCTRPERM, a virtualized or MIG GPU), saying why and what to do; NoGpuError
/// when there is no such GPU. `ridge trace --counters` asks before it runs the program.
void require_counters_permitted(int device = 0);

/// The CUPTI chip name of GPU `device` ("GH100"), for counter_pass_plan. Needs the driver.
std::string counter_chip(int device = 0);
/// The pass plan of `options`' metrics on `chip`, from CUPTI's Profiler Host API: which metrics
/// the chip offers, how many passes they take and how they group. Needs no GPU; throws
/// ridge::Error when CUPTI does not know the chip or a raw metric.
trace::CounterPassPlan counter_pass_plan(const trace::CounterOptions& options, const std::string& chip);

}  // namespace ridge
