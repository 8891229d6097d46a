#pragma once
// A CUDA workload whose trace is known in advance: the tracer's GPU tests check counts, names,
// durations, streams and ordering against these numbers.
namespace trace_workload {

inline constexpr int steps = 3;                 ///< NVTX ranges named "step"
inline constexpr int busy_per_step = 2;         ///< busy-wait kernels per step, on stream A
inline constexpr double busy_ns = 200000;       ///< each busy-waits 200 us on the GPU's timer
inline constexpr int adds_per_step = 3;         ///< target_add_one kernels per step, on stream B
inline constexpr int kernels_per_step = busy_per_step + adds_per_step;
inline constexpr int total_kernels = steps * kernels_per_step;
inline constexpr int elements = 1 << 20;        ///< floats copied HtoD once and DtoH once
inline constexpr const char* step_range = "step";
inline constexpr const char* add_kernel_name = "target_add_one";
inline constexpr const char* busy_kernel_name = "busy_wait_kernel";

/// Runs the workload; returns the number of wrong output elements (0 = correct).
/// Throws ridge::Error on CUDA failures.
int run();

/// `trace_target --profiler-windows`: kernels before, inside and after two cudaProfilerStart/Stop
/// windows, for `ridge trace --profiler-range` (only the windows' kernels may be in the trace).
namespace profiler_windows {
inline constexpr int before = 7;          ///< outside_window_kernel, before any start call
inline constexpr int window1 = 5;         ///< inside_window_kernel between cudaProfilerStart and Stop
inline constexpr int between = 11;        ///< outside, between the windows (after a stray extra stop)
inline constexpr int window2 = 3;         ///< inside, between cuProfilerStart and Stop (driver API)
inline constexpr int after = 13;          ///< outside, after the last stop
inline constexpr double window2_spin_ns = 2e6;  ///< window 2's kernels still run when its stop is called
inline constexpr int inside = window1 + window2;
inline constexpr int outside = before + between + after;
inline constexpr int starts = 3;          ///< profiler start calls (one of them while already started)
inline constexpr int stops = 3;           ///< profiler stop calls (one of them while already stopped)
inline constexpr const char* inside_kernel_name = "inside_window_kernel";
inline constexpr const char* outside_kernel_name = "outside_window_kernel";
inline constexpr const char* window_range = "window";  ///< NVTX range around window 1's kernels
}  // namespace profiler_windows

/// `trace_target --numbered-steps N` and the in-process schedule test: N steps, each an NVTX range
/// "step" (step_range) launching kernels_per_step empty step_kernel's whose grid is step + 1
/// blocks, so each kernel in a trace tells which step launched it. Returns 0; throws ridge::Error.
namespace numbered_steps {
inline constexpr int kernels_per_step = 2;
inline constexpr const char* kernel_name = "numbered_step_kernel";
int run(int steps);
}  // namespace numbered_steps

/// `trace_target --identical-steps N`: N steps, each an NVTX range "step" launching the same
/// copy_kernels_per_step identical_copy kernels (y = x over `floats` floats, 256-thread blocks:
/// 4 B read and 4 B written per float through DRAM, the arrays being 16x an H100's L2) and
/// synchronizing. A step replay's passes see the same launches. Returns 0; throws ridge::Error.
namespace identical_steps {
inline constexpr int copy_kernels_per_step = 2;
inline constexpr long floats = 1L << 28;
inline constexpr const char* kernel_name = "identical_copy";
int run(int steps);
}  // namespace identical_steps

}  // namespace trace_workload
