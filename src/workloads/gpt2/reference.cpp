#include "ridge/gpt2/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/gpt2/safetensors.hpp"

namespace ridge::gpt2 {

namespace {

std::size_t tensor_index(const Config& config, const std::string& name) {
  const auto specs = tensor_specs(config);
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return i;
  throw UsageError(fmt::format("GPT-2 has no tensor named '{}'", name));
}

// y[n] = bias[n] + sum_k x[k] * w[k, n] for a Conv1D weight w [in, out], accumulated in double.
std::vector<float> conv1d(std::span<const float> x, const std::vector<float>& w, const std::vector<float>& bias,
                          std::size_t in, std::size_t out) {
  std::vector<double> acc(out, 0.0);
  for (std::size_t k = 0; k < in; ++k) {
    const double xk = x[k];
    const float* row = w.data() + k * out;
    for (std::size_t n = 0; n < out; ++n) acc[n] += xk * row[n];
  }
  std::vector<float> y(out);
  for (std::size_t n = 0; n < out; ++n) y[n] = static_cast<float>(acc[n] + bias[n]);
  return y;
}

// Everything after attention in a block, and before it: the parts shared by step and forward.
struct LayerParams {
  const std::vector<float>*ln1_w, *ln1_b, *attn_w, *attn_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc_w, *fc_b, *fc2_w,
      *fc2_b;
};

LayerParams layer_params(const Weights& w, int l) {
  const std::string p = fmt::format("h.{}.", l);
  return {&w.get(p + "ln_1.weight"),        &w.get(p + "ln_1.bias"),        &w.get(p + "attn.c_attn.weight"),
          &w.get(p + "attn.c_attn.bias"),   &w.get(p + "attn.c_proj.weight"), &w.get(p + "attn.c_proj.bias"),
          &w.get(p + "ln_2.weight"),        &w.get(p + "ln_2.bias"),        &w.get(p + "mlp.c_fc.weight"),
          &w.get(p + "mlp.c_fc.bias"),      &w.get(p + "mlp.c_proj.weight"), &w.get(p + "mlp.c_proj.bias")};
}

// x += attn_proj(attention) ; x += mlp(ln_2(x)).
void finish_block(const Config& c, const LayerParams& p, std::span<const float> attention, std::vector<float>& x) {
  const std::size_t C = c.width;
  const auto projected = conv1d(attention, *p.proj_w, *p.proj_b, C, C);
  for (std::size_t i = 0; i < C; ++i) x[i] += projected[i];
  std::vector<float> normed(C);
  layer_norm(x, *p.ln2_w, *p.ln2_b, c.layer_norm_eps, normed);
  auto hidden = conv1d(normed, *p.fc_w, *p.fc_b, C, 4 * C);
  for (auto& h : hidden) h = gelu_tanh(h);
  const auto out = conv1d(hidden, *p.fc2_w, *p.fc2_b, 4 * C, C);
  for (std::size_t i = 0; i < C; ++i) x[i] += out[i];
}

std::vector<float> lm_head(const Weights& w, const std::vector<float>& x) {
  const auto& c = w.config;
  const std::size_t C = c.width;
  std::vector<float> normed(C);
  layer_norm(x, w.get("ln_f.weight"), w.get("ln_f.bias"), c.layer_norm_eps, normed);
  const auto& wte = w.get("wte.weight");
  std::vector<float> logits(c.vocab);
  for (int v = 0; v < c.vocab; ++v) {
    double acc = 0;
    const float* row = wte.data() + static_cast<std::size_t>(v) * C;
    for (std::size_t i = 0; i < C; ++i) acc += static_cast<double>(normed[i]) * row[i];
    logits[v] = static_cast<float>(acc);
  }
  return logits;
}

// Attention of one query (all heads) over keys/values [count][C]: out [C].
std::vector<float> attend(const Config& c, std::span<const float> q, const float* keys, const float* values,
                          int count) {
  const int D = c.head_dim();
  const std::size_t C = c.width;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<float> out(C, 0.0f), scores(count);
  for (int h = 0; h < c.heads; ++h) {
    for (int t = 0; t < count; ++t) {
      double s = 0;
      for (int d = 0; d < D; ++d) s += static_cast<double>(q[h * D + d]) * keys[t * C + h * D + d];
      scores[t] = static_cast<float>(s * scale);
    }
    softmax(scores);
    for (int d = 0; d < D; ++d) {
      double acc = 0;
      for (int t = 0; t < count; ++t) acc += static_cast<double>(scores[t]) * values[t * C + h * D + d];
      out[h * D + d] = static_cast<float>(acc);
    }
  }
  return out;
}

void check_token(const Config& c, int token) {
  if (token < 0 || token >= c.vocab)
    throw UsageError(fmt::format("token {} is outside the vocabulary [0, {})", token, c.vocab));
}

}  // namespace

const std::vector<float>& Weights::get(const std::string& name) const {
  return tensors.at(tensor_index(config, name));
}
std::vector<float>& Weights::get(const std::string& name) { return tensors.at(tensor_index(config, name)); }

Weights random_weights(const Config& config, std::uint64_t seed) {
  config.validate();
  Weights w;
  w.config = config;
  const auto specs = tensor_specs(config);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    const std::uint64_t seed_of_tensor = tensor_seed(seed, i);
    std::vector<float> t(static_cast<std::size_t>(s.numel()));
    for (std::size_t j = 0; j < t.size(); ++j)
      t[j] = init_value(seed_of_tensor, static_cast<std::int64_t>(j), s.init_offset, s.init_scale);
    w.tensors.push_back(std::move(t));
  }
  return w;
}

