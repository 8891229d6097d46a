#pragma once
// The whole trace feature in one include; each part has its own header under ridge/trace/.
#include "ridge/trace/analysis.hpp"     // analyze: top kernels, busy and idle, launch latency, steps
#include "ridge/trace/chrome_json.hpp"  // Chrome/Perfetto JSON, written and read
#include "ridge/trace/events.hpp"       // the event model: Trace, Kernel, ApiCall, NvtxRange, ...
#include "ridge/trace/launch.hpp"       // trace_program: `ridge trace -- CMD`
#include "ridge/trace/perfetto.hpp"     // Perfetto's protobuf format (.pftrace), written and read
#include "ridge/trace/ranks.hpp"        // multi-rank traces: rank files, merge, analysis across ranks
#include "ridge/trace/schedule.hpp"     // TraceSchedule: record some steps (wait, warmup, active, repeat)
#include "ridge/trace/trace_file.hpp"   // write_trace, load_trace: either format
#include "ridge/trace/tracer.hpp"       // ridge::Tracer, NvtxRange: tracing this process
#include "ridge/trace/what_if.hpp"      // kernel_what_if: Amdahl fed from a trace
#include "ridge/trace/window.hpp"       // Window, apply_window: warm-up left out
