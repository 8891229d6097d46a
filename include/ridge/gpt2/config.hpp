#pragma once
// GPT-2's shape, its presets, the tensors it is made of, and what one decode step costs.
// Host-only and CPU-only: shared by the CPU reference (src/workloads/gpt2) and the CUDA workload
// (src/workloads/gpt2/cuda), which is why the weight-initialisation hash below also compiles for the GPU.
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define RIDGE_HOST_DEVICE __host__ __device__
#else
#define RIDGE_HOST_DEVICE
#endif

namespace ridge::gpt2 {

/// The shape of a GPT-2 model. Every preset has 64-wide heads; ridge's attention kernel needs that.
struct Config {
  std::string name = "small";
  int layers = 12;
  int heads = 12;
  int width = 768;      ///< embedding width C (n_embd)
  int vocab = 50257;    ///< vocabulary size V
  int context = 1024;   ///< positions in wpe (n_positions): the longest sequence
  float layer_norm_eps = 1e-5f;

  int head_dim() const { return width / heads; }
  int hidden() const { return 4 * width; }  ///< MLP width
  /// Throws UsageError naming the bad field (non-positive sizes, width not divisible by heads,
  /// head size other than 64, width not a multiple of 8).
  void validate() const;
};

/// "small" (124M), "medium" (355M), "large" (774M), "xl" (1.5B), or "tiny" (2 layers, width 128,
/// vocabulary 512, context 256: for tests). Throws UsageError for other names.
Config preset(const std::string& name);

/// What a tensor is, which decides how it is stored on the GPU and how it is initialised.
enum class TensorKind {
  embedding,  ///< wte [V, C], wpe [context, C]: rows looked up (wte is also the LM head)
  conv1d,     ///< a Conv1D weight [in, out] (GPT-2 stores these transposed vs nn.Linear)
  vector,     ///< a bias or layer-norm parameter
};

/// One named tensor of GPT-2 with its shape in the checkpoint layout and its initialisation.
struct TensorSpec {
  std::string name;  ///< e.g. "h.3.attn.c_attn.weight" (no "transformer." prefix)
  std::vector<std::int64_t> shape;
  TensorKind kind = TensorKind::vector;
  int layer = -1;  ///< -1 for wte, wpe, ln_f
  /// Random init: offset + scale * u, u uniform in [-1, 1). GPT-2 draws normals with std 0.02
  /// (0.02/sqrt(2*layers) for the residual projections); a uniform with the same std has
  /// scale = std*sqrt(3). Biases and layer-norm parameters get small non-zero values (never zeros).
  float init_offset = 0, init_scale = 0;
  std::int64_t numel() const;
};

/// All tensors of the model, in checkpoint order (wte, wpe, h.0.*, ..., ln_f.*).
std::vector<TensorSpec> tensor_specs(const Config& config);

/// Parameters of the model with wte counted once (it is tied to the LM head); for the presets
/// this is the number Hugging Face reports (124,439,808 for small).
std::int64_t parameter_count(const Config& config);

/// The work of one decode step of `batch` sequences, each with `context` tokens already cached.
struct StepCost {
  double weight_bytes = 0;        ///< weights read once per step, shared by the batch
  double kv_bytes_per_sequence = 0;  ///< each sequence's cached K and V up to `context`
  double activation_bytes = 0;    ///< embeddings rows, new K/V rows, logits: small next to the rest
  double flops = 0;               ///< 2 per multiply-add: matrix products plus attention
  double bytes() const;           ///< weight + batch * kv + activations, as given to `of`
  int batch = 1;
  int context = 0;
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }  ///< FLOP/byte
};

/// Bytes and FLOPs of one step. Matrices and embeddings take `weight_element_bytes` each (2 for
/// bf16, 4 for fp32), biases and layer-norm vectors 4 (ridge keeps them in fp32), the KV cache
/// `cache_element_bytes`. Throws UsageError for batch < 1 or context outside [0, config.context).
StepCost step_cost(const Config& config, double weight_element_bytes, double cache_element_bytes,
                            int batch, int context);

// ---- deterministic weight initialisation, identical on the CPU and the GPU ----------------------

/// splitmix64's finaliser: a bijective 64-bit mix.
RIDGE_HOST_DEVICE inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Seed of tensor number `tensor_index` (its position in tensor_specs) for a model seed.
RIDGE_HOST_DEVICE inline std::uint64_t tensor_seed(std::uint64_t seed, std::uint64_t tensor_index) {
  return mix(mix(seed) ^ (tensor_index * 0xd1b54a32d192ed03ull + 1));
}

/// Uniform in [-1, 1) from a 24-bit hash of (seed, index); exact in float, so the CPU and the GPU
/// produce bit-identical values.
RIDGE_HOST_DEVICE inline float uniform(std::uint64_t seed, std::int64_t index) {
  const std::uint64_t h = mix(seed ^ (static_cast<std::uint64_t>(index) * 0x632be59bd9b4e019ull));
  const auto bits = static_cast<std::int32_t>(h >> 40);  // 24 bits
  return static_cast<float>(bits - (1 << 23)) * (1.0f / 8388608.0f);
}

/// offset + scale * u with one rounding per operation on both sides (no fused multiply-add), so
/// the GPU's initialiser matches the CPU's bit for bit.
RIDGE_HOST_DEVICE inline float init_value(std::uint64_t tensor_seed, std::int64_t index, float offset,
                                               float scale) {
  const float u = uniform(tensor_seed, index);
#if defined(__CUDA_ARCH__)
  return __fadd_rn(offset, __fmul_rn(scale, u));
#else
  volatile float product = scale * u;  // keeps the compiler from contracting into an FMA
  return offset + product;
#endif
}

/// Seed of the random KV-cache contents used for timing a step at a given context (the values a
/// real prefill would have left there are irrelevant to the step's cost, but never zeros).
RIDGE_HOST_DEVICE inline std::uint64_t cache_seed(std::uint64_t seed, int layer, bool value) {
  return mix(mix(seed ^ 0x5bd1e995u) + static_cast<std::uint64_t>(layer) * 2 + (value ? 1 : 0));
}

/// Rounds a float to the nearest bfloat16 (ties to even) and back: what storing it in bf16 keeps.
float round_to_bf16(float value);

}  // namespace ridge::gpt2