namespace {

// Where GPT-2's tensors sit in a checked file: the config its shapes give and the name prefix.
struct WeightsLayout {
  Config config;
  std::string prefix;
};

std::string expected_shape_hint(const TensorSpec& s, const SafetensorsEntry& e) {
  const bool transposed = s.kind == TensorKind::conv1d && e.shape.size() == 2 && e.shape[0] == s.shape[1] &&
                          e.shape[1] == s.shape[0];
  return transposed ? " (it looks transposed: GPT-2 Conv1D weights are stored [in, out])" : "";
}

// Checks every tensor GPT-2 needs from the header alone: present, the shape the config implies,
// a floating-point dtype. Reads no tensor data.
WeightsLayout check_weights_layout(const SafetensorsFile& file, std::optional<int> heads) {
  const std::string& path = file.path();
  WeightsLayout layout;
  if (!file.contains("wte.weight") && file.contains("transformer.wte.weight")) layout.prefix = "transformer.";
  const std::string& prefix = layout.prefix;
  const auto& wte = file.entry(prefix + "wte.weight");
  const auto& wpe = file.entry(prefix + "wpe.weight");
  if (wte.shape.size() != 2)
    throw UsageError(fmt::format("'{}': tensor '{}' has shape {}; expected [vocab, width]", path, wte.name,
                                 shape_string(wte.shape)));
  if (wpe.shape.size() != 2)
    throw UsageError(fmt::format("'{}': tensor '{}' has shape {}; expected [context, width]", path, wpe.name,
                                 shape_string(wpe.shape)));
  constexpr std::int64_t max_size = std::numeric_limits<int>::max();
  for (const auto* e : {&wte, &wpe})
    if (e->shape[0] > max_size || e->shape[1] > max_size)
      throw UsageError(fmt::format("'{}': tensor '{}' has shape {}; too large for GPT-2", path, e->name,
                                   shape_string(e->shape)));
  Config& config = layout.config;
  config.name = "file";
  config.vocab = static_cast<int>(wte.shape[0]);
  config.width = static_cast<int>(wte.shape[1]);
  config.context = static_cast<int>(wpe.shape[0]);
  config.heads = heads.value_or(config.width / 64);
  int layers = 0;
  while (file.contains(fmt::format("{}h.{}.ln_1.weight", prefix, layers))) ++layers;
  if (layers == 0)
    throw UsageError(fmt::format("'{}' has no transformer blocks: tensor '{}h.0.ln_1.weight' is missing", path, prefix));
  config.layers = layers;
  try {
    config.validate();
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("'{}': its tensors do not describe a GPT-2 model: {}", path, e.what()));
  }
  for (const auto& s : tensor_specs(config)) {
    const std::string name = prefix + s.name;
    const auto& e = file.entry(name);  // throws, naming the tensor, when missing
    if (e.shape != s.shape)
      throw UsageError(fmt::format("'{}': tensor '{}' has shape {}; expected {} for GPT-2 with {} layers, width {}, "
                                   "vocabulary {}, context {}{}",
                                   path, name, shape_string(e.shape), shape_string(s.shape), config.layers,
                                   config.width, config.vocab, config.context, expected_shape_hint(s, e)));
    if (e.dtype != "F32" && e.dtype != "BF16" && e.dtype != "F16" && e.dtype != "F64")
      throw UsageError(fmt::format("'{}': tensor '{}' has dtype {}; GPT-2 weights must be F32, BF16 or F16", path,
                                   name, e.dtype));
  }
  return layout;
}

}  // namespace

