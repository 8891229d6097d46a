// cuBLAS and cuBLASLt, loaded on their first call rather than when ridge loads.
//
// Linked directly, the two libraries are mapped as ridge starts: about 150 MB of memory and 0.1 s
// for every `import ridge` and every `ridge` command, most of which never run a GEMM. Each entry
// point ridge uses is defined here with the header's own signature and forwards to the library,
// opened (by soname, so a copy a framework already loaded is shared) the first time one is called.
#include <dlfcn.h>

#include <cstdint>
#include <string>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <fmt/format.h>

#include "ridge/errors.hpp"

#ifndef RIDGE_CUDA_LIBRARY_DIR
#define RIDGE_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

namespace ridge::detail {
namespace {

// The soname first (a copy already loaded, or one the loader finds), then the toolkit ridge was
// built with: ridge no longer links cuBLAS, so its run path does not name that folder for the loader.
void* open_cuda_library(const char* soname) {
  std::string reason;
  for (const std::string& candidate : {std::string(soname), std::string(RIDGE_CUDA_LIBRARY_DIR) + "/" + soname,
                                       std::string("/usr/local/cuda/lib64/") + soname}) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    if (reason.empty()) reason = dlerror();
  }
  throw MissingLibraryError(fmt::format(
      "{} (cuBLAS, from the CUDA 13 toolkit) could not be loaded: {}. ridge loads it at its first GEMM: install the "
      "CUDA 13 toolkit's cuBLAS, or add the folder that holds it to LD_LIBRARY_PATH",
      soname, reason));
}

enum class CublasLibrary { blas, lt };

void* cublas_symbol(CublasLibrary library, const char* name) {
  static void* const lt = open_cuda_library("libcublasLt.so.13");  // cuBLAS needs it too: opened first
  void* const handle = library == CublasLibrary::lt ? lt : [] {
    static void* const blas = open_cuda_library("libcublas.so.13");
    return blas;
  }();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr)
    throw MissingLibraryError(fmt::format("the loaded cuBLAS lacks {}: it is older than CUDA 13; install the CUDA 13 "
                                          "toolkit's cuBLAS",
                                          name));
  return symbol;
}

}  // namespace
}  // namespace ridge::detail

// Each resolves its entry point once (a function-local static), then calls straight through.
#define RIDGE_CUBLAS_FORWARD(library, result, name, params, args)                                            \
  extern "C" result CUBLASWINAPI name params {                                                               \
    using Real = result(CUBLASWINAPI*) params; /* not decltype(&name): cuBLAS overloads some in C++ */       \
    static const auto real = reinterpret_cast<Real>(                                                         \
        ridge::detail::cublas_symbol(ridge::detail::CublasLibrary::library, #name));                         \
    return real args;                                                                                        \
  }

RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmul,
                     (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                      cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                      const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                      const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
                     (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                      workspace_bytes, stream))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatrixLayoutCreate,
                     (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
                     (layout, type, rows, cols, ld))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulDescCreate,
                     (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                     (desc, compute, scale))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulDescSetAttribute,
                     (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t bytes),
                     (desc, attr, buf, bytes))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
                     (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                      size_t bytes),
                     (pref, attr, buf, bytes))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
                     (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                      cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                      cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
                      int* returned),
                     (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requested, results, returned))
RIDGE_CUBLAS_FORWARD(lt, cublasStatus_t, cublasLtMatmulAlgoConfigGetAttribute,
                     (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                      size_t bytes, size_t* written),
                     (algo, attr, buf, bytes, written))
RIDGE_CUBLAS_FORWARD(blas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
RIDGE_CUBLAS_FORWARD(blas, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))
RIDGE_CUBLAS_FORWARD(blas, cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t handle, void* workspace, size_t bytes),
                     (handle, workspace, bytes))
RIDGE_CUBLAS_FORWARD(blas, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                     (handle, stream))
RIDGE_CUBLAS_FORWARD(blas, const char*, cublasGetStatusName, (cublasStatus_t status), (status))
RIDGE_CUBLAS_FORWARD(blas, const char*, cublasGetStatusString, (cublasStatus_t status), (status))
RIDGE_CUBLAS_FORWARD(blas, cublasStatus_t, cublasGemmEx,
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                      const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                      int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                      cublasGemmAlgo_t algo),
                     (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, compute,
                      algo))
