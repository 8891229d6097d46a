// What the stand-alone CUDA probes in bench/ share (they are built alone with nvcc, without
// ridge's libraries): a check that stops the program on a failed CUDA call, and a launch timer.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

/// Median over `samples` of the mean time of `batch` back-to-back calls of launch() on `stream`
/// (CUDA events around each batch), in microseconds, after one untimed call.
template <typename Launch>
double median_launch_us(cudaStream_t stream, int samples, int batch, Launch&& launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  launch();
  std::vector<double> us;
  for (int s = 0; s < samples; ++s) {
    CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < batch; ++i) launch();
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1e3 / batch);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}
