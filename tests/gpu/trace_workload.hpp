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

}  // namespace trace_workload
