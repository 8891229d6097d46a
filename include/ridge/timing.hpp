#pragma once
// The three-clocks timing exercise (`ridge timing`) as one call: one matmul timed by an
// unsynchronized wall clock, a synchronized wall clock and CUDA events, with the impossible reading
// flagged; then a small matmul where per-sample events carry the host's launch latency, against a
// spin-held stream and CUDA-graph replay. (Implementation: src/measure/timing_demo.cpp for the
// analysis, src/measure/cuda/timing_demo.cpp for the run.)
#include <functional>
#include <string>
#include <vector>

#include "ridge/clocks.hpp"
#include "ridge/dtype.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Options of run_timing_demo, with the defaults of `ridge timing`.
struct TimingDemoOptions {
  int device = 0;
  long n = 4096;                     ///< the large case: n x n x n
  std::string dtype = "fp32";        ///< the large case's dtype
  std::string backend = "cublaslt";  ///< cublaslt, or cublas (the call PyTorch's a @ b makes)
  long small_n = 256;                ///< the small, launch-bound case
  std::string small_dtype = "bf16";
  int samples = 20;  ///< per method (the small case takes at least 50)
  int warmup = 5;
  int repeats = 1;  ///< calls per event pair in the large case (measure_cuda's `repeats`)
  /// Testing aid, never set for a real measurement: a GPU busy-wait of this many microseconds after
  /// every call of the large matmul, so a regression check (`ridge compare`) can be shown to flag a
  /// real slowdown. Every record of a slowed run carries a warning saying so.
  double inject_slowdown_us = 0;

  /// Throws UsageError naming the bad option (no GPU needed).
  void validate() const;
};

/// One timing method's reading and what it means.
struct TimedMethod {
  Record record;
  std::string meaning;  ///< e.g. "GPU clock between two events: the kernel's time"
  RowClocks clocks;     ///< the SM clock of each sample (unknown without NVML)
};

/// One matmul and the methods that timed it.
struct TimingCase {
  GemmShape shape;
  DType dtype = DType::fp32;
  std::string algorithm;  ///< cuBLASLt's description
  std::string check;      ///< the output check's summary
  double flops = 0;       ///< per call
  /// Timed interleaved (one sample of each method in turn), so a clock change hits all alike.
  std::vector<TimedMethod> methods;
  /// What the clocks say about the table: that its rows ran at different SM clocks (see
  /// clock_spread_finding), and which rows were measured at reduced clocks.
  std::vector<std::string> clock_findings;
  /// The reading of `method`, or nullptr.
  const Record* find(Method method) const;
};

struct TimingDemo {
  TimingDemoOptions options;
  double rated_sm_mhz = 0;  ///< the device's rated SM clock (0: unknown); reduced clocks are judged against it
  /// The large case: wall_naive, wall_sync, cuda_events, in that order.
  TimingCase large;
  double naive_flops_per_s = 0;             ///< the rate the unsynchronized reading implies
  double impossible_above_flops_per_s = 0;  ///< the fastest known GPU's peak for the dtype
  bool naive_impossible = false;            ///< the naive rate beats every GPU: physically impossible
  double wall_over_naive = 0;               ///< synchronized / unsynchronized medians
  double wall_vs_events_relative_difference = 0;  ///< |wall - events| / events
  /// The small case: cuda_events, spin_hold, graph_replay, in that order.
  TimingCase small;
  double launch_overhead_ms = 0;       ///< per-sample events minus the faster launch-free method
  double events_over_launch_free = 0;  ///< their ratio

  /// Every record, large case first.
  std::vector<Record> records() const;
};

/// Runs the exercise on options.device: both matmuls are checked against an fp64 reference
/// first. `on_status` gets a short line before each stage (empty: done). Throws UsageError (before
/// touching the GPU), NoGpuError, VerificationError when a GEMM is wrong.
TimingDemo run_timing_demo(const TimingDemoOptions& options,
                           const std::function<void(const std::string&)>& on_status = {});

/// The CPU part: given the six readings in the cases, flags the impossible one, adds the warnings
/// and derived values to the records, fills the comparisons, and judges the clocks: each row's
/// median SM clock and reduced-clock samples (from the records' extra.sample_sm_mhz, against
/// `rated_sm_mhz`) and each table's clock findings. Unit-tested without a GPU.
void analyze_timing_demo(TimingDemo& demo);

}  // namespace ridge
