// GPT-2 weights on the GPU: allocation, random initialisation on the device, upload of host
// weights and download for checks. The decoder (buffers, launches, graph) is in decoder.cpp.
#include "ridge/gpt2/model.hpp"

#include <fmt/ranges.h>

#include "workloads/gpt2/cuda/model_impl.hpp"

namespace ridge::gpt2 {

void Model::Impl::resolve() {
  auto f = [&](int l, const char* suffix) { return static_cast<const float*>(layer(l, suffix)); };
  layers.clear();
  for (int l = 0; l < config.layers; ++l)
    layers.push_back(Layer{f(l, "ln_1.weight"), f(l, "ln_1.bias"), f(l, "attn.c_attn.bias"),
                           f(l, "attn.c_proj.bias"), f(l, "ln_2.weight"), f(l, "ln_2.bias"), f(l, "mlp.c_fc.bias"),
                           f(l, "mlp.c_proj.bias"), layer(l, "attn.c_attn.weight"), layer(l, "attn.c_proj.weight"),
                           layer(l, "mlp.c_fc.weight"), layer(l, "mlp.c_proj.weight"), fc_bias_act[l]});
  wte = get("wte.weight");
  wpe = get("wpe.weight");
  lnf_w = static_cast<const float*>(get("ln_f.weight"));
  lnf_b = static_cast<const float*>(get("ln_f.bias"));
}

std::size_t Model::Impl::element_bytes(const TensorSpec& s) const {
  return s.kind == TensorKind::vector ? 4 : static_cast<std::size_t>(gpt2::elem_bytes(elem));
}
void* Model::Impl::get(const std::string& name) const {
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return tensors[i];
  throw Error(fmt::format("internal: GPT-2 tensor '{}' not found", name));
}

void Model::Impl::allocate() {
  config.validate();
  ensure_gpu();
  elem = elem_of(dtype);
  specs = tensor_specs(config);
  auto align = [](std::size_t v) { return (v + 255) / 256 * 256; };
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const auto& s : specs) {
    offsets.push_back(total);
    total += align(static_cast<std::size_t>(s.numel()) * element_bytes(s));
  }
  std::vector<std::size_t> fc_offsets;
  for (int l = 0; l < config.layers; ++l) {
    fc_offsets.push_back(total);
    total += align(static_cast<std::size_t>(config.hidden()) * gpt2::elem_bytes(elem));
  }
  arena_bytes = total;
  arena = make_device(total, fmt::format("GPT-2 {} {} weights", config.name, to_string(dtype)));
  auto* base = static_cast<unsigned char*>(arena.get());
  for (auto o : offsets) tensors.push_back(base + o);
  for (auto o : fc_offsets) fc_bias_act.push_back(base + o);
  sm_count = current_sm_count();
  resolve();
}

void Model::Impl::random_init(std::uint64_t seed) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    const std::int64_t rows = s.shape[0], cols = s.shape.size() > 1 ? s.shape[1] : 1;
    const Elem e = s.kind == TensorKind::vector ? Elem::fp32 : elem;
    gpt2::init_tensor(tensors[i], e, rows, cols, s.kind == TensorKind::conv1d, tensor_seed(seed, i),
                      s.init_offset, s.init_scale, nullptr);
    if (s.layer >= 0 && s.name == fmt::format("h.{}.mlp.c_fc.bias", s.layer))
      gpt2::init_tensor(fc_bias_act[s.layer], elem, rows, 1, false, tensor_seed(seed, i), s.init_offset,
                        s.init_scale, nullptr);
  }
  RIDGE_CHECK(cudaDeviceSynchronize());
}

// Host float data in checkpoint layout -> device layout and dtype.
void Model::Impl::upload(std::size_t i, const std::vector<float>& host) {
  const auto& s = specs[i];
  if (static_cast<std::int64_t>(host.size()) != s.numel())
    throw UsageError(fmt::format("tensor '{}' has {} values; expected {} for shape {}", s.name, host.size(), s.numel(),
                                 fmt::join(s.shape, "x")));
  std::vector<float> laid_out;
  const std::vector<float>* src = &host;
  if (s.kind == TensorKind::conv1d) {  // [in, out] -> [out, in]
    const std::int64_t in = s.shape[0], out = s.shape[1];
    laid_out.resize(host.size());
    for (std::int64_t r = 0; r < in; ++r)
      for (std::int64_t c = 0; c < out; ++c) laid_out[c * in + r] = host[r * out + c];
    src = &laid_out;
  }
  upload_as(tensors[i], *src, s.kind == TensorKind::vector ? Elem::fp32 : elem);
  if (s.layer >= 0 && s.name == fmt::format("h.{}.mlp.c_fc.bias", s.layer)) upload_as(fc_bias_act[s.layer], host, elem);
}

void Model::Impl::upload_as(void* dst, const std::vector<float>& v, Elem e) {
  if (e == Elem::fp32) {
    RIDGE_CHECK(cudaMemcpy(dst, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<std::uint16_t> bits(v.size());
    for (std::size_t j = 0; j < v.size(); ++j) bits[j] = bf16_bits(v[j]);
    RIDGE_CHECK(cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
}

std::vector<float> Model::Impl::download(std::size_t i) const {
  const auto& s = specs[i];
  const std::size_t n = static_cast<std::size_t>(s.numel());
  std::vector<float> v(n);
  const Elem e = s.kind == TensorKind::vector ? Elem::fp32 : elem;
  if (e == Elem::fp32) {
    RIDGE_CHECK(cudaMemcpy(v.data(), tensors[i], n * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<std::uint16_t> bits(n);
    RIDGE_CHECK(cudaMemcpy(bits.data(), tensors[i], n * 2, cudaMemcpyDeviceToHost));
    for (std::size_t j = 0; j < n; ++j) v[j] = from_bf16_bits(bits[j]);
  }
  if (s.kind != TensorKind::conv1d) return v;
  const std::int64_t in = s.shape[0], out = s.shape[1];
  std::vector<float> checkpoint(n);
  for (std::int64_t r = 0; r < in; ++r)
    for (std::int64_t c = 0; c < out; ++c) checkpoint[r * out + c] = v[c * in + r];
  return checkpoint;
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::random(const Config& config, DType dtype, std::uint64_t seed) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->dtype = dtype;
  impl->allocate();
  impl->random_init(seed);
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::unique_ptr<Model> Model::from_weights(const Weights& weights, DType dtype) {
  auto impl = std::make_unique<Impl>();
  impl->config = weights.config;
  impl->dtype = dtype;
  impl->allocate();
  if (weights.tensors.size() != impl->specs.size())
    throw UsageError(fmt::format("GPT-2 weights hold {} tensors; the config needs {}", weights.tensors.size(),
                                 impl->specs.size()));
  for (std::size_t i = 0; i < impl->specs.size(); ++i) impl->upload(i, weights.tensors[i]);
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::unique_ptr<Model> Model::load(const std::string& path, DType dtype, std::optional<int> heads) {
  return from_weights(load_safetensors(path, heads), dtype);
}

const Config& Model::config() const { return impl_->config; }
DType Model::dtype() const { return impl_->dtype; }
double Model::device_bytes() const { return static_cast<double>(impl_->arena_bytes); }

Weights Model::download() const {
  Weights w;
  w.config = impl_->config;
  for (std::size_t i = 0; i < impl_->specs.size(); ++i) w.tensors.push_back(impl_->download(i));
  return w;
}

}  // namespace ridge::gpt2
