#include "ridge/detail/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "measure/cuda/random_fill.hpp"
#include "measure/cuda/launchers.hpp"

namespace ridge::detail {

namespace {

struct TypeInfo {
  cudaDataType_t ab, c;
  cublasComputeType_t compute;
  std::size_t ab_bytes, c_bytes;
  double tolerance;
};

TypeInfo type_info(DType t) {
  switch (t) {
    case DType::fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 5e-5};
    case DType::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 4e-3};
    case DType::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 2e-3};
    case DType::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 1e-2};
    case DType::fp8_e4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 2e-2};
    case DType::fp64: return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 8, 8, 1e-12};
  }
  throw UsageError("unsupported GEMM dtype");
}

double to_double(const void* base, std::size_t i, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(base)[i];
    case CUDA_R_64F: return static_cast<const double*>(base)[i];
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(base)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case CUDA_R_8F_E4M3: return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(base)[i]);
    default: return NAN;
  }
}

}  // namespace

std::string GemmCheck::summary() const {
  return fmt::format("{} ({} entries vs fp64 reference, max error {:.2e} of sum|a*b|, tolerance {:.1e}, {} non-finite)",
                     passed ? "passed" : "FAILED", checked, max_error, tolerance, non_finite);
}

struct Gemm::Impl {
  GemmShape shape;
  DType dtype;
  GemmBackend backend = GemmBackend::cublaslt;
  TypeInfo info;
  cublasHandle_t blas = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 32u << 20;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  float alpha = 1.0f, beta = 0.0f;
  double alpha_d = 1.0, beta_d = 0.0;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string tuning;

  ~Impl() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (handle) cublasLtDestroy(handle);
    if (blas) cublasDestroy(blas);
    for (void* p : {a, b, c, workspace})
      if (p) cudaFree(p);
  }

  void allocate(void** p, std::size_t bytes, const char* what) {
    const cudaError_t status = cudaMalloc(p, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(fmt::format("cannot allocate {} for GEMM {}x{}x{} {} ({:.2f} GB): {}. Use smaller sizes", what,
                              shape.m, shape.n, shape.k, to_string(dtype), bytes / 1e9, detail::status_text(status)));
    }
  }
};

