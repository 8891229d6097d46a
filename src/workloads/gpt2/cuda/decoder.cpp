// GPT-2 decode on the GPU: the decoder's buffers, the choice of step kernels, the step's launch
// sequence (GEMV chain, cuBLASLt chain or one fused kernel; eager or as a graph) and its NVTX
// ranges. Kernels are in kernels.cu and fused_step.cu.
#include "ridge/gpt2/model.hpp"

#include <algorithm>
#include <array>
#include <iterator>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"
#include "workloads/gpt2/cuda/cublaslt_matmul.hpp"
#include "workloads/gpt2/cuda/device_memory.hpp"
#include "workloads/gpt2/cuda/kernels.hpp"
#include "workloads/gpt2/cuda/model_impl.hpp"

namespace ridge::gpt2 {

namespace {

// An NVTX range for the lifetime of the object (host-side marks; free when no tool listens).
struct NvtxRange {
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
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
  std::vector<int> host_positions;
  std::vector<std::string> layer_names;  // NVTX range names, formatted once

  DevicePtr tokens, positions, next_tokens, x, qkv, attn_out, hidden, normed, logits, attn_partial, attn_counters,
      argmax_values, argmax_indices, argmax_counter, k_cache, v_cache, fused_layers, fused_sync, fused_timeline;

  cublasLtHandle_t lt = nullptr;
  DevicePtr workspace;
  std::size_t workspace_bytes = 32u << 20;
  std::array<LtMatmul, 5> matmuls;  // c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, lm_head

  cudaStream_t capture_stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;

  Impl(const Model::Impl& model, DecoderOptions options) : m(model), o(options) {}
  ~Impl() {
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
      throw UsageError(fmt::format("the GEMV kernels take batch <= {} with batch * {} <= {}; got batch {}. Set gemm "
                                   "to cublas or auto",
                                   gpt2::gemv_max_batch, c.hidden(), gpt2::gemv_max_staged_floats, B));
    pdl = o.pdl && device_has_pdl();
    gpt2::prepare_kernels();
    gpt2::attention_partition(B, H, S, m.sm_count, splits, chunk);
    argmax_grid = gpt2::gemv_grid(V, m.sm_count);
    choose_kernel();
    allocate_buffers();
    if (gemm == GemmPath::cublas) setup_cublas();
    if (fused_blocks > 0) setup_fused();
  }

  // The step's activations, cache and scratch, zeroed; tokens and positions 0.
  void allocate_buffers() {
    const auto& c = m.config;
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
  }

  // The step's kernels: for the GEMV backend the one-kernel (barrier) step where it fits, else the
  // chain. The barrier kernel's own options need it to run.
  void choose_kernel() {
    const auto& c = m.config;
    if (gemm != GemmPath::gemv) {
      if (o.kernel == StepKernel::barrier)
        throw UsageError("the barrier step kernel runs with the gemv backend only; cuBLASLt runs a chain");
      kernel = StepKernel::chain;
    } else {
      if (o.kernel != StepKernel::chain) fused_blocks = gpt2::fused_grid(m.elem, B, C, H, c.hidden(), S, m.sm_count);
      if (o.kernel == StepKernel::barrier && fused_blocks == 0)
        throw UsageError(fmt::format("the barrier step kernel cannot run GPT-2 {} at batch {} and {} cache slots (its "
                                     "shared memory does not fit); set kernel to chain or auto",
                                     c.name, B, S));
      kernel = fused_blocks > 0 ? StepKernel::barrier : StepKernel::chain;
    }
    if (kernel != StepKernel::barrier && (o.l2_prefetch || o.record_timeline))
      throw UsageError(fmt::format("{} belongs to the barrier step kernel, but this step runs as a chain ({} backend, "
                                   "batch {}); set kernel to barrier and gemm to gemv or auto",
                                   o.l2_prefetch ? "the L2 prefetch" : "the phase timeline", to_string(gemm), B));
  }

