#pragma once
// GPT-2 on the CPU: the weights in their checkpoint layout, loading them from safetensors, and a
// plain reference forward pass (float storage, double accumulation) that the GPU decode step is
// checked against. Written for clarity, not speed.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ridge/gpt2/config.hpp"

namespace ridge::gpt2 {

/// All of GPT-2's parameters as float, in the checkpoint layout (Conv1D weights [in, out]).
struct Weights {
  Config config;
  /// One entry per tensor_specs(config) entry, same order, same shapes.
  std::vector<std::vector<float>> tensors;

  /// The tensor with this checkpoint name (no prefix); throws UsageError if there is none.
  const std::vector<float>& get(const std::string& name) const;
  std::vector<float>& get(const std::string& name);
};

/// Random weights from `seed`, GPT-2-like in scale (see TensorSpec), never zeros. The GPU
/// model's on-device initialiser produces the same values bit for bit.
Weights random_weights(const Config& config, std::uint64_t seed);

/// Loads weights from a safetensors file with the usual GPT-2 names (wte.weight, h.0.ln_1.weight,
/// ..., ln_f.bias), with or without a "transformer." prefix. Layers, width, vocabulary and
/// context come from the file; heads from `heads` (default width/64, as in every GPT-2).
/// F32, BF16 and F16 tensors are accepted. Extra tensors (lm_head.weight, attn.bias masks) are
/// ignored. Throws UsageError naming the tensor that is missing, has the wrong shape or dtype, or
/// is cut short.
Weights load_safetensors(const std::string& path, std::optional<int> heads = std::nullopt);

/// Checks a GPT-2 weights file from its header alone (fast, reads no tensor data, needs no GPU):
/// the safetensors header itself (see SafetensorsFile), then every tensor load_safetensors needs:
/// present, with the shape the file's vocabulary, width, context and layers imply, and a
/// floating-point dtype. Returns that configuration. Throws UsageError naming the file, the tensor
/// and what is wrong.
Config check_weights_file(const std::string& path, std::optional<int> heads = std::nullopt);

/// Writes weights as a safetensors file with the usual GPT-2 names (F32 or BF16).
void save_safetensors(const Weights& weights, const std::string& path, const std::string& dtype = "F32");

/// Rounds the matrices and embeddings to bf16 values (what a bf16 model stores); biases and
/// layer-norm vectors stay fp32, as on the GPU.
void round_matrices_to_bf16(Weights& weights);

// ---- building blocks (exposed for tests) ------------------------------------------------------

/// out = (x - mean) / sqrt(var + eps) * gamma + beta over n elements (biased variance).
void layer_norm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta, float eps,
                std::span<float> out);
/// In-place softmax (max-subtracted, accumulated in double).
void softmax(std::span<float> values);
/// GPT-2's GELU, the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
float gelu_tanh(float x);
/// Index of the largest value (the first one on ties); -1 for an empty span.
int argmax(std::span<const float> values);

// ---- the reference model ----------------------------------------------------------------------

/// One sequence's KV cache: per layer, K and V as [length][width] (head h at columns h*64..).
struct Sequence {
  std::vector<std::vector<float>> k, v;  ///< [layers][length * width]
  int length = 0;                        ///< tokens cached
  explicit Sequence(const Config& config);
};

/// Fills `sequence` with `length` cached positions of the random contents the GPU decoder uses
/// when timing at a given context (cache_seed), for the sequence at `batch_index`. With
/// `bf16` the values are rounded as a bf16 cache stores them.
void fill_random_cache(const Config& config, std::uint64_t seed, int batch_index, int length, bool bf16,
                       Sequence& sequence);

/// One decode step: the token at position sequence.length; appends its K and V to the cache and
/// returns the logits [vocab]. Throws UsageError for a token outside the vocabulary or a full context.
std::vector<float> reference_step(const Weights& weights, Sequence& sequence, int token);

/// The logits [vocab] after the last of `tokens`, computed from scratch with full causal
/// attention and no cache: an independent check of the cached step.
std::vector<float> reference_forward(const Weights& weights, std::span<const int> tokens);

/// Relative error ||a - b||_2 / ||b||_2 (0 when both are zero; +inf when sizes differ or a value
/// is not finite).
double relative_l2_error(std::span<const float> a, std::span<const float> b);

}  // namespace ridge::gpt2
