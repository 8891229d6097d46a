// Host side of the streaming kernels: buffers, dispatch, and the check against a host reference.
#include "ridge/detail/stream_bench.hpp"

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "measure/cuda/random_fill.hpp"
#include "measure/cuda/launchers.hpp"
#include "sweeps/cuda/stream_kernels.hpp"

namespace ridge::detail {

namespace sk = stream_kernels;

std::string StreamCheck::summary() const {
  std::string s = fmt::format("{} ({} checked, {} mismatched, {} non-finite, max error {:.2g} of tolerance)",
                              passed ? "passed" : "FAILED", checked, mismatches, non_finite, max_error);
  if (!first_mismatch.empty()) s += "; first bad: " + first_mismatch;
  return s;
}

namespace {

int op_id(StreamOp op) {
  switch (op) {
    case StreamOp::add: return sk::op_add;
    case StreamOp::copy: return sk::op_copy;
    case StreamOp::scale: return sk::op_scale;
    case StreamOp::triad: return sk::op_triad;
    case StreamOp::read: return sk::op_read;
  }
  throw UsageError("unknown stream op");
}

int variant_id(StreamVariant v) {
  switch (v) {
    case StreamVariant::scalar: return sk::variant_scalar;
    case StreamVariant::vec4: return sk::variant_vec4;
    case StreamVariant::grid_stride: return sk::variant_grid_stride;
    case StreamVariant::broken_for_tests: return sk::variant_broken;
  }
  throw UsageError("unknown stream variant");
}

constexpr double fp32_unit_roundoff = 1.0 / (1 << 24);

// Index runs [begin, end) of the output compared with the reference.
std::vector<std::pair<std::int64_t, std::int64_t>> checked_runs(std::int64_t n) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  if (n <= (std::int64_t{1} << 20)) {
    runs.emplace_back(0, n);
    return runs;
  }
  runs.emplace_back(0, 4096);
  std::mt19937_64 rng(static_cast<std::uint64_t>(n) * 7919u);
  for (int i = 0; i < 16; ++i) {
    const std::int64_t begin = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n - 1024));
    runs.emplace_back(begin, begin + 1024);
  }
  runs.emplace_back(n - 4096, n);  // the tail, where vectorized kernels go wrong
  return runs;
}

void copy_down(std::vector<float>& dst, const float* src, std::int64_t begin, std::int64_t end) {
  dst.resize(static_cast<std::size_t>(end - begin));
  RIDGE_CHECK(cudaMemcpy(dst.data(), src + begin, (end - begin) * sizeof(float), cudaMemcpyDeviceToHost));
}

}  // namespace

struct StreamBench::Impl {
  std::int64_t capacity = 0;
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  float* partials = nullptr;
  double* sum = nullptr;
  int device = 0;
  float s = 1.5f;
  std::map<int, int> gs_blocks;  // op -> grid-stride blocks
  std::map<std::int64_t, std::pair<double, double>> host_sums;  // n -> (sum, sum |a|), in double

  ~Impl() {
    for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c), static_cast<void*>(partials),
                    static_cast<void*>(sum)})
      if (p) cudaFree(p);
  }

  template <typename T>
  void allocate(T** p, std::size_t bytes, const char* what) {
    const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(p), bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(fmt::format("cannot allocate {} ({:.2f} GB) for {} fp32 elements: {}. Use smaller sizes", what,
                              bytes / 1e9, capacity, detail::status_text(status)));
    }
  }

  int blocks(int op) {
    auto it = gs_blocks.find(op);
    if (it == gs_blocks.end()) it = gs_blocks.emplace(op, sk::grid_stride_blocks(op, device)).first;
    return it->second;
  }
};

StreamBench::StreamBench(std::int64_t capacity, std::uint64_t seed) : impl_(std::make_unique<Impl>()) {
  if (capacity <= 0) throw UsageError(fmt::format("stream buffers need > 0 elements, got {}", capacity));
  auto& s = *impl_;
  s.capacity = capacity;
  RIDGE_CHECK(cudaGetDevice(&s.device));
  const std::size_t bytes = static_cast<std::size_t>(capacity) * sizeof(float);
  s.allocate(&s.a, bytes, "input a");
  s.allocate(&s.b, bytes, "input b");
  s.allocate(&s.c, bytes, "output c");
  // The most partials any variant writes: one per 256 elements (scalar), or the grid-stride grid.
  const std::int64_t partial_count =
      std::max<std::int64_t>(capacity / sk::block_threads + 1, sk::grid_stride_blocks(sk::op_read, s.device));
  s.allocate(&s.partials, static_cast<std::size_t>(partial_count) * sizeof(float), "partial sums");
  s.allocate(&s.sum, sizeof(double), "the sum");
  fill_random(s.a, capacity, CUDA_R_32F, seed * 2 + 1, nullptr);
  fill_random(s.b, capacity, CUDA_R_32F, seed * 2 + 2, nullptr);
  RIDGE_CHECK(cudaDeviceSynchronize());
}

StreamBench::~StreamBench() = default;

std::int64_t StreamBench::capacity() const { return impl_->capacity; }
float StreamBench::scalar_factor() const { return impl_->s; }
int StreamBench::grid_stride_blocks(StreamOp op) const { return impl_->blocks(op_id(op)); }

