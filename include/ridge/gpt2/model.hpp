#pragma once
// The reference workload: GPT-2 decode on the GPU. A Model holds the weights on the device;
// a Decoder holds one batch's KV cache and buffers and runs decode steps, eagerly or as one
// captured CUDA graph. (Implementation: src/workloads/gpt2/.)
//
// Tracing a step (for `ridge profile` or your own tracer):
//   Decoder decoder(model, {.batch = 1, .max_context = 1025});
//   decoder.fill_random_cache(1024);                  // or prefill with real tokens
//   decoder.warmup(Mode::graph, 3);               // graph captured outside the trace
//   tracer.start();  decoder.step(Mode::graph, stream);  cudaStreamSynchronize(stream);  tracer.stop();
// Eager steps carry NVTX ranges: "gpt2.step" around each step, "layer N" per block and one per op
// ("ln_1+c_attn", "attention", "attn.c_proj", "ln_2+mlp.c_fc", "mlp.c_proj", "ln_f+lm_head+argmax").
// A graph replay carries one "gpt2.step (graph)" range.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ridge/dtype.hpp"
#include "ridge/gpt2/config.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/measure.hpp"

namespace ridge::gpt2 {

/// Who does the matrix work of a step.
enum class GemmPath {
  automatic,  ///< ridge's fused GEMV for batch <= 8 (and inputs that fit in shared memory), else cuBLASLt
  gemv,       ///< ridge's GEMV kernels, layer norm / bias / GELU / residual fused in (batch <= 8)
  cublas,     ///< cuBLASLt GEMMs with bias / GELU epilogues; separate layer-norm kernels
};
std::string to_string(GemmPath g);
/// Parses "auto", "gemv", "cublas"; throws UsageError otherwise.
GemmPath gemm_path_from_string(const std::string& name);

/// How the GEMV backend's step is organised on the GPU.
enum class StepKernel {
  automatic,  ///< barrier where it fits (shared memory for the batch), else chain
  barrier,    ///< one persistent kernel, phases separated by grid barriers (five per layer)
  chain,      ///< one kernel per operation (2 + 5 per layer)
};
std::string to_string(StepKernel k);
/// Parses "auto", "barrier", "chain"; throws UsageError otherwise.
StepKernel step_kernel_from_string(const std::string& name);

/// How a step is launched.
enum class Mode {
  eager,  ///< every kernel launched from the host, each step
  graph,  ///< the whole step captured once into a CUDA graph, then replayed
};
std::string to_string(Mode m);
/// Parses "eager", "graph"; throws UsageError otherwise.
Mode mode_from_string(const std::string& name);

/// GPT-2 weights on the current CUDA device. Matrices are stored in the model dtype (fp32 or
/// bf16) transposed to [out, in] (nn.Linear layout, rows contiguous along the reduction), biases
/// and layer-norm parameters in fp32.
class Model {
 public:
  /// Random weights from `seed`, generated on the device; the same values as
  /// random_weights(config, seed) (rounded to bf16 for a bf16 model). Throws UsageError for a
  /// bad config or dtype other than fp32/bf16, NoGpuError without a GPU, Error when out of memory.
  static std::unique_ptr<Model> random(const Config& config, DType dtype, std::uint64_t seed = 1);
  /// Uploads host weights (converted to the model dtype).
  static std::unique_ptr<Model> from_weights(const Weights& weights, DType dtype);
  /// Loads a safetensors file (see load_safetensors) and uploads it.
  static std::unique_ptr<Model> load(const std::string& safetensors_path, DType dtype,
                                         std::optional<int> heads = std::nullopt);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const Config& config() const;
  DType dtype() const;
  /// Bytes of all weights on the device.
  double device_bytes() const;
  /// The weights as a CPU reference would hold them (a copy from the device: for checks).
  Weights download() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct DecoderOptions {
  int batch = 1;
  int max_context = 1024;  ///< cache slots per sequence; at most config.context
  GemmPath gemm = GemmPath::automatic;
  /// The GEMV backend's step kernels (cuBLASLt always runs a chain). A choice that cannot run for
  /// this model, batch and context throws UsageError saying why.
  StepKernel kernel = StepKernel::automatic;
  /// Programmatic dependent launch (Hopper+): each kernel starts, and prefetches its weights into
  /// the L2, while the previous one finishes. Ignored on older GPUs.
  bool pdl = true;
  /// Barrier kernel only: each block also bulk-prefetches the weights two phases ahead into the
  /// L2, on top of its register preload of the next phase (measured slower on the H200, so off;
  /// kept to compare). UsageError when the step does not run the barrier kernel.
  bool l2_prefetch = false;
  /// Barrier kernel only: every block notes (globaltimer ns, clock64) at four points of each phase
  /// of each step, for write_timeline(). Costs nothing measurable. UsageError when the step does
  /// not run the barrier kernel.
  bool record_timeline = false;
};

/// One batch of sequences decoding with a KV cache. Tokens and positions live in device memory,
/// so the captured graph is replayed unchanged from step to step.
class Decoder {
 public:
  /// Allocates the cache (layers x batch x heads x max_context x 64, model dtype) and buffers.
  /// Throws UsageError for a batch < 1, a max_context outside [1, config.context], or gemv asked
  /// for a batch it cannot do; Error when out of memory (with the sizes).
  Decoder(const Model& model, DecoderOptions options);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  const DecoderOptions& options() const;
  /// The matrix backend actually used (automatic resolved).
  GemmPath gemm() const;
  /// The step kernels actually used (automatic resolved; chain for cuBLASLt).
  StepKernel kernel() const;

