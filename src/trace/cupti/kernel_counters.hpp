#pragma once
// Hardware counters per kernel launch through CUPTI's range profiler (auto range, kernel replay):
// CUPTI replays each profiled kernel once per pass, saving and restoring the memory it writes, and
// the launch returns when every pass is done. The collector's launch and NVTX callbacks drive it.
#include <cupti.h>

#include "ridge/trace/counters.hpp"

namespace ridge::detail {

/// Checks the options and resolves the metrics; the CUPTI profiler itself starts at the first
/// launch (it needs a context). Throws UsageError for bad options.
void counters_begin(const trace::CounterOptions& options);
bool counters_enabled();
/// A kernel launch call (enter or exit). Never throws: a failure stops collection and is kept in
/// KernelCounters::error.
void counters_on_launch(const CUpti_CallbackData& info, std::uint32_t cbid);
/// A runtime kernel launch call (enter or exit): its kernel carries the runtime call's correlation id.
void counters_on_runtime_launch(const CUpti_CallbackData& info);
/// A graph launch call: its kernels are not profiled (kernel replay does not reach into graphs).
void counters_on_graph_launch(const CUpti_CallbackData& info);
/// Step `step` begins (the collector's StepCounter counted a push of the step range): launches are
/// profiled inside the options' step window only.
void counters_on_step(std::uint64_t step);
/// A context is being destroyed: what it profiled is decoded first.
void counters_on_context_destroy(CUcontext context);
/// Decodes what is pending, disables the profiler (not when the process is exiting) and returns
/// everything collected.
trace::KernelCounters counters_end(bool process_exiting = false);

/// Called once, right after CUPTI's profiler is initialized in this process (the injection library
/// registers its exit watch there, so that it runs before any exit handler CUPTI registered).
void counters_on_profiler_initialized(void (*hook)());

/// Throws CountersUnavailableError when this process may not read the GPU's counters (not
/// permitted, a virtualized or MIG device), saying what to do. Needs a CUDA context on `device`.
void require_counters_permitted(int device);

}  // namespace ridge::detail
