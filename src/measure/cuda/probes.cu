#include <cuda_runtime.h>

#include "measure/cuda/cuda_check.hpp"
#include "measure/cuda/probes.hpp"
#include "measure/cuda/launchers.hpp"

namespace ridge {

namespace {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void busy_wait_kernel(unsigned long long duration_ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < duration_ns) {
  }
}

__global__ void empty_kernel() {}

__global__ void hold_stream_kernel(volatile int* flags, unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flags[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) {
      flags[1] = 1;
      return;
    }
  }
}

}  // namespace

void launch_busy_wait(cuda_stream stream, double nanoseconds) {
  busy_wait_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(nanoseconds));
  RIDGE_CHECK_LAUNCH();
}

void launch_hold_stream(cuda_stream stream, int* flags, double timeout_s) {
  hold_stream_kernel<<<1, 1, 0, stream>>>(flags, static_cast<unsigned long long>(timeout_s * 1e9));
  RIDGE_CHECK_LAUNCH();
}

void launch_empty(cuda_stream stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  RIDGE_CHECK_LAUNCH();
}

L2Flusher::L2Flusher(int device) {
  if (device < 0) RIDGE_CHECK(cudaGetDevice(&device));
  int l2 = 0;
  RIDGE_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  bytes_ = static_cast<std::size_t>(l2 > 0 ? l2 : (8 << 20)) * 2;
  RIDGE_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buffer_) cudaFree(buffer_);
}

void L2Flusher::flush(cuda_stream stream) { RIDGE_CHECK(cudaMemsetAsync(buffer_, 0x5a, bytes_, stream)); }

}  // namespace ridge
