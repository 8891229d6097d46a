#pragma once
// `ridge profile` as a library call: traces one GPT-2 decode step launched eagerly and one
// replayed as a CUDA graph with ridge's CUPTI tracer, writes both as Chrome/Perfetto traces and
// returns their analysis (top kernels and operators, kernel count, GPU busy, launch gaps).
#include <optional>
#include <string>
#include <vector>

#include "ridge/dtype.hpp"
#include "ridge/gpt2/model.hpp"
#include "ridge/result.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/counters.hpp"

namespace ridge::gpt2 {

struct ProfileOptions {
  int device = 0;
  std::string model = "small";             ///< preset: tiny, small, medium, large, xl
  DType dtype = DType::bf16;               ///< weights: fp32 or bf16
  int batch = 1;                           ///< sequences decoded together
  int context = 128;                       ///< tokens per sequence after the step (context-1 cached)
  StepKernel kernel = StepKernel::automatic;
  std::string trace_path = "runs/trace.json";  ///< the eager step's trace; the graph's gets "-graph"
  int top = 8;                             ///< kernels and operators listed per mode
  /// Also read the hardware counters of one eager step (its kernels replayed) for the measured
  /// roofline; where counters may not be read, ProfileRun::counters_note says why instead.
  bool counters = false;

  /// Throws UsageError for an unknown preset, a dtype other than fp32/bf16, batch < 1, a context
  /// outside [1, the preset's positions], or top < 1. Needs no GPU.
  void validate() const;
};

/// "runs/trace.json" -> "runs/trace-graph.json": where the graph replay's trace goes.
std::string graph_trace_path(const std::string& eager_trace_path);

/// One traced step.
struct ModeProfile {
  Mode mode = Mode::eager;
  trace::Analysis analysis;  ///< of the step's window ("step" NVTX range) only
  std::string trace_path;    ///< the Chrome/Perfetto trace written for it
  /// Idle time between the step's kernels over its kernel span (0 with no span): the launch gaps.
  double launch_gap_fraction() const;
};

struct ProfileRun {
  std::string model;
  DType dtype = DType::bf16;
  int batch = 1, context = 1;
  StepKernel kernel = StepKernel::chain;  ///< resolved
  std::vector<ModeProfile> profiles;      ///< eager, then graph
  /// With ProfileOptions::counters: the measured roofline of the eager step's kernels (against the
  /// GPU's cached measured ceilings, else its datasheet's), what the step moved and computed by
  /// its counters, and what the model states it must (gpt2::step_cost).
  std::optional<trace::CounterRoofline> measured_roofline;
  double measured_dram_bytes = 0, measured_flops = 0;
  double stated_bytes = 0, stated_flops = 0;
  std::string counters_note;  ///< why there is no measured roofline, or where its ceilings come from
  /// One "profile.decode_step" record per mode (method cupti_trace, the kernel span as its sample;
  /// extra: analysis, trace_path).
  std::vector<Record> records;
};

/// Warms up, then traces four steps per mode and keeps the last (three warm-up steps absorb
/// CUPTI's one-time costs). Validates first (UsageError), then needs a GPU (NoGpuError). Throws
/// Error when the tracer cannot see the step's NVTX range.
ProfileRun run_profile(const ProfileOptions& options);

}  // namespace ridge::gpt2
