#pragma once
// `ridge decode` as a library call: GPT-2 decode steps per batch and context, each configuration
// checked against the CPU reference before it is timed (eager with per-step events, eager with the
// queue held by a spin kernel, and replayed as a CUDA graph), with bytes, intensity, tokens/s and
// the share of decode_ceiling it reaches.
//
//   gpt2::DecodeOptions o;
//   o.batches = {1, 8};
//   gpt2::DecodeRun run = gpt2::run_decode(o);     // throws VerificationError on wrong logits
//   for (const Record& r : run.records) ...        // "decode" records (and "decode.check_logits")
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ridge/ceilings.hpp"
#include "ridge/dtype.hpp"
#include "ridge/gpt2/checks.hpp"
#include "ridge/gpt2/config.hpp"
#include "ridge/gpt2/model.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"

namespace ridge::gpt2 {

/// What to run. Defaults: GPT-2 small, bf16, batch 1, context 1024, eager and graph, 20 samples.
struct DecodeOptions {
  int device = 0;
  std::string model = "small";        ///< preset (tiny, small, medium, large, xl); ignored with `weights`
  DType dtype = DType::bf16;          ///< weights and KV cache: fp32 or bf16 (fp32 accumulation either way)
  std::vector<int> batches{1};        ///< sequences per step, one configuration each
  std::vector<int> contexts{1024};    ///< tokens per sequence after the step (context-1 cached + 1 new)
  std::vector<Mode> modes{Mode::eager, Mode::graph};
  GemmPath gemm = GemmPath::automatic;
  StepKernel kernel = StepKernel::automatic;
  bool pdl = true;                    ///< programmatic dependent launch (see DecoderOptions::pdl)
  bool l2_prefetch = false;           ///< barrier kernel only: see DecoderOptions::l2_prefetch
  /// Barrier kernel only: write the last timed step's per-block phase timeline here (JSON, read by
  /// bench/fused_timeline.py). Needs one batch and one context. Empty: not recorded.
  std::string timeline_path;
  std::string weights;                ///< safetensors file with GPT-2 weights; empty: random weights from `seed`
  int heads = 0;                      ///< attention heads for `weights`; 0: width/64
  std::string check_logits;           ///< reference file (bench/gpt2_export.py); empty: no reference-file check
  std::uint64_t seed = 1;             ///< of the random weights and cache contents
  int samples = 20;                   ///< timed samples per method (median reported)
  int warmup = 5;                     ///< untimed steps before sampling
  double bandwidth_bytes_per_s = 0;   ///< HBM bandwidth for decode_ceiling (bytes/s); 0: the measured ceiling

  /// Throws UsageError naming the bad field: dtype other than fp32/bf16, an empty or non-positive
  /// batch or context list, no modes, samples < 1, warmup < 0, negative bandwidth, a context beyond
  /// the preset's positions, an unknown preset, a weights or reference file that does not exist, or
  /// a timeline with more than one configuration. Needs no GPU.
  void validate() const;
  /// A short run for `ridge report`: small bf16, batch 1 and 8, context 1024, both modes, 10 samples.
  static DecodeOptions quick(int device);
};

/// Parses "1,8,64" into positive integers (at most 2^20 each). Throws UsageError naming `what`
/// and the bad item.
std::vector<int> parse_positive_ints(const std::string& text, const std::string& what);
/// Parses "eager,graph" (either or both). Throws UsageError for an unknown mode or an empty list.
std::vector<Mode> parse_modes(const std::string& text);

/// The one place the decode step's ceilings come from. `bandwidth_bytes_per_s` > 0: source user,
/// source_text "given (bandwidth_bytes_per_s)", that memory bandwidth and no peaks. Otherwise the device's measured
/// ceilings (cached per device; the first measurement takes tens of seconds) with source_text
/// "measured (<the kernel that reached the HBM bandwidth>)". decode_ceiling divides by
/// memory_bytes_per_s. Throws Error when the measured bandwidth is missing.
DeviceCeilings decode_ceilings(int device, double bandwidth_bytes_per_s);

/// One (batch, context) configuration.
struct DecodeConfiguration {
  int batch = 1, context = 1;
  StepCheck check;                       ///< passed (a failed check throws)
  StepCost cost;                         ///< bytes and FLOPs of the step at context-1 cached tokens
  double ceiling_tokens_per_s = 0;       ///< decode_ceiling at DecodeRun::ceilings
  GemmPath gemm = GemmPath::gemv;        ///< resolved
  StepKernel kernel = StepKernel::chain; ///< resolved
  int kernels_per_step = 0;
  double eager_ms = 0;                   ///< median per step, eager with per-step events (0: not run)
  double graph_ms = 0;                   ///< median per step, graph replay (0: not run)
  /// eager_ms / graph_ms when both ran: how much faster graph replay is per step.
  std::optional<double> graph_speedup() const;
};

/// What run_decode measured.
struct DecodeRun {
  std::string model_name;                ///< the preset, or the weights file's name
  Config config;
  DType dtype = DType::bf16;
  std::string weights_source;            ///< "random (seed 1)" or "from PATH"
  double device_bytes = 0;               ///< the model's weights on the GPU
  std::string device_name;
  std::optional<ReferenceLogitsCheck> reference_check;  ///< with `check_logits`
  DeviceCeilings ceilings;                ///< what decode_ceiling and the plausibility floor use
  double weight_bytes_per_step = 0;      ///< weights read once per step
  bool pdl = true;                       ///< DecodeOptions::pdl (used where the GPU has it)
  std::vector<DecodeConfiguration> configurations;  ///< in the order run: batches outer, contexts inner
  /// The check_logits record (if any) first, then per configuration and method one "decode" record
  /// (params: model, batch, context, cached_tokens, layers, heads, width, vocab, gemm, kernel, pdl,
  /// working_set_bytes, mode; extra: tokens_per_s, ms_per_step, decode_ceiling_tokens_per_s,
  /// fraction_of_ceiling, weight_bytes, kv_bytes_per_sequence, intensity_flop_per_byte,
  /// bandwidth_bytes_per_s, bandwidth_source, kernels_per_step, check, meaning). Warnings include
  /// the plausibility checks and "impossible" when tokens/s beat decode_ceiling.
  std::vector<Record> records;
};

/// Hooks for printing while the run goes (all optional).
struct DecodeCallbacks {
  std::function<void(const std::string&)> on_progress;  ///< a progress line ("" when a phase is done)
  /// Once the model, the reference-file check and the ceilings are ready, before any timing.
  std::function<void(const DecodeRun&)> on_ready;
  /// After each timed record, with its configuration.
  std::function<void(const Record&, const DecodeConfiguration&)> on_record;
};

/// Runs the decode sweep. Validates `options` first (UsageError, no GPU needed), then needs a GPU
/// (NoGpuError). Throws VerificationError when a configuration's logits or the reference file's
/// disagree (the message says by how much).
DecodeRun run_decode(const DecodeOptions& options, const DecodeCallbacks& callbacks = {});

/// The decode records on the roofline (achieved FLOP/s against intensity, one series per mode,
/// method and context) under the roofline at the run's ceilings (the fastest known peak for the
/// dtype when none was measured), drawn by roofline_plot. No series when the run has no decode records.
Plot decode_roofline_plot(const DecodeRun& run);
/// Tokens/s against batch per mode and context, with decode_ceiling dashed.
Plot decode_tokens_plot(const DecodeRun& run);

}  // namespace ridge::gpt2
