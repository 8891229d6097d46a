#pragma once
// Host launchers of the GPT-2 decode kernels (kernels.cu). Plain types only, so the host code
// (model.cpp, compiled by g++ with fmt) never sees a CUDA kernel, and the .cu file never sees fmt.
#include <cstddef>
#include <cstdint>

#include "ridge/measure.hpp"

namespace ridge::gpt2 {

/// Sets the kernels' shared-memory limits; call once per process before the first launch (and
/// never during stream capture).
void prepare_kernels();

/// Element type of weights, KV cache and the activations that feed matrix products.
enum class Elem { fp32, bf16 };
inline int elem_bytes(Elem e) { return e == Elem::fp32 ? 4 : 2; }

/// How each kernel is launched.
struct LaunchConfig {
  cuda_stream stream = nullptr;
  bool pdl = false;  ///< programmatic dependent launch (sm_90+)
};

// ---- weights --------------------------------------------------------------------------------

/// Writes a tensor of GPT-2's random init: element at logical (checkpoint-layout) index i is
/// init_value(seed, i, offset, scale). `transpose` stores a [rows, cols] checkpoint tensor as
/// [cols, rows] (Conv1D -> row per output).
void init_tensor(void* out, Elem elem, std::int64_t rows, std::int64_t cols, bool transpose, std::uint64_t seed,
                 float offset, float scale, cuda_stream stream);

/// Random KV-cache contents for positions [0, length) of every sequence: cache[layer] is
/// [batch][heads][slots][64]; values as fill_random_cache (gpt2_config.hpp) defines them.
void fill_cache(void* k_cache, void* v_cache, Elem elem, int layer, int batch, int heads, int slots,
                int model_context, int length, std::uint64_t seed, cuda_stream stream);

// ---- the step -------------------------------------------------------------------------------

/// x[b] = wte[token_b] + wpe[position_b] (fp32 residual stream [batch, width]).
void embed(const int* tokens, const int* positions, const void* wte, const void* wpe, Elem elem, float* x, int batch,
           int width, const LaunchConfig& launch);

enum class GemvEpilogue {
  bias_f32,       ///< out fp32 [B, N] = acc + bias
  bias_gelu,      ///< out act  [B, N] = gelu_tanh(acc + bias)
  bias_residual,  ///< out fp32 [B, N] += acc + bias (the residual stream, updated in place)
  logits_argmax,  ///< out fp32 [B, N] = acc; plus greedy argmax into next_tokens
};

struct GemvArgs {
  const void* weight = nullptr;  ///< [n, k] row-major, model element type
  int n = 0, k = 0, batch = 1;
  /// Input [batch, k]: the fp32 residual stream when layer-normalised (gamma != nullptr), else
  /// activations in the model element type.
  const void* input = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float eps = 1e-5f;
  const float* bias = nullptr;
  void* out = nullptr;
  GemvEpilogue epilogue = GemvEpilogue::bias_f32;
  // logits_argmax only: per-block partial maxima and the last-block counter (zero at rest).
  float* partial_values = nullptr;  ///< [grid][batch]
  int* partial_indices = nullptr;   ///< [grid][batch]
  unsigned* counter = nullptr;
  int* next_tokens = nullptr;
};

/// Largest batch the GEMV kernels take, and the most input elements (batch * k) they stage in
/// shared memory.
constexpr int gemv_max_batch = 8;
constexpr int gemv_max_staged_floats = 24 * 1024;  // 96 KiB
/// Blocks a GEMV uses on a device with `sm_count` SMs (the size of the argmax partial arrays).
int gemv_grid(int n, int sm_count);
/// y = input @ W^T (+ fused layer norm before, fused epilogue after) for batch <= 8.
void gemv(const GemvArgs& args, Elem elem, int sm_count, const LaunchConfig& launch);

/// out act [B, C] = layer_norm(x fp32 [B, C]) (the cuBLAS path's separate norm).
void layer_norm(const float* x, const float* gamma, const float* beta, float eps, void* out, Elem elem, int batch,
                int width, const LaunchConfig& launch);

struct AttentionArgs {
  const float* qkv = nullptr;  ///< [batch, 3*width] fp32, bias included
  void* k_cache = nullptr;     ///< this layer's [batch][heads][slots][64]
  void* v_cache = nullptr;
  const int* positions = nullptr;  ///< [batch]: cached tokens; this step's key goes to that slot
  void* out = nullptr;             ///< [batch, width], model element type
  float* partial = nullptr;        ///< [batch][heads][splits][64 + 2]
  unsigned* counters = nullptr;    ///< [batch * heads], zero at rest
  int batch = 1, heads = 12, slots = 1024;
  int splits = 1;  ///< blocks per (sequence, head), each over `chunk` positions
  int chunk = 1024;
  /// Positions [0, prefetch_positions) of every sequence are prefetched into the L2 before the
  /// kernel waits for its predecessor: a hint from the host (0 = none).
  int prefetch_positions = 0;
};
/// Chooses splits and chunk for a device: enough blocks to cover the SMs at small batch.
void attention_partition(int batch, int heads, int slots, int sm_count, int& splits, int& chunk);
/// Attention of each sequence's new query over its cache plus the new key (appended to the cache
/// at its position); softmax in fp32; splits combined by the last block of each (sequence, head).
void attention(const AttentionArgs& args, Elem elem, const LaunchConfig& launch);

/// next_tokens[b] = argmax_v logits[b, v] (first index on ties).
void argmax(const float* logits, int batch, int vocab, int* next_tokens, const LaunchConfig& launch);

/// tokens[b] = next_tokens[b]; positions[b] += 1.
void advance(int* tokens, int* positions, const int* next_tokens, int batch, cuda_stream stream);


// ---- the fused step: one persistent kernel per decode step ------------------------------------
//
// Launching ~60 small kernels per step costs a few microseconds at every boundary, more than the
// kernels' own memory time. The fused step runs the whole step in one kernel of one block per SM,
// phases separated by a grid-wide barrier; while waiting at a barrier each warp already loads the
// next phase's first weight tile (fused_step.cu has the measured costs).

/// One layer's tensors, as the fused kernel reads them (a device array of these).
struct FusedLayer {
  const void *attn_w = nullptr, *attn_proj_w = nullptr, *fc_w = nullptr, *fc_proj_w = nullptr;  // [n, k]
  const float *ln1_w = nullptr, *ln1_b = nullptr, *attn_b = nullptr, *attn_proj_b = nullptr;
  const float *ln2_w = nullptr, *ln2_b = nullptr, *fc_b = nullptr, *fc_proj_b = nullptr;
};

struct FusedStepArgs {
  const FusedLayer* layers = nullptr;  ///< device array [layer_count]
  int layer_count = 0;
  const void* wte = nullptr;  ///< [vocab, width], also the LM head
  const void* wpe = nullptr;
  const float* lnf_w = nullptr;
  const float* lnf_b = nullptr;
  const int* tokens = nullptr;     ///< [batch]
  const int* positions = nullptr;  ///< [batch]
  int* next_tokens = nullptr;      ///< [batch]
  float* x = nullptr;              ///< [batch, width] residual stream
  float* qkv = nullptr;            ///< [batch, 3 width]
  void* hidden = nullptr;          ///< [batch, 4 width], model element type
  float* logits = nullptr;         ///< [batch, vocab]
  float* attn_partial = nullptr;   ///< [batch][heads][fused_attention_groups][64 + 2]
  void* k_cache = nullptr;         ///< layer 0; layer l starts cache_layer_elements * l further
  void* v_cache = nullptr;
  std::size_t cache_layer_elements = 0;
  float* best_values = nullptr;  ///< [grid][batch]
  int* best_indices = nullptr;   ///< [grid][batch]
  unsigned* sync = nullptr;      ///< [2], zero at rest: the barrier and the exit counter
  int batch = 1, width = 768, heads = 12, hidden_dim = 3072, vocab = 50257, slots = 1024;
  float eps = 1e-5f;
  /// Bulk L2 prefetch of the weights two phases ahead, on top of the register preload of the next
  /// phase's first tile (measured slower on an H200, so off by default).
  bool prefetch = false;
  /// Measurement only: when set, thread 0 of every block writes (globaltimer ns, clock64) at each
  /// FusedMark of each phase: [grid][5 * layer_count + 1][fused_marks][2].
  unsigned long long* timeline = nullptr;
};

/// Points of a phase the timeline records.
enum FusedMark : int { fused_mark_start, fused_mark_staged, fused_mark_computed, fused_mark_arrived, fused_marks };

/// Cache positions one attention work item covers in the fused step, and the items per
/// (sequence, head) for `slots` cache slots.
constexpr int fused_attention_span = 128;
inline int fused_attention_groups(int slots) { return (slots + fused_attention_span - 1) / fused_attention_span; }
/// Blocks of the fused step on this device (one per SM), or 0 when it cannot run (too little shared
/// memory for the batch, or widths the kernel does not take).
int fused_grid(Elem elem, int batch, int width, int heads, int hidden_dim, int slots, int sm_count);
/// Runs one decode step as one kernel (no PDL: it must start on an idle device, its barrier needs
/// every block resident).
void fused_step(const FusedStepArgs& args, Elem elem, int grid, cuda_stream stream);

}  // namespace ridge::gpt2