Gemm::Gemm(GemmShape shape, DType dtype, std::uint64_t seed, GemmBackend backend) : impl_(std::make_unique<Impl>()) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0)
    throw UsageError(fmt::format("GEMM sizes must be > 0, got m={} n={} k={}", shape.m, shape.n, shape.k));
  auto& s = *impl_;
  s.shape = shape;
  s.dtype = dtype;
  s.backend = backend;
  s.info = type_info(dtype);
  if (backend == GemmBackend::cublas_rowmajor && dtype == DType::fp8_e4m3)
    throw UsageError("the cublas backend has no fp8 GEMM; use the cublaslt backend");
  int device = 0, major = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  int minor = 0;
  RIDGE_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (dtype == DType::fp8_e4m3 && major * 10 + minor < 89)
    throw UsageError(fmt::format("fp8 GEMM needs compute capability 8.9 or newer; this device is {}.{}", major, minor));
  if ((dtype == DType::bf16 || dtype == DType::tf32) && major < 8)
    throw UsageError(fmt::format("{} GEMM needs compute capability 8.0 or newer; this device is {}.{}",
                                 to_string(dtype), major, minor));

  const auto [m, n, k] = std::tuple{shape.m, shape.n, shape.k};
  s.allocate(&s.a, m * k * s.info.ab_bytes, "A");
  s.allocate(&s.b, k * n * s.info.ab_bytes, "B");
  s.allocate(&s.c, m * n * s.info.c_bytes, "C");
  s.allocate(&s.workspace, s.workspace_bytes, "the cuBLASLt workspace");
  fill_random(s.a, m * k, s.info.ab, seed * 2 + 1, nullptr);
  fill_random(s.b, k * n, s.info.ab, seed * 2 + 2, nullptr);

  if (backend == GemmBackend::cublas_rowmajor) {
    RIDGE_CHECK(cublasCreate(&s.blas));
    RIDGE_CHECK(cublasSetWorkspace(s.blas, s.workspace, s.workspace_bytes));
    RIDGE_CHECK(cudaDeviceSynchronize());
    return;
  }
  RIDGE_CHECK(cublasLtCreate(&s.handle));
  const cudaDataType_t scale = dtype == DType::fp64 ? CUDA_R_64F : CUDA_R_32F;
  RIDGE_CHECK(cublasLtMatmulDescCreate(&s.desc, s.info.compute, scale));
  // A is stored row-major [m,k] (= column-major [k,m]) and used transposed: the "TN" layout,
  // which every dtype (fp8 included) supports, with both operands contiguous along k.
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  RIDGE_CHECK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
  RIDGE_CHECK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
  RIDGE_CHECK(cublasLtMatrixLayoutCreate(&s.la, s.info.ab, k, m, k));
  RIDGE_CHECK(cublasLtMatrixLayoutCreate(&s.lb, s.info.ab, k, n, k));
  RIDGE_CHECK(cublasLtMatrixLayoutCreate(&s.lc, s.info.c, m, n, m));
  RIDGE_CHECK(cublasLtMatmulPreferenceCreate(&s.pref));
  RIDGE_CHECK(cublasLtMatmulPreferenceSetAttribute(s.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &s.workspace_bytes, sizeof s.workspace_bytes));
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(s.handle, s.desc, s.la, s.lb, s.lc, s.lc, s.pref, 1, &s.heuristic, &found);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    throw UsageError(fmt::format("cuBLASLt has no algorithm for a {} GEMM {}x{}x{} on this device ({})",
                                 to_string(dtype), m, n, k, detail::status_text(status)));
  RIDGE_CHECK(cudaDeviceSynchronize());
}

Gemm::~Gemm() = default;

void Gemm::run(cuda_stream stream) {
  auto& s = *impl_;
  const void* alpha = s.dtype == DType::fp64 ? static_cast<const void*>(&s.alpha_d) : &s.alpha;
  const void* beta = s.dtype == DType::fp64 ? static_cast<const void*>(&s.beta_d) : &s.beta;
  if (s.backend == GemmBackend::cublas_rowmajor) {
    // Row-major C = A B is column-major C^T = B^T A^T: the "NN" call PyTorch makes for `a @ b`.
    const auto [m, n, k] = std::tuple{s.shape.m, s.shape.n, s.shape.k};
    RIDGE_CHECK(cublasSetStream(s.blas, stream));
    RIDGE_CHECK(cublasGemmEx(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                             static_cast<int>(k), alpha, s.b, s.info.ab, static_cast<int>(n), s.a, s.info.ab,
                             static_cast<int>(k), beta, s.c, s.info.c, static_cast<int>(n), s.info.compute,
                             CUBLAS_GEMM_DEFAULT));
    return;
  }
  RIDGE_CHECK(cublasLtMatmul(s.handle, s.desc, alpha, s.a, s.la, s.b, s.lb, beta, s.c, s.lc, s.c, s.lc,
                             &s.heuristic.algo, s.workspace, s.workspace_bytes, stream));
}

