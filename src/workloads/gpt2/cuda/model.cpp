// GPT-2 decode on the GPU: weights, the decoder's buffers, the step's launch sequence (eager and
// graph), cuBLASLt setup and NVTX ranges. Kernels are in kernels.cu.
#include "ridge/gpt2/model.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "workloads/gpt2/cuda/kernels.hpp"

namespace ridge::gpt2 {

using gpt2::Elem;

std::string to_string(GemmPath g) {
  switch (g) {
    case GemmPath::automatic: return "auto";
    case GemmPath::gemv: return "gemv";
    case GemmPath::cublas: return "cublas";
  }
  return "?";
}

GemmPath gemm_path_from_string(const std::string& name) {
  if (name == "auto" || name == "automatic") return GemmPath::automatic;
  if (name == "gemv" || name == "ridge") return GemmPath::gemv;
  if (name == "cublas" || name == "cublaslt") return GemmPath::cublas;
  throw UsageError(fmt::format("unknown matrix backend '{}'; choose auto, gemv or cublas", name));
}

std::string to_string(StepKernel k) {
  switch (k) {
    case StepKernel::automatic: return "auto";
    case StepKernel::barrier: return "barrier";
    case StepKernel::chain: return "chain";
  }
  return "?";
}

StepKernel step_kernel_from_string(const std::string& name) {
  if (name == "auto" || name == "automatic") return StepKernel::automatic;
  if (name == "barrier" || name == "fused") return StepKernel::barrier;
  if (name == "chain") return StepKernel::chain;
  throw UsageError(fmt::format("unknown step kernel '{}'; choose auto, barrier or chain", name));
}

std::string to_string(Mode m) { return m == Mode::eager ? "eager" : "graph"; }

Mode mode_from_string(const std::string& name) {
  if (name == "eager") return Mode::eager;
  if (name == "graph") return Mode::graph;
  throw UsageError(fmt::format("unknown mode '{}'; choose eager or graph", name));
}

namespace {

// An NVTX range for the lifetime of the object (host-side marks; free when no tool listens).
struct NvtxRange {
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

void* device_alloc(std::size_t bytes, const std::string& what) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, std::max<std::size_t>(bytes, 16));
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(fmt::format("cannot allocate {:.3f} GB of GPU memory for {}: {}. Use a smaller model, batch or "
                            "context",
                            bytes / 1e9, what, detail::status_text(status)));
  }
  return p;
}