Config check_weights_file(const std::string& path, std::optional<int> heads) {
  return check_weights_layout(SafetensorsFile(path), heads).config;
}

Weights load_safetensors(const std::string& path, std::optional<int> heads) {
  SafetensorsFile file(path);
  const WeightsLayout layout = check_weights_layout(file, heads);
  Weights w;
  w.config = layout.config;
  for (const auto& s : tensor_specs(layout.config))
    w.tensors.push_back(file.read_floats(layout.prefix + s.name));
  return w;
}

void save_safetensors(const Weights& weights, const std::string& path, const std::string& dtype) {
  const auto specs = tensor_specs(weights.config);
  std::vector<SafetensorsTensor> tensors;
  for (std::size_t i = 0; i < specs.size(); ++i)
    tensors.push_back(SafetensorsTensor{specs[i].name, dtype, specs[i].shape, weights.tensors.at(i), {}});
  write_safetensors(path, tensors, {{"format", "pt"}, {"written_by", "ridge"}});
}

void round_matrices_to_bf16(Weights& weights) {
  const auto specs = tensor_specs(weights.config);
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].kind != TensorKind::vector)
      for (auto& v : weights.tensors[i]) v = round_to_bf16(v);
}

void layer_norm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta, float eps,
                std::span<float> out) {
  const std::size_t n = x.size();
  if (gamma.size() != n || beta.size() != n || out.size() != n)
    throw UsageError("layer_norm: input, gamma, beta and output sizes differ");
  double mean = 0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(n);
  double var = 0;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(var + eps);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>((x[i] - mean) * inv * gamma[i] + beta[i]);
}

void softmax(std::span<float> values) {
  if (values.empty()) return;
  const float m = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (float v : values) sum += std::exp(static_cast<double>(v) - m);
  for (auto& v : values) v = static_cast<float>(std::exp(static_cast<double>(v) - m) / sum);
}

float gelu_tanh(float x) {
  const double xd = x;
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return static_cast<float>(0.5 * xd * (1.0 + std::tanh(k * (xd + 0.044715 * xd * xd * xd))));
}

int argmax(std::span<const float> values) {
  if (values.empty()) return -1;
  return static_cast<int>(std::max_element(values.begin(), values.end()) - values.begin());
}

Sequence::Sequence(const Config& config) : k(config.layers), v(config.layers) {}