GemmCheck Gemm::verify(std::int64_t sampled_entries) {
  auto& s = *impl_;
  const auto [m, n, k] = std::tuple{s.shape.m, s.shape.n, s.shape.k};
  RIDGE_CHECK(cudaMemset(s.c, 0xff, m * n * s.info.c_bytes));  // NaN in every float format
  run(nullptr);
  RIDGE_CHECK(cudaDeviceSynchronize());

  GemmCheck result;
  result.tolerance = s.info.tolerance;
  unsigned long long* counter = nullptr;
  RIDGE_CHECK(cudaMalloc(reinterpret_cast<void**>(&counter), sizeof *counter));
  RIDGE_CHECK(cudaMemset(counter, 0, sizeof *counter));
  const std::int64_t total = m * n;
  launch_count_non_finite(s.c, total, s.info.c, counter, nullptr);
  unsigned long long bad = 0;
  RIDGE_CHECK(cudaMemcpy(&bad, counter, sizeof bad, cudaMemcpyDeviceToHost));
  RIDGE_CHECK(cudaFree(counter));
  result.non_finite = static_cast<std::int64_t>(bad);

  // Choose rows and columns: all of them when the full product is cheap, else a random sample.
  std::mt19937_64 rng(12345);
  const bool full = static_cast<double>(m) * n * k <= (1ll << 27);
  const std::int64_t side = full ? 0 : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::sqrt(double(sampled_entries))));
  std::vector<std::int64_t> rows, cols;
  for (std::int64_t i = 0; i < (full ? m : std::min(m, side)); ++i) rows.push_back(full ? i : std::int64_t(rng() % m));
  for (std::int64_t j = 0; j < (full ? n : std::min(n, side)); ++j) cols.push_back(full ? j : std::int64_t(rng() % n));

  const std::size_t ab = s.info.ab_bytes, cb = s.info.c_bytes;
  std::vector<unsigned char> a_rows(rows.size() * k * ab), b_cols(cols.size() * k * ab);
  for (std::size_t r = 0; r < rows.size(); ++r)
    RIDGE_CHECK(cudaMemcpy(a_rows.data() + r * k * ab, static_cast<char*>(s.a) + rows[r] * k * ab, k * ab,
                           cudaMemcpyDeviceToHost));
  const bool row_major = s.backend == GemmBackend::cublas_rowmajor;
  if (row_major) {  // B is [k,n] row-major: gather the chosen columns from a host copy
    std::vector<unsigned char> b_all(k * n * ab);
    RIDGE_CHECK(cudaMemcpy(b_all.data(), s.b, b_all.size(), cudaMemcpyDeviceToHost));
    for (std::size_t c = 0; c < cols.size(); ++c)
      for (std::int64_t l = 0; l < k; ++l)
        std::memcpy(b_cols.data() + (c * k + l) * ab, b_all.data() + (l * n + cols[c]) * ab, ab);
  } else {
    for (std::size_t c = 0; c < cols.size(); ++c)
      RIDGE_CHECK(cudaMemcpy(b_cols.data() + c * k * ab, static_cast<char*>(s.b) + cols[c] * k * ab, k * ab,
                             cudaMemcpyDeviceToHost));
  }
  std::vector<double> a_d(a_rows.size() / ab), b_d(b_cols.size() / ab);
  for (std::size_t i = 0; i < a_d.size(); ++i) a_d[i] = to_double(a_rows.data(), i, s.info.ab);
  for (std::size_t i = 0; i < b_d.size(); ++i) b_d[i] = to_double(b_cols.data(), i, s.info.ab);

  std::vector<unsigned char> c_host(cb);
  std::vector<unsigned char> c_all;
  if (full) {
    c_all.resize(m * n * cb);
    RIDGE_CHECK(cudaMemcpy(c_all.data(), s.c, c_all.size(), cudaMemcpyDeviceToHost));
  }
  double worst = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const double* ar = &a_d[r * k];
      const double* bc = &b_d[c * k];
      double ref = 0, scale = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        ref += ar[l] * bc[l];
        scale += std::abs(ar[l] * bc[l]);
      }
      const std::int64_t index = row_major ? rows[r] * n + cols[c] : cols[c] * m + rows[r];
      double got;
      if (full) {
        got = to_double(c_all.data(), index, s.info.c);
      } else {
        RIDGE_CHECK(cudaMemcpy(c_host.data(), static_cast<char*>(s.c) + index * cb, cb, cudaMemcpyDeviceToHost));
        got = to_double(c_host.data(), 0, s.info.c);
      }
      const double err = std::isfinite(got) ? std::abs(got - ref) / (scale + 1e-30) : INFINITY;
      worst = std::max(worst, err);
      ++result.checked;
    }
  }
  result.max_error = worst;
  result.passed = result.non_finite == 0 && worst <= result.tolerance;
  return result;
}