void StreamBench::run(StreamOp op, StreamVariant variant, std::int64_t n, cuda_stream stream) {
  auto& s = *impl_;
  if (n <= 0 || n > s.capacity)
    throw UsageError(fmt::format("stream op over {} elements: must be in [1, {}]", n, s.capacity));
  const int id = op_id(op);
  const int gs = variant == StreamVariant::grid_stride ? s.blocks(id) : 0;
  if (op == StreamOp::read)
    sk::launch_read(variant_id(variant), s.a, s.partials, s.sum, n, gs, stream);
  else
    sk::launch_elementwise(id, variant_id(variant), s.a, s.b, s.c, s.s, n, gs, stream);
}

double StreamBench::last_sum() {
  double v = 0;
  RIDGE_CHECK(cudaDeviceSynchronize());
  RIDGE_CHECK(cudaMemcpy(&v, impl_->sum, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

StreamCheck StreamBench::verify(StreamOp op, StreamVariant variant, std::int64_t n) {
  auto& s = *impl_;
  StreamCheck check;
  if (op == StreamOp::read) {
    RIDGE_CHECK(cudaMemset(s.sum, 0xff, sizeof(double)));  // NaN
    run(op, variant, n, nullptr);
    const double got = last_sum();
    // Reference: a double sum of every input, and the bound on fp32 rounding of the kernel's
    // summation order (each thread's serial chain, then two trees) relative to sum |a|.
    auto cached = s.host_sums.find(n);
    if (cached == s.host_sums.end()) {  // the inputs never change, so each size is summed once
      std::vector<float> host;
      copy_down(host, s.a, 0, n);
      double total = 0, total_abs = 0;
      for (float v : host) {
        total += v;
        total_abs += std::abs(v);
      }
      cached = s.host_sums.emplace(n, std::pair{total, total_abs}).first;
    }
    const auto [ref, magnitude] = cached->second;
    const double threads = variant == StreamVariant::grid_stride
                               ? static_cast<double>(s.blocks(sk::op_read)) * sk::block_threads
                               : static_cast<double>(n);
    const double chain = std::ceil(static_cast<double>(n) / threads) + 2 * std::log2(static_cast<double>(n) + 1) + 8;
    const double tolerance = chain * fp32_unit_roundoff * magnitude + 1e-30;
    check.checked = 1;
    check.non_finite = std::isfinite(got) ? 0 : 1;
    check.max_error = std::isfinite(got) ? std::abs(got - ref) / tolerance : INFINITY;
    if (!(check.max_error <= 1.0)) {
      check.mismatches = 1;
      check.first_mismatch = fmt::format("sum = {:.9g}, expected {:.9g} (tolerance {:.3g})", got, ref, tolerance);
    }
    check.passed = check.mismatches == 0 && check.non_finite == 0;
    return check;
  }

  RIDGE_CHECK(cudaMemset(s.c, 0xff, static_cast<std::size_t>(n) * sizeof(float)));  // NaN everywhere
  run(op, variant, n, nullptr);
  RIDGE_CHECK(cudaDeviceSynchronize());
  unsigned long long* counter = nullptr;
  RIDGE_CHECK(cudaMalloc(reinterpret_cast<void**>(&counter), sizeof *counter));
  RIDGE_CHECK(cudaMemset(counter, 0, sizeof *counter));
  launch_count_non_finite(s.c, n, CUDA_R_32F, counter, nullptr);
  unsigned long long bad = 0;
  RIDGE_CHECK(cudaMemcpy(&bad, counter, sizeof bad, cudaMemcpyDeviceToHost));
  RIDGE_CHECK(cudaFree(counter));
  check.non_finite = static_cast<std::int64_t>(bad);

  std::vector<float> ha, hb, hc;
  for (const auto& [begin, end] : checked_runs(n)) {
    copy_down(ha, s.a, begin, end);
    copy_down(hb, s.b, begin, end);
    copy_down(hc, s.c, begin, end);
    for (std::int64_t i = 0; i < end - begin; ++i) {
      const double x = ha[i], y = hb[i];
      double ref = 0, scale = 0;
      switch (op) {
        case StreamOp::add: ref = x + y; scale = std::abs(x) + std::abs(y); break;
        case StreamOp::copy: ref = x; scale = 0; break;
        case StreamOp::scale: ref = double(s.s) * x; scale = std::abs(ref); break;
        case StreamOp::triad: ref = x + double(s.s) * y; scale = std::abs(x) + std::abs(double(s.s) * y); break;
        case StreamOp::read: break;
      }
      // One fp32 rounding per operation (an FMA rounds once, separate ops twice), with margin.
      const double tolerance = 4 * fp32_unit_roundoff * scale;
      const double got = hc[i];
      const double err = std::abs(got - ref);
      const bool ok = std::isfinite(got) && err <= tolerance;
      ++check.checked;
      check.max_error = std::max(check.max_error, !std::isfinite(got) ? INFINITY
                                                  : tolerance > 0     ? err / tolerance
                                                  : err > 0           ? INFINITY
                                                                      : 0.0);
      if (!ok) {
        if (check.mismatches == 0)
          check.first_mismatch = fmt::format("c[{}] = {:.9g}, expected {:.9g}", begin + i, got, ref);
        ++check.mismatches;
      }
    }
  }
  check.passed = check.mismatches == 0 && check.non_finite == 0;
  return check;
}

}  // namespace ridge::detail