void fill_random_cache(const Config& c, std::uint64_t seed, int batch_index, int length, bool bf16,
                       Sequence& sequence) {
  if (length < 0 || length >= c.context)
    throw UsageError(fmt::format("cache length {} is outside [0, {})", length, c.context));
  const int D = c.head_dim();
  const std::size_t C = c.width;
  for (int l = 0; l < c.layers; ++l) {
    for (int which = 0; which < 2; ++which) {
      auto& dst = which == 0 ? sequence.k[l] : sequence.v[l];
      dst.assign(static_cast<std::size_t>(length) * C, 0.0f);
      const std::uint64_t s = cache_seed(seed, l, which == 1);
      for (int h = 0; h < c.heads; ++h)
        for (int t = 0; t < length; ++t)
          for (int d = 0; d < D; ++d) {
            // The index is the logical (sequence, head, position, dim), independent of allocation.
            const std::int64_t index = ((static_cast<std::int64_t>(batch_index) * c.heads + h) * c.context + t) * D + d;
            float value = uniform(s, index);
            if (bf16) value = round_to_bf16(value);
            dst[static_cast<std::size_t>(t) * C + h * D + d] = value;
          }
    }
  }
  sequence.length = length;
}

std::vector<float> reference_step(const Weights& w, Sequence& seq, int token) {
  const auto& c = w.config;
  check_token(c, token);
  const int pos = seq.length;
  if (pos >= c.context)
    throw UsageError(fmt::format("the sequence already holds {} tokens, the model's whole context", pos));
  const std::size_t C = c.width;
  const auto& wte = w.get("wte.weight");
  const auto& wpe = w.get("wpe.weight");
  std::vector<float> x(C);
  for (std::size_t i = 0; i < C; ++i) x[i] = wte[token * C + i] + wpe[pos * C + i];
  std::vector<float> normed(C);
  for (int l = 0; l < c.layers; ++l) {
    const LayerParams p = layer_params(w, l);
    layer_norm(x, *p.ln1_w, *p.ln1_b, c.layer_norm_eps, normed);
    const auto qkv = conv1d(normed, *p.attn_w, *p.attn_b, C, 3 * C);
    seq.k[l].insert(seq.k[l].end(), qkv.begin() + C, qkv.begin() + 2 * C);
    seq.v[l].insert(seq.v[l].end(), qkv.begin() + 2 * C, qkv.end());
    const auto attention =
        attend(c, std::span<const float>(qkv.data(), C), seq.k[l].data(), seq.v[l].data(), pos + 1);
    finish_block(c, p, attention, x);
  }
  seq.length = pos + 1;
  return lm_head(w, x);
}

std::vector<float> reference_forward(const Weights& w, std::span<const int> tokens) {
  const auto& c = w.config;
  const int n = static_cast<int>(tokens.size());
  if (n < 1 || n > c.context)
    throw UsageError(fmt::format("reference_forward needs 1..{} tokens, got {}", c.context, n));
  const std::size_t C = c.width;
  const auto& wte = w.get("wte.weight");
  const auto& wpe = w.get("wpe.weight");
  std::vector<std::vector<float>> xs(n, std::vector<float>(C));
  for (int t = 0; t < n; ++t) {
    check_token(c, tokens[t]);
    for (std::size_t i = 0; i < C; ++i) xs[t][i] = wte[tokens[t] * C + i] + wpe[t * C + i];
  }
  std::vector<float> normed(C), keys(n * C), values(n * C);
  for (int l = 0; l < c.layers; ++l) {
    const LayerParams p = layer_params(w, l);
    std::vector<std::vector<float>> queries(n);
    for (int t = 0; t < n; ++t) {  // all positions' q, k, v first, then attention with a causal mask
      layer_norm(xs[t], *p.ln1_w, *p.ln1_b, c.layer_norm_eps, normed);
      const auto qkv = conv1d(normed, *p.attn_w, *p.attn_b, C, 3 * C);
      queries[t].assign(qkv.begin(), qkv.begin() + C);
      std::copy(qkv.begin() + C, qkv.begin() + 2 * C, keys.begin() + t * C);
      std::copy(qkv.begin() + 2 * C, qkv.end(), values.begin() + t * C);
    }
    for (int t = 0; t < n; ++t) {
      const auto attention = attend(c, queries[t], keys.data(), values.data(), t + 1);
      finish_block(c, p, attention, xs[t]);
    }
  }
  return lm_head(w, xs[n - 1]);
}

double relative_l2_error(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  if (norm == 0) return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

}  // namespace ridge::gpt2
