#include "ridge/gpt2/config.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::gpt2 {

void Config::validate() const {
  auto positive = [&](int v, const char* what) {
    if (v <= 0) throw UsageError(fmt::format("GPT-2 config '{}': {} must be > 0, got {}", name, what, v));
  };
  positive(layers, "layers");
  positive(heads, "heads");
  positive(width, "width");
  positive(vocab, "vocab");
  positive(context, "context");
  if (width % heads != 0)
    throw UsageError(fmt::format("GPT-2 config '{}': width {} is not divisible by heads {}", name, width, heads));
  if (head_dim() != 64)
    throw UsageError(fmt::format("GPT-2 config '{}': head size width/heads = {} but ridge's attention kernel needs 64 "
                                 "(every GPT-2 preset has 64); use heads = width/64 = {}",
                                 name, head_dim(), width / 64));
  if (width % 8 != 0)
    throw UsageError(fmt::format("GPT-2 config '{}': width {} must be a multiple of 8", name, width));
  if (!(layer_norm_eps > 0)) throw UsageError(fmt::format("GPT-2 config '{}': layer_norm_eps must be > 0", name));
}

Config preset(const std::string& name) {
  Config c;
  c.name = name;
  if (name == "small") {
    c.layers = 12, c.heads = 12, c.width = 768;
  } else if (name == "medium") {
    c.layers = 24, c.heads = 16, c.width = 1024;
  } else if (name == "large") {
    c.layers = 36, c.heads = 20, c.width = 1280;
  } else if (name == "xl") {
    c.layers = 48, c.heads = 25, c.width = 1600;
  } else if (name == "tiny") {
    c.layers = 2, c.heads = 2, c.width = 128, c.vocab = 512, c.context = 256;
  } else {
    throw UsageError(fmt::format("unknown GPT-2 model '{}'; choose one of small, medium, large, xl, tiny", name));
  }
  return c;
}

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::vector<TensorSpec> tensor_specs(const Config& c) {
  const std::int64_t C = c.width, V = c.vocab, P = c.context, H4 = c.hidden();
  const float sqrt3 = std::sqrt(3.0f);
  const float w_scale = 0.02f * sqrt3;
  const float proj_scale = 0.02f / std::sqrt(2.0f * static_cast<float>(c.layers)) * sqrt3;
  const float bias_scale = 0.02f;
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, TensorKind kind, int layer, float offset,
                 float scale) {
    specs.push_back(TensorSpec{std::move(name), std::move(shape), kind, layer, offset, scale});
  };
  add("wte.weight", {V, C}, TensorKind::embedding, -1, 0, w_scale);
  add("wpe.weight", {P, C}, TensorKind::embedding, -1, 0, 0.01f * sqrt3);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = fmt::format("h.{}.", l);
    add(p + "ln_1.weight", {C}, TensorKind::vector, l, 1.0f, 0.1f);
    add(p + "ln_1.bias", {C}, TensorKind::vector, l, 0, bias_scale);
    add(p + "attn.c_attn.weight", {C, 3 * C}, TensorKind::conv1d, l, 0, w_scale);
    add(p + "attn.c_attn.bias", {3 * C}, TensorKind::vector, l, 0, bias_scale);
    add(p + "attn.c_proj.weight", {C, C}, TensorKind::conv1d, l, 0, proj_scale);
    add(p + "attn.c_proj.bias", {C}, TensorKind::vector, l, 0, bias_scale);
    add(p + "ln_2.weight", {C}, TensorKind::vector, l, 1.0f, 0.1f);
    add(p + "ln_2.bias", {C}, TensorKind::vector, l, 0, bias_scale);
    add(p + "mlp.c_fc.weight", {C, H4}, TensorKind::conv1d, l, 0, w_scale);
    add(p + "mlp.c_fc.bias", {H4}, TensorKind::vector, l, 0, bias_scale);
    add(p + "mlp.c_proj.weight", {H4, C}, TensorKind::conv1d, l, 0, proj_scale);
    add(p + "mlp.c_proj.bias", {C}, TensorKind::vector, l, 0, bias_scale);
  }
  add("ln_f.weight", {C}, TensorKind::vector, -1, 1.0f, 0.1f);
  add("ln_f.bias", {C}, TensorKind::vector, -1, 0, bias_scale);
  return specs;
}

std::int64_t parameter_count(const Config& config) {
  std::int64_t n = 0;
  for (const auto& s : tensor_specs(config)) n += s.numel();
  return n;
}

double StepCost::bytes() const { return weight_bytes + batch * kv_bytes_per_sequence + activation_bytes; }

StepCost step_cost(const Config& c, double weight_element_bytes, double cache_element_bytes, int batch,
                            int context) {
  if (batch < 1) throw UsageError(fmt::format("batch must be >= 1, got {}", batch));
  if (context < 0 || context >= c.context)
    throw UsageError(fmt::format("context must be in [0, {}) for GPT-2 {} (the step adds one token), got {}",
                                 c.context, c.name, context));
  StepCost cost;
  cost.batch = batch;
  cost.context = context;
  const double C = c.width, V = c.vocab, L = c.layers, B = batch, T = context;
  double matrix_elements = V * C;  // the LM head reads all of wte
  double vector_elements = 2 * C;  // ln_f
  for (const auto& s : tensor_specs(c)) {
    if (s.kind == TensorKind::conv1d) matrix_elements += static_cast<double>(s.numel());
    if (s.kind == TensorKind::vector && s.layer >= 0) vector_elements += static_cast<double>(s.numel());
  }
  cost.weight_bytes = matrix_elements * weight_element_bytes + vector_elements * 4;
  cost.kv_bytes_per_sequence = 2 * L * T * C * cache_element_bytes;
  // Per sequence: one wpe row (the wte row is part of the LM head's read), the new K and V rows
  // written, the logits written. Residual-stream traffic stays in the L2 and is not counted.
  cost.activation_bytes = B * (C * weight_element_bytes + 2 * L * C * cache_element_bytes + V * 4);
  const double matrix_macs = L * (C * 3 * C + C * C + C * 4 * C + 4 * C * C) + V * C;
  const double attention_macs = L * 2 * (T + 1) * C;  // q.k and p.v over T+1 keys, all heads
  cost.flops = 2 * B * (matrix_macs + attention_macs);
  return cost;
}

float round_to_bf16(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) {  // inf or NaN: keep (quiet NaN stays NaN)
    bits &= 0xffff0000u;
    if (std::isnan(value)) bits |= 0x00400000u;
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
  }
  float out = 0;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace ridge::gpt2
