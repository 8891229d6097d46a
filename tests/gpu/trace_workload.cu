// The tracer's known workload (see trace_workload.hpp). No fmt here: this is a .cu file.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "measure/cuda/cuda_check.hpp"
#include "measure/cuda/probes.hpp"
#include "trace_workload.hpp"

__global__ void target_add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void numbered_step_kernel() {}

__global__ void identical_copy(const float* __restrict__ x, float* __restrict__ y, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

namespace trace_workload {

int numbered_steps::run(int steps) {
  cudaStream_t stream = nullptr;
  RIDGE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA(step_range);
    for (int i = 0; i < kernels_per_step; ++i) {
      numbered_step_kernel<<<s + 1, 32, 0, stream>>>();
      RIDGE_CHECK_LAUNCH();
    }
    RIDGE_CHECK(cudaStreamSynchronize(stream));
    nvtxRangePop();
  }
  RIDGE_CHECK(cudaStreamDestroy(stream));
  return 0;
}

int identical_steps::run(int steps) {
  float *x = nullptr, *y = nullptr;
  RIDGE_CHECK(cudaMalloc(&x, sizeof(float) * floats));
  RIDGE_CHECK(cudaMalloc(&y, sizeof(float) * floats));
  RIDGE_CHECK(cudaMemset(x, 0, sizeof(float) * floats));
  const int block = 256;
  const unsigned grid = static_cast<unsigned>((floats + block - 1) / block);
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA(step_range);
    for (int i = 0; i < copy_kernels_per_step; ++i) {
      identical_copy<<<grid, block>>>(x, y, floats);
      RIDGE_CHECK_LAUNCH();
    }
    RIDGE_CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
  }
  RIDGE_CHECK(cudaFree(x));
  RIDGE_CHECK(cudaFree(y));
  return 0;
}

int run() {
  cudaStream_t a = nullptr, b = nullptr;
  RIDGE_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  RIDGE_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  float* device = nullptr;
  RIDGE_CHECK(cudaMalloc(&device, sizeof(float) * elements));
  std::vector<float> host(elements, 1.0f);
  RIDGE_CHECK(cudaMemcpy(device, host.data(), sizeof(float) * elements, cudaMemcpyHostToDevice));
  const int block = 256, grid = (elements + block - 1) / block;
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA(step_range);
    for (int i = 0; i < busy_per_step; ++i) ridge::launch_busy_wait(a, busy_ns);
    for (int i = 0; i < adds_per_step; ++i) {
      target_add_one<<<grid, block, 0, b>>>(device, elements);
      RIDGE_CHECK_LAUNCH();
    }
    RIDGE_CHECK(cudaStreamSynchronize(a));
    RIDGE_CHECK(cudaStreamSynchronize(b));
    nvtxRangePop();
  }
  RIDGE_CHECK(cudaMemcpy(host.data(), device, sizeof(float) * elements, cudaMemcpyDeviceToHost));
  const float expected = 1.0f + steps * adds_per_step;
  int wrong = 0;
  for (float v : host) wrong += v != expected;
  RIDGE_CHECK(cudaFree(device));
  RIDGE_CHECK(cudaStreamDestroy(a));
  RIDGE_CHECK(cudaStreamDestroy(b));
  return wrong;
}

}  // namespace trace_workload