  /// Sets the next step's input token of each sequence (batch values). Synchronous.
  void set_tokens(const std::vector<int>& tokens);
  /// Sets each sequence's cached length, i.e. the position the next step writes. Synchronous.
  void set_positions(const std::vector<int>& positions);
  std::vector<int> positions() const;
  /// Fills every sequence's cache positions [0, context) with the random values
  /// fill_random_cache(config, seed, b, context, ...) produces, and sets all positions to
  /// `context` and all tokens to random in-vocabulary values: a step then costs what a step at
  /// that context costs.
  void fill_random_cache(int context, std::uint64_t seed = 1);

  /// One decode step on `stream`: embeddings, 12..48 blocks, final norm, LM head, greedy argmax.
  /// Appends each sequence's K/V at its position; does not advance positions (see advance()).
  /// Graph mode captures the step on first use (outside any timing) and replays it.
  void step(Mode mode, cuda_stream stream = nullptr);
  /// Eager launches of one step on `stream` (what graph mode captures).
  void launch_step(cuda_stream stream);
  /// Moves each sequence on: token <- its argmax, position += 1 (one small kernel on `stream`).
  void advance(cuda_stream stream = nullptr);
  /// Runs `steps` steps in `mode` and synchronizes (captures the graph if needed).
  void warmup(Mode mode, int steps = 3, cuda_stream stream = nullptr);

  /// Logits of the last step, [batch][vocab], copied to the host (synchronizes the device).
  std::vector<float> logits() const;
  /// Greedy next tokens of the last step (synchronizes).
  std::vector<int> next_tokens() const;

  /// Bytes and FLOPs of a step at `context` cached tokens (step_cost with this model's
  /// element sizes).
  StepCost cost(int context) const;
  /// Kernels one eager step launches (cuBLASLt may add its own split-K reductions).
  int kernels_per_step() const;

  /// Writes the last step's per-block phase timeline (DecoderOptions::record_timeline) as JSON:
  /// {"blocks", "phases", "marks": [start, staged, computed, arrived], "layout", "values":
  /// [block][phase][mark][globaltimer ns, clock64]}; bench/fused_timeline.py summarises it.
  /// Synchronizes the device. Throws UsageError when no timeline is recorded, Error when the file
  /// cannot be written.
  void write_timeline(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ridge::gpt2