  void setup_fused() {
    std::vector<gpt2::FusedLayer> layers;
    for (const auto& w : m.layers) {
      layers.push_back(gpt2::FusedLayer{w.attn_w, w.attn_proj_w, w.fc_w, w.fc_proj_w, w.ln1_w, w.ln1_b, w.attn_b,
                                        w.attn_proj_b, w.ln2_w, w.ln2_b, w.fc_b, w.fc_proj_b});
    }
    fused_layers = make_device(layers.size() * sizeof(gpt2::FusedLayer), "the fused step's layer table");
    RIDGE_CHECK(cudaMemcpy(fused_layers.get(), layers.data(), layers.size() * sizeof(gpt2::FusedLayer),
                           cudaMemcpyHostToDevice));
    fused_sync = make_device(2 * sizeof(unsigned), "the fused step's barrier");
    RIDGE_CHECK(cudaMemset(fused_sync.get(), 0, 2 * sizeof(unsigned)));
    if (o.record_timeline) {
      fused_timeline = make_device(fused_timeline_bytes(), "the fused step's timeline");
      RIDGE_CHECK(cudaMemset(fused_timeline.get(), 0, fused_timeline_bytes()));
    }
  }

  std::size_t fused_timeline_bytes() const {
    return std::size_t(fused_blocks) * (5 * L + 1) * gpt2::fused_marks * 2 * sizeof(unsigned long long);
  }

  // The last step's per-block phase timeline as JSON (bench/fused_timeline.py reads it).
  void write_timeline(const std::string& path) const {
    if (!fused_timeline)
      throw UsageError("this decoder records no phase timeline; construct it with record_timeline (barrier kernel)");
    std::vector<unsigned long long> t(fused_timeline_bytes() / sizeof(unsigned long long));
    RIDGE_CHECK(cudaDeviceSynchronize());
    RIDGE_CHECK(cudaMemcpy(t.data(), fused_timeline.get(), fused_timeline_bytes(), cudaMemcpyDeviceToHost));
    std::string json = fmt::format(
        "{{\"blocks\": {}, \"phases\": {}, \"marks\": [\"start\", \"staged\", \"computed\", \"arrived\"],\n"
        "\"layout\": \"[block][phase][mark][globaltimer ns, clock64]\", \"values\": [",
        fused_blocks, 5 * L + 1);
    for (std::size_t i = 0; i < t.size(); ++i) fmt::format_to(std::back_inserter(json), "{}{}", i ? "," : "", t[i]);
    json += "]}\n";
    write_text(path, json);
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
    a.prefetch = o.l2_prefetch;
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
      if (gemm == GemmPath::gemv)
        launch_gemv_layer(l, lc);
      else
        launch_cublas_layer(l, lc);
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

  // One block through ridge's GEMV kernels: layer norm, bias, GELU and residual fused in.
  void launch_gemv_layer(int l, const gpt2::LaunchConfig& lc) {
    const auto& c = m.config;
    const float eps = c.layer_norm_eps;
    float* xf = static_cast<float*>(x.get());
    const auto& w = m.layers[l];
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
  }

  // One block through cuBLASLt (bias / GELU epilogues) with separate layer-norm kernels.
  void launch_cublas_layer(int l, const gpt2::LaunchConfig& lc) {
    const float eps = m.config.layer_norm_eps;
    float* xf = static_cast<float*>(x.get());
    const auto& w = m.layers[l];
    cudaStream_t stream = lc.stream;
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
                              pdl ? " (try with pdl off)" : ""));
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

void Decoder::write_timeline(const std::string& path) const { impl_->write_timeline(path); }

int Decoder::kernels_per_step() const {
  const auto& s = *impl_;
  if (s.fused_blocks > 0) return 1;
  return s.gemm == GemmPath::gemv ? 2 + 5 * s.L : 4 + 7 * s.L;
}

}  // namespace ridge::gpt2