int Gemm::tune(int top_k, cuda_stream stream) {
  auto& s = *impl_;
  if (top_k < 1) throw UsageError(fmt::format("tune: top_k must be >= 1, got {}", top_k));
  std::vector<cublasLtMatmulHeuristicResult_t> candidates(static_cast<std::size_t>(top_k));
  int found = 0;
  RIDGE_CHECK(cublasLtMatmulAlgoGetHeuristic(s.handle, s.desc, s.la, s.lb, s.lc, s.lc, s.pref, top_k,
                                             candidates.data(), &found));
  const cublasLtMatmulHeuristicResult_t first = s.heuristic;
  // Each candidate is timed launch-free (graph replay, medians): back-to-back launches of a
  // microsecond GEMM measure the host's launch rate, not the kernel, and made the pick flip
  // between runs. A later candidate must beat the best so far by 2% to replace it, so near-ties
  // keep cuBLASLt's own order and the choice is stable from run to run.
  int ran = 0, best = -1;
  double best_ms = INFINITY, first_ms = INFINITY;
  for (int i = 0; i < found; ++i) {
    const auto& h = candidates[static_cast<std::size_t>(i)];
    if (h.state != CUBLAS_STATUS_SUCCESS || h.workspaceSize > s.workspace_bytes) continue;
    s.heuristic = h;
    double ms = INFINITY;
    try {
      CudaOptions timing;
      timing.warmup = 2;
      timing.samples = 7;
      timing.repeats = 0;
      timing.target_sample_ms = 0.2;
      timing.stream = stream;
      ms = measure_graph([&](cuda_stream st) { run(st); }, timing).summary.median;
    } catch (const Error&) {
      cudaGetLastError();  // cuBLASLt refused this candidate: skip it
      continue;
    }
    if (!std::isfinite(ms)) continue;
    ++ran;
    if (i == 0) first_ms = ms;
    if (best < 0 || ms < best_ms * 0.98) {
      best_ms = ms;
      best = i;
    }
  }
  cudaGetLastError();
  if (best < 0) {
    s.heuristic = first;
    s.tuning = "tuning found no runnable candidate; kept cuBLASLt's first choice";
    return 0;
  }
  s.heuristic = candidates[static_cast<std::size_t>(best)];
  s.tuning = std::isfinite(first_ms)
                 ? fmt::format("fastest of {} cuBLASLt candidates: #{}, {:.1f}% faster than #0", ran, best,
                               (first_ms / best_ms - 1) * 100)
                 : fmt::format("fastest of {} cuBLASLt candidates: #{}", ran, best);
  return ran;
}

std::string Gemm::tuning() const { return impl_->tuning; }

GemmShape Gemm::shape() const { return impl_->shape; }
DType Gemm::dtype() const { return impl_->dtype; }
GemmBackend Gemm::backend() const { return impl_->backend; }
double Gemm::flops() const { return 2.0 * impl_->shape.m * impl_->shape.n * impl_->shape.k; }
double Gemm::bytes() const {
  const auto& s = *impl_;
  return double(s.shape.m * s.shape.k + s.shape.k * s.shape.n) * s.info.ab_bytes +
         double(s.shape.m * s.shape.n) * s.info.c_bytes;
}

std::string Gemm::algorithm() const {
  if (impl_->backend == GemmBackend::cublas_rowmajor) return "cublasGemmEx NN (row-major, as PyTorch calls it), CUBLAS_GEMM_DEFAULT";
  const auto& h = impl_->heuristic;
  int id = -1, tile = -1, stages = -1;
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &written);
  return fmt::format("cublasLt algo {} tile {} stages {} workspace {} B", id, tile, stages, h.workspaceSize);
}

}  // namespace ridge::detail
