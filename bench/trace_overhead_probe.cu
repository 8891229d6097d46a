// What CUPTI tracing costs per CUDA operation, without Python in the way.
//
// A plain CUDA program (runtime API only, no ridge code): run it untraced and with
// CUDA_INJECTION64_PATH=libridge_inject.so plus RIDGE_TRACE_* settings (bench/trace_overhead_cpp.sh
// does both, interleaved). Each test is repeated and its median printed as one line
//   probe <test> <value> <unit>
// Tests:
//   launch_host        empty kernel launches back to back: host ns per launch call (queue not full)
//   launch_throughput  the same, wall ns per kernel including the final synchronize
//   empty_gpu          GPU ns per empty kernel while the host runs ahead (a spin kernel holds the
//                      stream while they are queued; timed with events): CUPTI's per-kernel GPU gap
//   spin_gpu_bound     wall ns per ~50 us spin kernel, launched back to back (GPU-bound loop)
//   get_device, stream_capture_info, event_record_query, memset_async, memcpy_d2d_async,
//   nvtx_push_pop      host ns per call (or pair) of things PyTorch does around each kernel
//   sync_empty         host ns per cudaStreamSynchronize on an idle stream
//
//   nvcc -O2 -arch=sm_90 -o trace_overhead_probe bench/trace_overhead_probe.cu
//   ./trace_overhead_probe [launches=20000] [reps=5] [spin_us=50]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "probe_common.cuh"

__global__ void empty_kernel() {}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Spins for about ns nanoseconds of wall time on the GPU (globaltimer), one thread.
__global__ void spin_kernel(unsigned long long ns, int* sink) {
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
  if (threadIdx.x == 0 && sink != nullptr) *sink = 1;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void report(const char* test, std::vector<double> samples, const char* unit) {
  std::printf("probe %s %.1f %s\n", test, median(samples), unit);
  std::fflush(stdout);
}

/// Host ns per call of body, run n times per sample.
void host_per_call(const char* test, int reps, int n, const std::function<void()>& body, cudaStream_t stream) {
  std::vector<double> samples;
  for (int r = 0; r < reps + 1; ++r) {
    CHECK(cudaStreamSynchronize(stream));
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) body();
    const double s = seconds_since(t0);
    CHECK(cudaStreamSynchronize(stream));
    if (r > 0) samples.push_back(s * 1e9 / n);  // first round is warm-up
  }
  report(test, samples, "ns");
}

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const double spin_us = argc > 3 ? std::atof(argv[3]) : 50.0;
  CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* sink = nullptr;
  CHECK(cudaMalloc(&sink, 1 << 20));
  void* copy_dst = nullptr;
  CHECK(cudaMalloc(&copy_dst, 1 << 20));
  cudaEvent_t ev0, ev1;
  CHECK(cudaEventCreate(&ev0));
  CHECK(cudaEventCreate(&ev1));
  empty_kernel<<<1, 32, 0, stream>>>();
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));

  // Host cost per launch: chunks of 1000 launches (the queue never fills: the GPU drains empty
  // kernels faster than the host submits them), timed around the launch calls only.
  {
    std::vector<double> host, wall;
    for (int r = 0; r < reps + 1; ++r) {
      CHECK(cudaStreamSynchronize(stream));
      double launch_s = 0;
      const auto w0 = Clock::now();
      for (int done = 0; done < launches; done += 1000) {
        const auto t0 = Clock::now();
        for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, stream>>>();
        launch_s += seconds_since(t0);
      }
      CHECK(cudaStreamSynchronize(stream));
      const double w = seconds_since(w0);
      if (r > 0) {
        host.push_back(launch_s * 1e9 / launches);
        wall.push_back(w * 1e9 / launches);
      }
    }
    CHECK(cudaGetLastError());
    report("launch_host", host, "ns");
    report("launch_throughput", wall, "ns");
  }

  // GPU-side cost per empty kernel: queue 1000 behind a 40 ms spin, time them with events.
  {
    std::vector<double> gpu;
    const int queued = 1000;
    for (int r = 0; r < reps + 1; ++r) {
      spin_kernel<<<1, 32, 0, stream>>>(40'000'000ull, sink);
      CHECK(cudaEventRecord(ev0, stream));
      const auto t0 = Clock::now();
      for (int i = 0; i < queued; ++i) empty_kernel<<<1, 32, 0, stream>>>();
      const double enqueue_s = seconds_since(t0);
      CHECK(cudaEventRecord(ev1, stream));
      CHECK(cudaEventSynchronize(ev1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
      if (enqueue_s > 0.035) std::fprintf(stderr, "probe: empty_gpu enqueue took %.1f ms: host did not run ahead\n", enqueue_s * 1e3);
      if (r > 0) gpu.push_back(ms * 1e6 / queued);
    }
    CHECK(cudaGetLastError());
    report("empty_gpu", gpu, "ns");
  }

  // GPU-bound loop: spin kernels back to back, wall per kernel (ideal: spin_us).
  {
    std::vector<double> wall;
    const int n = 200;
    const auto ns = static_cast<unsigned long long>(spin_us * 1e3);
    for (int r = 0; r < reps + 1; ++r) {
      CHECK(cudaStreamSynchronize(stream));
      const auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) spin_kernel<<<1, 32, 0, stream>>>(ns, sink);
      CHECK(cudaStreamSynchronize(stream));
      if (r > 0) wall.push_back(seconds_since(t0) * 1e9 / n);
    }
    CHECK(cudaGetLastError());
    report("spin_gpu_bound", wall, "ns");
  }

  const int calls = launches;
  host_per_call("get_device", reps, calls, [] {
    int d;
    cudaGetDevice(&d);
  }, stream);
  host_per_call("stream_capture_info", reps, calls, [&] {
    cudaStreamCaptureStatus status;
    cudaStreamGetCaptureInfo(stream, &status);
  }, stream);
  host_per_call("event_record_query", reps, calls / 4, [&] {
    cudaEventRecord(ev0, stream);
    cudaEventQuery(ev0);
  }, stream);
  host_per_call("memset_async", reps, calls / 4, [&] { cudaMemsetAsync(sink, 0, 4096, stream); }, stream);
  host_per_call("memcpy_d2d_async", reps, calls / 4, [&] { cudaMemcpyAsync(copy_dst, sink, 4096, cudaMemcpyDeviceToDevice, stream); }, stream);
  host_per_call("nvtx_push_pop", reps, calls, [] {
    nvtxRangePushA("probe");
    nvtxRangePop();
  }, stream);
  host_per_call("sync_empty", reps, calls / 4, [&] { cudaStreamSynchronize(stream); }, stream);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  return 0;
}
