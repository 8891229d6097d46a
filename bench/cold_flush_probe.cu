// Why does a cold sample read higher when the flush runs right before it? Times one small kernel
// (fp32 z = x + y) with a flushed L2 in several sample layouts, interleaved round by round:
//   batch        ridge's layout (measure_spin and measure_graph with flush_l2): the stream held, then
//                [flush][ev0][kernel][ev1] per sample, back to back (the kernel starts the moment the
//                2 x L2 memset ends);
//   batch_drainN the same with a busy-wait of N us between the flush and ev0;
//   per_sample   nvbench's layout: flush, synchronize, hold, [ev0][kernel][ev1], release, synchronize;
//   per_sample_2xl2  the same with ridge's flush (2 x L2, 0x5a);
//   l2_zero      the batch layout with nvbench's flush (memset of one L2 size to zero).
// On the H200 (CUDA 13.0) the batch layouts read ~0.5 us higher than per_sample on the 1024-element
// add (4.1 vs 3.5 us) with 2.4x its spread (9.4% vs 3.9%), and a drain after the flush does not
// close the gap: the extra time comes from queuing flushed samples back to back, not from the flush
// (results/h200/timing/cold_flush; per_sample_2xl2 was added after that run).
// Built alone: nvcc -O2 -arch=sm_90 -std=c++20 bench/cold_flush_probe.cu -o cold_flush_probe
// Run: ./cold_flush_probe [rounds=20] [samples per round=64]. Prints a Markdown table (us).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "probe_common.cuh"

__global__ void add(const float* x, const float* y, float* z, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}

__global__ void spin_until(volatile int* flag) {
  while (*flag == 0) {
  }
}

__global__ void busy_wait(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

struct Probe {
  cudaStream_t stream{};
  int* flag_host{};
  int* flag_device{};
  void* flush_buffer{};
  size_t l2{};
  std::vector<cudaEvent_t> ev0, ev1;

  explicit Probe(int batch) {
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flag_host), sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_device), flag_host, 0));
    int bytes = 0;
    CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, 0));
    l2 = static_cast<size_t>(bytes);
    CHECK(cudaMalloc(&flush_buffer, 2 * l2));
    ev0.resize(batch);
    ev1.resize(batch);
    for (int i = 0; i < batch; ++i) {
      CHECK(cudaEventCreate(&ev0[i]));
      CHECK(cudaEventCreate(&ev1[i]));
    }
  }
  void hold() {
    std::atomic_ref<int>(*flag_host).store(0);
    spin_until<<<1, 1, 0, stream>>>(flag_device);
    CHECK(cudaGetLastError());
  }
  void release() { std::atomic_ref<int>(*flag_host).store(1); }
  void flush_ridge() { CHECK(cudaMemsetAsync(flush_buffer, 0x5a, 2 * l2, stream)); }
  void flush_nvbench() { CHECK(cudaMemsetAsync(flush_buffer, 0, l2, stream)); }
  std::vector<double> collect(int count) {
    std::vector<double> us;
    for (int i = 0; i < count; ++i) {
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, ev0[i], ev1[i]));
      us.push_back(ms * 1e3);
    }
    return us;
  }
};

struct Stats {
  double median, mean, cv;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / v.size();
  for (double x : v) sq += (x - mean) * (x - mean);
  return {v[v.size() / 2], mean, std::sqrt(sq / (v.size() - 1)) / mean};
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  const int samples = argc > 2 ? std::atoi(argv[2]) : 64;
  Probe p(samples);
  for (int n : {1 << 10, 1 << 20}) {
    float *x, *y, *z;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&z, n * sizeof(float)));
    std::vector<float> hx(n), hy(n), hz(n);
    for (int i = 0; i < n; ++i) {
      hx[i] = static_cast<float>(i % 97);
      hy[i] = static_cast<float>(i % 13) * 0.5f;
    }
    CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    auto kernel = [&] {
      add<<<(n + 255) / 256, 256, 0, p.stream>>>(x, y, z, n);
      CHECK(cudaGetLastError());
    };
    kernel();
    CHECK(cudaMemcpy(hz.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (hz[i] != hx[i] + hy[i]) {
        std::fprintf(stderr, "wrong sum at %d\n", i);
        return 1;
      }
    auto batch = [&](std::function<void()> flush, double drain_us) {
      CHECK(cudaStreamSynchronize(p.stream));
      p.hold();
      for (int i = 0; i < samples; ++i) {
        flush();
        if (drain_us > 0) busy_wait<<<1, 1, 0, p.stream>>>(static_cast<unsigned long long>(drain_us * 1e3));
        CHECK(cudaEventRecord(p.ev0[i], p.stream));
        kernel();
        CHECK(cudaEventRecord(p.ev1[i], p.stream));
      }
      p.release();
      CHECK(cudaStreamSynchronize(p.stream));
      return p.collect(samples);
    };
    auto per_sample = [&](std::function<void()> flush) {
      std::vector<double> us;
      for (int i = 0; i < samples; ++i) {
        flush();
        CHECK(cudaStreamSynchronize(p.stream));
        p.hold();
        CHECK(cudaEventRecord(p.ev0[0], p.stream));
        kernel();
        CHECK(cudaEventRecord(p.ev1[0], p.stream));
        p.release();
        CHECK(cudaStreamSynchronize(p.stream));
        auto one = p.collect(1);
        us.push_back(one[0]);
      }
      return us;
    };
    struct Layout {
      std::string name;
      std::function<std::vector<double>()> run;
      std::vector<double> all;
    };
    std::vector<Layout> layouts = {
        {"batch", [&] { return batch([&] { p.flush_ridge(); }, 0); }, {}},
        {"batch_drain1", [&] { return batch([&] { p.flush_ridge(); }, 1); }, {}},
        {"batch_drain2", [&] { return batch([&] { p.flush_ridge(); }, 2); }, {}},
        {"batch_drain5", [&] { return batch([&] { p.flush_ridge(); }, 5); }, {}},
        {"batch_drain20", [&] { return batch([&] { p.flush_ridge(); }, 20); }, {}},
        {"l2_zero", [&] { return batch([&] { p.flush_nvbench(); }, 0); }, {}},
        {"l2_zero_drain5", [&] { return batch([&] { p.flush_nvbench(); }, 5); }, {}},
        {"per_sample", [&] { return per_sample([&] { p.flush_nvbench(); }); }, {}},
        {"per_sample_2xl2", [&] { return per_sample([&] { p.flush_ridge(); }); }, {}},
    };
    for (auto& l : layouts) l.run();  // warm-up
    for (int r = 0; r < rounds; ++r)
      for (size_t k = 0; k < layouts.size(); ++k) {
        auto& l = layouts[(k + r) % layouts.size()];
        auto us = l.run();
        l.all.insert(l.all.end(), us.begin(), us.end());
      }
    std::printf("\nfp32 x + y, %d elements, %d rounds x %d samples per layout\n\n", n, rounds, samples);
    std::printf("| layout | median us | mean us | cv |\n|---|---:|---:|---:|\n");
    for (auto& l : layouts) {
      const Stats s = stats(l.all);
      std::printf("| %s | %.3f | %.3f | %.2f%% |\n", l.name.c_str(), s.median, s.mean, s.cv * 100);
    }
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(z));
  }
  return 0;
}
