// Times your own kernel with ridge and places it on the roofline of the GPU it runs on.
//
// The kernel is a SAXPY written here, z = a*x + y over n floats: 2 FLOPs and 12 bytes per element
// (read x and y, write z), so it is memory-bound on every GPU. Replace it with yours: change the
// kernel, its launch in `launch`, the host reference in `reference`, and the FLOP and byte counts.
//
// Usage: roofline_kernel [N]   (default 2^26 elements, three 256 MiB arrays)
// Exit codes, as ridge's: 0 ok, 1 runtime error, 2 usage error, 3 wrong output, 4 no usable GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <ridge/ridge.hpp>  // everything ridge offers; host-only headers

namespace {

__global__ void saxpy(long long n, float a, const float* __restrict__ x, const float* __restrict__ y,
                      float* __restrict__ z) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) z[i] = a * x[i] + y[i];
}

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw ridge::Error(std::string(call) + ": " + cudaGetErrorString(status));
}
#define CHECK(call) check((call), #call)

struct Buffers {
  float *x = nullptr, *y = nullptr, *z = nullptr;
  ~Buffers() { cudaFree(x); cudaFree(y); cudaFree(z); }
};

void launch(long long n, float a, const Buffers& b, cudaStream_t stream) {
  const int threads = 256;
  const long long blocks = (n + threads - 1) / threads;
  saxpy<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(n, a, b.x, b.y, b.z);
  CHECK(cudaGetLastError());
}

float reference(float a, float x, float y) { return std::fma(a, x, y); }

long long parse_n(int argc, char** argv) {
  if (argc < 2) return 1LL << 26;
  char* end = nullptr;
  const long long n = std::strtoll(argv[1], &end, 10);
  if (argc > 2 || *end != '\0' || n <= 0) throw ridge::UsageError("usage: roofline_kernel [N]  (N > 0 elements)");
  return n;
}

int run(int argc, char** argv) {
  const long long n = parse_n(argc, argv);
  if (ridge::device_count() == 0) {
    std::fprintf(stderr, "roofline_kernel: needs a CUDA GPU, and none is usable: %s\n",
                 ridge::no_gpu_reason().c_str());
    return static_cast<int>(ridge::ExitCode::no_gpu);
  }
  ridge::require_gpu(0);
  const ridge::DeviceDescription device = ridge::describe_device(0);

  // Random inputs (never zeros: some hardware runs faster on them), copied to the GPU.
  const float a = 1.7f;
  std::vector<float> x(n), y(n), z(n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (long long i = 0; i < n; ++i) { x[i] = dist(rng); y[i] = dist(rng); }
  Buffers b;
  const size_t bytes_per_array = sizeof(float) * n;
  CHECK(cudaMalloc(&b.x, bytes_per_array));
  CHECK(cudaMalloc(&b.y, bytes_per_array));
  CHECK(cudaMalloc(&b.z, bytes_per_array));
  CHECK(cudaMemcpy(b.x, x.data(), bytes_per_array, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b.y, y.data(), bytes_per_array, cudaMemcpyHostToDevice));

  // 1. Check the output against the host before timing anything: a fast wrong kernel is no result.
  launch(n, a, b, nullptr);
  CHECK(cudaMemcpy(z.data(), b.z, bytes_per_array, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (long long i = 0; i < n; ++i) {
    // Error relative to the operands' size, so a result near zero (cancellation) is judged fairly.
    const double scale = std::abs(a * x[i]) + std::abs(y[i]) + 1e-30;
    worst = std::max(worst, std::abs(z[i] - reference(a, x[i], y[i])) / scale);
  }
  if (worst > 1e-6) throw ridge::VerificationError("saxpy output differs from the host reference: relative error " + std::to_string(worst));

  // 2. Time it: CUDA events around each call, after warm-up; median of 20 samples.
  ridge::CudaOptions options;  // warmup 5, samples 20, one call per sample
  const ridge::Measurement m = ridge::measure_cuda([&](ridge::cuda_stream s) { launch(n, a, b, s); }, options);
  const double seconds = m.summary.median * 1e-3;
  const double flops = 2.0 * n, bytes = 12.0 * n;
  const double intensity = flops / bytes;  // FLOP per byte
  const double flops_per_s = flops / seconds, bytes_per_s = bytes / seconds;

  // 3. The ceilings: the datasheet entry of ridge's catalog for this GPU, else measure them.
  double peak = 0, bandwidth = 0;
  std::string ceilings_from;
  const auto entry = ridge::match_device(device);
  if (entry && entry->peak(ridge::DType::fp32)) {
    peak = *entry->peak(ridge::DType::fp32);
    bandwidth = entry->ceilings.memory_bytes_per_s;
    ceilings_from = "datasheet, " + entry->name;
  } else {
    std::fprintf(stderr, "no datasheet entry matches %s: measuring its ceilings (cached afterwards)\n", device.name.c_str());
    const ridge::MeasuredCeilings c = ridge::measured_ceilings(0);
    peak = c.ceilings.peak_flops("fp32");
    bandwidth = c.ceilings.memory_bytes_per_s;
    ceilings_from = "measured on this GPU";
  }

  // 4. Place it on the roofline.
  const double attainable = ridge::attainable_flops(intensity, peak, bandwidth);
  const double efficiency = ridge::roofline_efficiency(flops_per_s, intensity, peak, bandwidth);
  const ridge::Bound bound = ridge::classify(intensity, peak, bandwidth);

  std::printf("device      %s (sm_%d%d, %d SMs)\n", device.name.c_str(), device.compute_capability_major,
              device.compute_capability_minor, device.sm_count);
  std::printf("kernel      saxpy z = a*x + y, n = %lld fp32, output checked (max rel. error %.1e)\n", n, worst);
  std::printf("time        %.4f ms median of %zu samples (min %.4f, max %.4f; %s)\n", m.summary.median,
              m.summary.count, m.summary.min, m.summary.max, ridge::to_string(m.method).c_str());
  std::printf("rate        %.1f GB/s, %.3f TFLOP/s\n", bytes_per_s / 1e9, flops_per_s / 1e12);
  std::printf("ceilings    %.0f GB/s, %.1f TFLOP/s fp32 (%s); ridge point %.1f FLOP/byte\n", bandwidth / 1e9,
              peak / 1e12, ceilings_from.c_str(), ridge::ridge_point(peak, bandwidth));
  std::printf("roofline    intensity %.3f FLOP/byte: %s-bound, attainable %.3f TFLOP/s, reached %.0f%%\n", intensity,
              ridge::to_string(bound).c_str(), attainable / 1e12, 100 * efficiency);
  if (efficiency > 1)
    std::printf("warning     faster than the roofline allows: the timing or the byte count is wrong\n");
  if (3.0 * bytes_per_array <= device.l2_bytes)
    std::printf("note        the arrays (%.1f MiB) fit in the L2 cache (%.0f MiB): the rate is the L2's, not memory's\n",
                3.0 * bytes_per_array / (1 << 20), device.l2_bytes / double(1 << 20));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ridge::Error& e) {
    std::fprintf(stderr, "roofline_kernel: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roofline_kernel: %s\n", e.what());
    return static_cast<int>(ridge::ExitCode::runtime_error);
  }
}