struct DeviceFree {
  void operator()(void* p) const {
    if (p) cudaFree(p);
  }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;

DevicePtr make_device(std::size_t bytes, const std::string& what) { return DevicePtr(device_alloc(bytes, what)); }

Elem elem_of(DType dtype) {
  if (dtype == DType::fp32) return Elem::fp32;
  if (dtype == DType::bf16) return Elem::bf16;
  throw UsageError(fmt::format("GPT-2 decode supports fp32 and bf16 weights, not {}", to_string(dtype)));
}

std::uint16_t bf16_bits(float v) {
  const float r = round_to_bf16(v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &r, 4);
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16_bits(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

void ensure_gpu() {
  if (device_count() == 0) require_gpu(0);  // throws NoGpuError with the reason
}

int current_sm_count() {
  int device = 0, sms = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Measurement knobs of the fused step (0 when unset).
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

bool device_has_pdl() {
  int device = 0, major = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

}  // namespace

// ================================================================================================
// The model: weights on the device
// ================================================================================================

struct Model::Impl {
  Config config;
  DType dtype = DType::bf16;
  Elem elem = Elem::bf16;
  std::vector<TensorSpec> specs;
  DevicePtr arena;
  std::size_t arena_bytes = 0;
  std::vector<void*> tensors;      // per spec
  std::vector<void*> fc_bias_act;  // per layer: mlp.c_fc.bias in the model dtype (cuBLASLt's GELU epilogue)
  int sm_count = 0;

  // Resolved once, so a step's launches do no name lookups (eager mode is host-bound).
  struct Layer {
    const float *ln1_w, *ln1_b, *attn_b, *attn_proj_b, *ln2_w, *ln2_b, *fc_b, *fc_proj_b;
    const void *attn_w, *attn_proj_w, *fc_w, *fc_proj_w, *fc_b_act;
  };
  std::vector<Layer> layers;
  const void *wte = nullptr, *wpe = nullptr;
  const float *lnf_w = nullptr, *lnf_b = nullptr;

  void resolve() {
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

  std::size_t element_bytes(const TensorSpec& s) const {
    return s.kind == TensorKind::vector ? 4 : static_cast<std::size_t>(gpt2::elem_bytes(elem));
  }
  void* get(const std::string& name) const {
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (specs[i].name == name) return tensors[i];
    throw Error(fmt::format("internal: GPT-2 tensor '{}' not found", name));
  }
  void* layer(int l, const char* suffix) const { return get(fmt::format("h.{}.{}", l, suffix)); }

  void allocate() {
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

  void random_init(std::uint64_t seed) {
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
  void upload(std::size_t i, const std::vector<float>& host) {
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

  static void upload_as(void* dst, const std::vector<float>& v, Elem e) {
    if (e == Elem::fp32) {
      RIDGE_CHECK(cudaMemcpy(dst, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    } else {
      std::vector<std::uint16_t> bits(v.size());
      for (std::size_t j = 0; j < v.size(); ++j) bits[j] = bf16_bits(v[j]);
      RIDGE_CHECK(cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    }
  }

  std::vector<float> download(std::size_t i) const {
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
};

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

// ================================================================================================
// cuBLASLt: one descriptor per kind of product
// ================================================================================================

namespace {

cudaDataType_t cuda_type(Elem e) { return e == Elem::fp32 ? CUDA_R_32F : CUDA_R_16BF; }

// D[batch, n] = in[batch, k] @ W[n, k]^T (+ epilogue), column-major: D^T = W^T(k x n, op T) * in^T.
struct LtMatmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string name;

  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }

  void create(cublasLtHandle_t handle, const std::string& what, int n, int k, int batch, Elem weight, Elem input,
              cudaDataType_t out, cublasLtEpilogue_t epilogue, const void* sample_bias, cudaDataType_t bias_type,
              std::size_t workspace_bytes) {
    name = what;
    RIDGE_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
    RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
    RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    if (sample_bias) {
      RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &sample_bias,
                                                 sizeof sample_bias));
      const int type = bias_type;
      RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type));
    }
    RIDGE_CHECK(cublasLtMatrixLayoutCreate(&a, cuda_type(weight), k, n, k));
    RIDGE_CHECK(cublasLtMatrixLayoutCreate(&b, cuda_type(input), k, batch, k));
    RIDGE_CHECK(cublasLtMatrixLayoutCreate(&c, out, n, batch, n));
    cublasLtMatmulPreference_t pref = nullptr;
    RIDGE_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    RIDGE_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                     sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0)
      throw Error(fmt::format("cuBLASLt has no algorithm for the GPT-2 {} product ({}x{} by batch {}): {}. Use "
                              "--gemm gemv",
                              what, n, k, batch, detail::status_text(status)));
    algo = result.algo;
  }

  void run(cublasLtHandle_t handle, const void* weight, const void* input, void* out, const void* bias, float beta,
           void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    if (bias)
      RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    const float alpha = 1.0f;
    RIDGE_CHECK(cublasLtMatmul(handle, desc, &alpha, weight, a, input, b, &beta, out, c, out, c, &algo, workspace,
                               workspace_bytes, stream));
  }
};

}  // namespace

// ================================================================================================
// The decoder: one batch's cache, buffers, and the step
// ================================================================================================

struct Decoder::Impl {
  const Model::Impl& m;
  DecoderOptions o;
  GemmPath gemm = GemmPath::gemv;
  bool pdl = false;
  int B = 1, S = 1, C = 0, H = 0, V = 0, L = 0;
  int splits = 1, chunk = 1, argmax_grid = 1;
  int fused_blocks = 0;  // > 0: the whole step is one kernel (gpt2::fused_step) on this many blocks
  StepKernel kernel = StepKernel::chain;
  bool fused_prefetch = false;  // RIDGE_GPT2_FUSED_PREFETCH=1: the fused step also bulk-prefetches into the L2
  std::vector<int> host_positions;
  std::vector<std::string> layer_names;  // NVTX range names, formatted once

  DevicePtr tokens, positions, next_tokens, x, qkv, attn_out, hidden, normed, logits, attn_partial, attn_counters,
      argmax_values, argmax_indices, argmax_counter, k_cache, v_cache, fused_layers, fused_sync, fused_timeline;
  std::string fused_timeline_path;  // RIDGE_GPT2_FUSED_TIMELINE: where the last step's phase timeline goes

  cublasLtHandle_t lt = nullptr;
  DevicePtr workspace;
  std::size_t workspace_bytes = 32u << 20;
  std::array<LtMatmul, 5> matmuls;  // c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, lm_head

  cudaStream_t capture_stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;

  Impl(const Model::Impl& model, DecoderOptions options) : m(model), o(options) {}
  ~Impl() {
    if (fused_timeline) write_fused_timeline();
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    if (capture_stream) cudaStreamDestroy(capture_stream);
    if (lt) cublasLtDestroy(lt);
  }

  std::size_t cache_layer_elements() const { return std::size_t(B) * H * S * 64; }
  void* cache_layer(const DevicePtr& cache, int l) const {
    return static_cast<unsigned char*>(cache.get()) + cache_layer_elements() * l * gpt2::elem_bytes(m.elem);
  }

  void setup() {
    const auto& c = m.config;
    B = o.batch, S = o.max_context, C = c.width, H = c.heads, V = c.vocab, L = c.layers;
    if (B < 1) throw UsageError(fmt::format("batch must be >= 1, got {}", B));
    if (S < 1 || S > c.context)
      throw UsageError(fmt::format("max_context must be in [1, {}] for GPT-2 {}, got {}", c.context, c.name, S));
    const bool gemv_fits = B <= gpt2::gemv_max_batch && B * c.hidden() <= gpt2::gemv_max_staged_floats;
    gemm = o.gemm;
    if (gemm == GemmPath::automatic) gemm = gemv_fits ? GemmPath::gemv : GemmPath::cublas;
    if (gemm == GemmPath::gemv && !gemv_fits)
      throw UsageError(fmt::format("the GEMV kernels take batch <= {} with batch * {} <= {}; got batch {}. Use --gemm "
                                   "cublas or auto",
                                   gpt2::gemv_max_batch, c.hidden(), gpt2::gemv_max_staged_floats, B));
    pdl = o.pdl && device_has_pdl();
    gpt2::prepare_kernels();
    gpt2::attention_partition(B, H, S, m.sm_count, splits, chunk);
    argmax_grid = gpt2::gemv_grid(V, m.sm_count);
    choose_kernel();
    const int fused_groups = gpt2::fused_attention_groups(S);

    const std::size_t eb = gpt2::elem_bytes(m.elem);
    const std::string shape = fmt::format("batch {}, context {}", B, S);
    tokens = make_device(B * sizeof(int), "tokens");
    positions = make_device(B * sizeof(int), "positions");
    next_tokens = make_device(B * sizeof(int), "next tokens");
    x = make_device(std::size_t(B) * C * 4, "the residual stream");
    qkv = make_device(std::size_t(B) * 3 * C * 4, "q, k, v");
    attn_out = make_device(std::size_t(B) * C * eb, "attention output");
    hidden = make_device(std::size_t(B) * c.hidden() * eb, "MLP activations");
    normed = make_device(std::size_t(B) * C * eb, "layer-norm output");
    logits = make_device(std::size_t(B) * V * 4, "logits");
    attn_partial = make_device(std::size_t(B) * H * std::max(splits, fused_groups) * (64 + 2) * 4,
                               "attention partial results");
    attn_counters = make_device(std::size_t(B) * H * sizeof(unsigned), "attention counters");
    argmax_values = make_device(std::size_t(std::max(argmax_grid, fused_blocks)) * B * 4, "argmax partials");
    argmax_indices = make_device(std::size_t(std::max(argmax_grid, fused_blocks)) * B * 4, "argmax partials");
    argmax_counter = make_device(sizeof(unsigned), "argmax counter");
    k_cache = make_device(cache_layer_elements() * L * eb, fmt::format("the K cache ({})", shape));
    v_cache = make_device(cache_layer_elements() * L * eb, fmt::format("the V cache ({})", shape));
    RIDGE_CHECK(cudaMemset(attn_counters.get(), 0, std::size_t(B) * H * sizeof(unsigned)));
    RIDGE_CHECK(cudaMemset(argmax_counter.get(), 0, sizeof(unsigned)));
    RIDGE_CHECK(cudaMemset(k_cache.get(), 0, cache_layer_elements() * L * eb));
    RIDGE_CHECK(cudaMemset(v_cache.get(), 0, cache_layer_elements() * L * eb));
    std::vector<int> zeros(B, 0);
    RIDGE_CHECK(cudaMemcpy(tokens.get(), zeros.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    RIDGE_CHECK(cudaMemcpy(positions.get(), zeros.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    RIDGE_CHECK(cudaMemcpy(next_tokens.get(), zeros.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    host_positions.assign(B, 0);
    for (int l = 0; l < L; ++l) layer_names.push_back(fmt::format("layer {}", l));

    if (gemm == GemmPath::cublas) setup_cublas();
    if (fused_blocks > 0) setup_fused();
  }

  // The step's kernels: for the GEMV backend the one-kernel (barrier) step where it fits, else the
  // chain. RIDGE_GPT2_FUSED=0 stands for chain when the option says automatic.
  void choose_kernel() {
    const auto& c = m.config;
    const char* prefetch_env = std::getenv("RIDGE_GPT2_FUSED_PREFETCH");
    fused_prefetch = prefetch_env && std::string(prefetch_env) == "1";
    StepKernel want = o.kernel;
    if (const char* env = std::getenv("RIDGE_GPT2_FUSED"); env && std::string(env) == "0" && want == StepKernel::automatic)
      want = StepKernel::chain;
    if (gemm != GemmPath::gemv) {
      if (want == StepKernel::barrier)
        throw UsageError("the barrier step kernel runs with the gemv backend only; cuBLASLt runs a chain");
      kernel = StepKernel::chain;
      return;
    }
    if (want != StepKernel::chain) fused_blocks = gpt2::fused_grid(m.elem, B, C, H, c.hidden(), S, m.sm_count);
    if (want == StepKernel::barrier && fused_blocks == 0)
      throw UsageError(fmt::format("the barrier step kernel cannot run GPT-2 {} at batch {} and {} cache slots (its "
                                   "shared memory does not fit); use --kernel chain or auto",
                                   c.name, B, S));
    if (const int blocks = env_int("RIDGE_GPT2_FUSED_BLOCKS"); fused_blocks > 0 && blocks > 0)
      fused_blocks = std::min(fused_blocks, blocks);  // measurement knob: fewer blocks, cheaper barriers
    kernel = fused_blocks > 0 ? StepKernel::barrier : StepKernel::chain;
  }

  void setup_fused() {
    std::vector<gpt2::FusedLayer> layers;
    // Measurement knob: every layer reads layer 0's weights (14 MB for GPT-2 small, resident in the
    // L2 after the first layer), to tell the HBM weight stream's cost from the phases' latency. The
    // logits are then those of another model.
    const bool one_layer = env_int("RIDGE_GPT2_FUSED_ONE_LAYER_WEIGHTS") == 1;
    for (const auto& layer : m.layers) {
      const auto& w = one_layer ? m.layers.front() : layer;
      layers.push_back(gpt2::FusedLayer{w.attn_w, w.attn_proj_w, w.fc_w, w.fc_proj_w, w.ln1_w, w.ln1_b, w.attn_b,
                                        w.attn_proj_b, w.ln2_w, w.ln2_b, w.fc_b, w.fc_proj_b});
    }
    fused_layers = make_device(layers.size() * sizeof(gpt2::FusedLayer), "the fused step's layer table");
    RIDGE_CHECK(cudaMemcpy(fused_layers.get(), layers.data(), layers.size() * sizeof(gpt2::FusedLayer),
                           cudaMemcpyHostToDevice));
    fused_sync = make_device(2 * sizeof(unsigned), "the fused step's barrier");
    RIDGE_CHECK(cudaMemset(fused_sync.get(), 0, 2 * sizeof(unsigned)));
    if (const char* path = std::getenv("RIDGE_GPT2_FUSED_TIMELINE"); path && *path) {
      fused_timeline_path = path;
      fused_timeline = make_device(fused_timeline_bytes(), "the fused step's timeline");
      RIDGE_CHECK(cudaMemset(fused_timeline.get(), 0, fused_timeline_bytes()));
    }
  }

  std::size_t fused_timeline_bytes() const {
    return std::size_t(fused_blocks) * (5 * L + 1) * gpt2::fused_marks * 2 * sizeof(unsigned long long);
  }

  // Measurement only: the last step's per-block phase timeline as JSON (bench/fused_timeline.py
  // reads it). Runs from the destructor, so it reports failures instead of throwing.
  void write_fused_timeline() noexcept {
    std::vector<unsigned long long> t(fused_timeline_bytes() / sizeof(unsigned long long));
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(t.data(), fused_timeline.get(), fused_timeline_bytes(), cudaMemcpyDeviceToHost) != cudaSuccess) {
      std::fprintf(stderr, "ridge: could not read the fused step's timeline back; %s not written\n",
                   fused_timeline_path.c_str());
      return;
    }
    std::FILE* f = std::fopen(fused_timeline_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "ridge: cannot write %s: %s\n", fused_timeline_path.c_str(), std::strerror(errno));
      return;
    }
    std::fprintf(f, "{\"blocks\": %d, \"phases\": %d, \"marks\": [\"start\", \"staged\", \"computed\", \"arrived\"],\n",
                 fused_blocks, 5 * L + 1);
    std::fprintf(f, "\"layout\": \"[block][phase][mark][globaltimer ns, clock64]\", \"values\": [");
    for (std::size_t i = 0; i < t.size(); ++i) std::fprintf(f, "%s%llu", i ? "," : "", t[i]);
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }

  void launch_fused(cudaStream_t stream) {
    NvtxRange r("fused step");
    const auto& c = m.config;
    gpt2::FusedStepArgs a;
    a.layers = static_cast<const gpt2::FusedLayer*>(fused_layers.get());
    a.layer_count = L;
    a.wte = m.wte, a.wpe = m.wpe, a.lnf_w = m.lnf_w, a.lnf_b = m.lnf_b;
    a.tokens = static_cast<const int*>(tokens.get());
    a.positions = static_cast<const int*>(positions.get());
    a.next_tokens = static_cast<int*>(next_tokens.get());
    a.x = static_cast<float*>(x.get());
    a.qkv = static_cast<float*>(qkv.get());
    a.hidden = hidden.get();
    a.logits = static_cast<float*>(logits.get());
    a.attn_partial = static_cast<float*>(attn_partial.get());
    a.k_cache = k_cache.get(), a.v_cache = v_cache.get();
    a.cache_layer_elements = cache_layer_elements();
    a.best_values = static_cast<float*>(argmax_values.get());
    a.best_indices = static_cast<int*>(argmax_indices.get());
    a.sync = static_cast<unsigned*>(fused_sync.get());
    a.batch = B, a.width = C, a.heads = H, a.hidden_dim = c.hidden(), a.vocab = V, a.slots = S;
    a.eps = c.layer_norm_eps;
    a.prefetch = fused_prefetch;
    a.extra_barriers = env_int("RIDGE_GPT2_FUSED_EXTRA_BARRIERS");
    a.spin_sleep_ns = env_int("RIDGE_GPT2_FUSED_SPIN_NS");
    a.timeline = static_cast<unsigned long long*>(fused_timeline.get());
    gpt2::fused_step(a, m.elem, fused_blocks, stream);
  }

  void setup_cublas() {
    RIDGE_CHECK(cublasLtCreate(&lt));
    workspace = make_device(workspace_bytes, "the cuBLASLt workspace");
    const auto& c = m.config;
    const Elem e = m.elem;
    const cudaDataType_t f32 = CUDA_R_32F, act = cuda_type(e);
    const auto& w0 = m.layers[0];
    matmuls[0].create(lt, "c_attn", 3 * C, C, B, e, e, f32, CUBLASLT_EPILOGUE_BIAS, w0.attn_b, f32, workspace_bytes);
    matmuls[1].create(lt, "attn.c_proj", C, C, B, e, e, f32, CUBLASLT_EPILOGUE_BIAS, w0.attn_proj_b, f32,
                      workspace_bytes);
    matmuls[2].create(lt, "mlp.c_fc", c.hidden(), C, B, e, e, act, CUBLASLT_EPILOGUE_GELU_BIAS, w0.fc_b_act, act,
                      workspace_bytes);
    matmuls[3].create(lt, "mlp.c_proj", C, c.hidden(), B, e, e, f32, CUBLASLT_EPILOGUE_BIAS, w0.fc_proj_b, f32,
                      workspace_bytes);
    matmuls[4].create(lt, "lm_head", V, C, B, e, e, f32, CUBLASLT_EPILOGUE_DEFAULT, nullptr, f32, workspace_bytes);
  }

  void launch_step(cudaStream_t stream) {
    NvtxRange step_range("gpt2.step");
    if (fused_blocks > 0) return launch_fused(stream);
    const gpt2::LaunchConfig lc{stream, pdl};
    const auto& c = m.config;
    const float eps = c.layer_norm_eps;
    float* xf = static_cast<float*>(x.get());
    {
      NvtxRange r("embed");
      gpt2::embed(static_cast<int*>(tokens.get()), static_cast<int*>(positions.get()), m.wte, m.wpe, m.elem, xf, B, C,
                  lc);
    }
    for (int l = 0; l < L; ++l) {
      NvtxRange layer_range(layer_names[l]);
      const auto& w = m.layers[l];
      if (gemm == GemmPath::gemv) {
        {
          NvtxRange r("ln_1+c_attn");
          gpt2::GemvArgs g;
          g.weight = w.attn_w, g.n = 3 * C, g.k = C, g.batch = B;
          g.input = xf, g.gamma = w.ln1_w, g.beta = w.ln1_b, g.eps = eps;
          g.bias = w.attn_b, g.out = qkv.get(), g.epilogue = gpt2::GemvEpilogue::bias_f32;
          gpt2::gemv(g, m.elem, m.sm_count, lc);
        }
        attention(l, lc);
        {
          NvtxRange r("attn.c_proj");
          gpt2::GemvArgs g;
          g.weight = w.attn_proj_w, g.n = C, g.k = C, g.batch = B;
          g.input = attn_out.get(), g.bias = w.attn_proj_b, g.out = xf;
          g.epilogue = gpt2::GemvEpilogue::bias_residual;
          gpt2::gemv(g, m.elem, m.sm_count, lc);
        }
        {
          NvtxRange r("ln_2+mlp.c_fc");
          gpt2::GemvArgs g;
          g.weight = w.fc_w, g.n = c.hidden(), g.k = C, g.batch = B;
          g.input = xf, g.gamma = w.ln2_w, g.beta = w.ln2_b, g.eps = eps;
          g.bias = w.fc_b, g.out = hidden.get(), g.epilogue = gpt2::GemvEpilogue::bias_gelu;
          gpt2::gemv(g, m.elem, m.sm_count, lc);
        }
        {
          NvtxRange r("mlp.c_proj");
          gpt2::GemvArgs g;
          g.weight = w.fc_proj_w, g.n = C, g.k = c.hidden(), g.batch = B;
          g.input = hidden.get(), g.bias = w.fc_proj_b, g.out = xf;
          g.epilogue = gpt2::GemvEpilogue::bias_residual;
          gpt2::gemv(g, m.elem, m.sm_count, lc);
        }
      } else {
        void* ws = workspace.get();
        {
          NvtxRange r("ln_1");
          gpt2::layer_norm(xf, w.ln1_w, w.ln1_b, eps, normed.get(), m.elem, B, C, lc);
        }
        {
          NvtxRange r("c_attn");
          matmuls[0].run(lt, w.attn_w, normed.get(), qkv.get(), w.attn_b, 0.0f, ws, workspace_bytes, stream);
        }
        attention(l, lc);
        {
          NvtxRange r("attn.c_proj");
          matmuls[1].run(lt, w.attn_proj_w, attn_out.get(), xf, w.attn_proj_b, 1.0f, ws, workspace_bytes, stream);
        }
        {
          NvtxRange r("ln_2");
          gpt2::layer_norm(xf, w.ln2_w, w.ln2_b, eps, normed.get(), m.elem, B, C, lc);
        }
        {
          NvtxRange r("mlp.c_fc");
          matmuls[2].run(lt, w.fc_w, normed.get(), hidden.get(), w.fc_b_act, 0.0f, ws, workspace_bytes, stream);
        }
        {
          NvtxRange r("mlp.c_proj");
          matmuls[3].run(lt, w.fc_proj_w, hidden.get(), xf, w.fc_proj_b, 1.0f, ws, workspace_bytes, stream);
        }
      }
    }
    if (gemm == GemmPath::gemv) {
      NvtxRange r("ln_f+lm_head+argmax");
      gpt2::GemvArgs g;
      g.weight = m.wte, g.n = V, g.k = C, g.batch = B;
      g.input = xf, g.gamma = m.lnf_w, g.beta = m.lnf_b, g.eps = eps;
      g.out = logits.get(), g.epilogue = gpt2::GemvEpilogue::logits_argmax;
      g.partial_values = static_cast<float*>(argmax_values.get());
      g.partial_indices = static_cast<int*>(argmax_indices.get());
      g.counter = static_cast<unsigned*>(argmax_counter.get());
      g.next_tokens = static_cast<int*>(next_tokens.get());
      gpt2::gemv(g, m.elem, m.sm_count, lc);
    } else {
      {
        NvtxRange r("ln_f");
        gpt2::layer_norm(xf, m.lnf_w, m.lnf_b, eps, normed.get(), m.elem, B, C, lc);
      }
      {
        NvtxRange r("lm_head");
        matmuls[4].run(lt, m.wte, normed.get(), logits.get(), nullptr, 0.0f, workspace.get(), workspace_bytes, stream);
      }
      NvtxRange r("argmax");
      gpt2::argmax(static_cast<float*>(logits.get()), B, V, static_cast<int*>(next_tokens.get()), lc);
    }
  }

  void attention(int l, const gpt2::LaunchConfig& lc) {
    NvtxRange r("attention");
    gpt2::AttentionArgs a;
    a.qkv = static_cast<const float*>(qkv.get());
    a.k_cache = cache_layer(k_cache, l);
    a.v_cache = cache_layer(v_cache, l);
    a.positions = static_cast<const int*>(positions.get());
    a.out = attn_out.get();
    a.partial = static_cast<float*>(attn_partial.get());
    a.counters = static_cast<unsigned*>(attn_counters.get());
    a.batch = B, a.heads = H, a.slots = S, a.splits = splits, a.chunk = chunk;
    // Cached rows worth prefetching: up to the longest sequence now (a graph keeps the value it
    // was captured with; a stale hint only costs bandwidth, never correctness).
    a.prefetch_positions = *std::max_element(host_positions.begin(), host_positions.end());
    gpt2::attention(a, m.elem, lc);
  }

  void capture() {
    if (graph_exec) return;
    RIDGE_CHECK(cudaDeviceSynchronize());
    RIDGE_CHECK(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking));
    // One eager step first: lazy initialisation (cuBLASLt, module loading) must not happen during capture.
    launch_step(capture_stream);
    RIDGE_CHECK(cudaStreamSynchronize(capture_stream));
    RIDGE_CHECK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal));
    try {
      launch_step(capture_stream);
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(capture_stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      cudaGetLastError();
      throw;
    }
    const cudaError_t status = cudaStreamEndCapture(capture_stream, &graph);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(fmt::format("capturing the GPT-2 step into a CUDA graph failed: {}{}", detail::status_text(status),
                              pdl ? " (try --no-pdl)" : ""));
    }
    RIDGE_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  }

  void check_positions_room() const {
    for (int b = 0; b < B; ++b)
      if (host_positions[b] >= S)
        throw UsageError(fmt::format("sequence {} holds {} tokens, the decoder's whole context ({}): no room for a "
                                     "step",
                                     b, host_positions[b], S));
  }
};

Decoder::Decoder(const Model& model, DecoderOptions options)
    : impl_(std::make_unique<Impl>(model.impl(), options)) {
  impl_->setup();
}

Decoder::~Decoder() = default;

const DecoderOptions& Decoder::options() const { return impl_->o; }
GemmPath Decoder::gemm() const { return impl_->gemm; }
StepKernel Decoder::kernel() const { return impl_->kernel; }

void Decoder::set_tokens(const std::vector<int>& tokens) {
  auto& s = *impl_;
  if (static_cast<int>(tokens.size()) != s.B)
    throw UsageError(fmt::format("set_tokens: {} tokens for a batch of {}", tokens.size(), s.B));
  for (int t : tokens)
    if (t < 0 || t >= s.V) throw UsageError(fmt::format("token {} is outside the vocabulary [0, {})", t, s.V));
  RIDGE_CHECK(cudaDeviceSynchronize());  // no step may still read the old tokens
  RIDGE_CHECK(cudaMemcpy(s.tokens.get(), tokens.data(), tokens.size() * sizeof(int), cudaMemcpyHostToDevice));
  RIDGE_CHECK(cudaDeviceSynchronize());  // visible to work on any stream, blocking or not
}

void Decoder::set_positions(const std::vector<int>& positions) {
  auto& s = *impl_;
  if (static_cast<int>(positions.size()) != s.B)
    throw UsageError(fmt::format("set_positions: {} positions for a batch of {}", positions.size(), s.B));
  for (int p : positions)
    if (p < 0 || p >= s.S)
      throw UsageError(fmt::format("position {} is outside the decoder's context [0, {})", p, s.S));
  RIDGE_CHECK(cudaDeviceSynchronize());
  RIDGE_CHECK(cudaMemcpy(s.positions.get(), positions.data(), positions.size() * sizeof(int), cudaMemcpyHostToDevice));
  RIDGE_CHECK(cudaDeviceSynchronize());
  s.host_positions = positions;
}

std::vector<int> Decoder::positions() const { return impl_->host_positions; }

void Decoder::fill_random_cache(int context, std::uint64_t seed) {
  auto& s = *impl_;
  if (context < 0 || context >= s.S)
    throw UsageError(fmt::format("context {} leaves no room for a step in a decoder of {} slots (need context < {})",
                                 context, s.S, s.S));
  for (int l = 0; l < s.L; ++l)
    gpt2::fill_cache(s.cache_layer(s.k_cache, l), s.cache_layer(s.v_cache, l), s.m.elem, l, s.B, s.H, s.S,
                     s.m.config.context, context, seed, nullptr);
  RIDGE_CHECK(cudaDeviceSynchronize());
  std::vector<int> tokens(s.B);
  for (int b = 0; b < s.B; ++b)
    tokens[b] = static_cast<int>((uniform(mix(seed + 77), b) * 0.5f + 0.5f) * s.V) % s.V;
  set_tokens(tokens);
  set_positions(std::vector<int>(s.B, context));
}

void Decoder::launch_step(cuda_stream stream) {
  impl_->check_positions_room();
  impl_->launch_step(stream);
}

void Decoder::step(Mode mode, cuda_stream stream) {
  auto& s = *impl_;
  s.check_positions_room();
  if (mode == Mode::eager) return s.launch_step(stream);
  s.capture();
  NvtxRange r("gpt2.step (graph)");
  RIDGE_CHECK(cudaGraphLaunch(s.graph_exec, stream));
}

void Decoder::advance(cuda_stream stream) {
  auto& s = *impl_;
  for (int b = 0; b < s.B; ++b)
    if (s.host_positions[b] >= s.S)
      throw UsageError(fmt::format("sequence {} cannot advance past the decoder's context of {}", b, s.S));
  gpt2::advance(static_cast<int*>(s.tokens.get()), static_cast<int*>(s.positions.get()),
                static_cast<const int*>(s.next_tokens.get()), s.B, stream);
  for (auto& p : s.host_positions) ++p;
}

void Decoder::warmup(Mode mode, int steps, cuda_stream stream) {
  for (int i = 0; i < steps; ++i) step(mode, stream);
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  RIDGE_CHECK(cudaDeviceSynchronize());
}

std::vector<float> Decoder::logits() const {
  auto& s = *impl_;
  RIDGE_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(std::size_t(s.B) * s.V);
  RIDGE_CHECK(cudaMemcpy(out.data(), s.logits.get(), out.size() * 4, cudaMemcpyDeviceToHost));
  return out;
}

std::vector<int> Decoder::next_tokens() const {
  auto& s = *impl_;
  RIDGE_CHECK(cudaDeviceSynchronize());
  std::vector<int> out(s.B);
  RIDGE_CHECK(cudaMemcpy(out.data(), s.next_tokens.get(), out.size() * sizeof(int), cudaMemcpyDeviceToHost));
  return out;
}

StepCost Decoder::cost(int context) const {
  const double eb = gpt2::elem_bytes(impl_->m.elem);
  return step_cost(impl_->m.config, eb, eb, impl_->B, context);
}

int Decoder::kernels_per_step() const {
  const auto& s = *impl_;
  if (s.fused_blocks > 0) return 1;
  return s.gemm == GemmPath::gemv ? 2 + 5 * s.L : 4 + 7 * s.L;
}

}  // namespace ridge::gpt2
