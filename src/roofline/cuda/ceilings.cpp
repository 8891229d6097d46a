// Measured ceilings: the host side. Each probe's output is checked against a host reference
// before it is timed; times are launch-free (stream held by a spin kernel) medians.
#include "ridge/detail/gemm.hpp"
#include "ridge/ceilings.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "roofline/cuda/ceiling_kernels.hpp"
#include "ridge/checks.hpp"
#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"
#include "measure/cuda/probes.hpp"
#include "measure/cuda/random_fill.hpp"
#include "ridge/version.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

using detail::ceiling::StreamVariant;

// Inputs are uniform in [0.5, 1.5): never zero, and with a range width of exactly 1 the fill's
// lo + (hi - lo) * u is exact, so host references reproduce the device's values bit for bit
// (whether or not the device contracts it into an FMA).
constexpr float fill_lo = 0.5f, fill_hi = 1.5f;
constexpr std::uint64_t seed_b = 0x5eed0001, seed_c = 0x5eed0002;
constexpr float triad_scalar = 0.4f;

class DeviceBuffer {
 public:
  DeviceBuffer(std::size_t bytes, const char* what) : bytes_(bytes) {
    const cudaError_t status = cudaMalloc(&p_, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(fmt::format("cannot allocate {} for {} on the GPU ({}); free GPU memory and retry",
                              format_bytes(double(bytes)), what, detail::status_text(status)));
    }
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Sum over float4 groups [first, first + count) of ((x+y)+(z+w)) in float, accumulated in double,
// for the values fill_random wrote with `seed`: the device reductions' exact per-group terms.
double host_group_sum(std::uint64_t seed, std::int64_t first, std::int64_t count) {
  const unsigned workers = std::clamp(std::thread::hardware_concurrency(), 1u, 32u);
  std::vector<std::future<double>> parts;
  const std::int64_t chunk = (count + workers - 1) / workers;
  for (unsigned w = 0; w < workers; ++w) {
    const std::int64_t lo = first + w * chunk, hi = std::min(first + count, lo + chunk);
    if (lo >= hi) break;
    parts.push_back(std::async(std::launch::async, [=] {
      double sum = 0;
      for (std::int64_t g = lo; g < hi; ++g) {
        const float x = random_value(seed, 4 * g, fill_lo, fill_hi), y = random_value(seed, 4 * g + 1, fill_lo, fill_hi);
        const float z = random_value(seed, 4 * g + 2, fill_lo, fill_hi), v = random_value(seed, 4 * g + 3, fill_lo, fill_hi);
        sum += static_cast<double>((x + y) + (z + v));
      }
      return sum;
    }));
  }
  double total = 0;
  for (auto& p : parts) total += p.get();
  return total;
}

double device_partials_sum(const DeviceBuffer& partials, int blocks) {
  std::vector<double> host(static_cast<std::size_t>(blocks));
  RIDGE_CHECK(cudaMemcpy(host.data(), partials.get(), host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (double v : host) sum += v;
  return sum;
}

std::vector<float> copy_to_host(const void* device, std::int64_t first, std::int64_t count) {
  std::vector<float> out(static_cast<std::size_t>(count));
  RIDGE_CHECK(cudaMemcpy(out.data(), static_cast<const float*>(device) + first, count * sizeof(float),
                         cudaMemcpyDeviceToHost));
  return out;
}

// Index ranges spot-checked in big arrays: the start, the middle and the end.
std::vector<std::pair<std::int64_t, std::int64_t>> spot_ranges(std::int64_t n) {
  const std::int64_t k = std::min<std::int64_t>(4096, n / 3);
  return {{0, k}, {n / 2, k}, {n - k, k}};
}

std::string variant_name(const StreamVariant& v) {
  return fmt::format("unroll {} x 16 B, {} threads/block{}", v.unroll, v.threads, v.streaming ? ", evict-first hints" : "");
}

nlohmann::json variant_json(const StreamVariant& v, int blocks) {
  return {{"unroll", v.unroll}, {"threads_per_block", v.threads}, {"streaming_hints", v.streaming}, {"blocks", blocks}};
}

CudaOptions timing(int samples, int warmup = 2, int repeats = 1) {
  CudaOptions o;
  o.samples = samples;
  o.warmup = warmup;
  o.repeats = repeats;
  return o;
}

class Prober {
 public:
  Prober(int device, const DeviceDescription& d) : device_(device), d_(d) {}

  MeasuredCeilings run() {
    const auto t0 = std::chrono::steady_clock::now();
    c_.device_uuid = d_.uuid;
    c_.device_name = d_.name;
    c_.ceilings.source = CeilingsSource::measured;
    c_.max_sm_clock_mhz = d_.max_sm_clock_mhz;
    c_.measured_at_utc = utc_timestamp_now();
    launch_overhead();
    hbm_and_l2();
    fp32_fma();
    tensor();
    c_.clocks = read_clocks(device_);
    c_.measure_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    c_.ceilings.source_text = fmt::format("measured on this GPU ({})", c_.measured_at_utc);
    return c_;
  }

 private:
  Record record(const Measurement& m, const std::string& name, std::optional<DType> dtype, nlohmann::json params,
                double bytes, double flops, const ClockReading& start) {
    Record r = to_record(m, name, dtype, std::move(params), bytes, flops);
    r.verification = "passed";
    r.clocks_start = start;
    r.clocks_end = read_clocks(device_);
    extra_key::meaning.set(r, describe(m.method));
    add_plausibility_warnings(r, std::nullopt);
    return r;
  }

  void launch_overhead() {
    const ClockReading start = read_clocks(device_);
    auto empty = [](cuda_stream s) { launch_empty(s); };
    Measurement spin = measure_spin(empty, timing(20, 10, 64));
    Record r = record(spin, "ceiling.launch.empty", std::nullopt, {{param_key::kernel, "empty, 1 block x 1 thread"}}, 0,
                      0, start);
    extra_key::per_launch_us.set(r, spin.summary.median * 1e3);
    c_.ceilings.empty_launch_us = spin.summary.median * 1e3;
    c_.records.push_back(r);
    Measurement graph = measure_graph(empty, timing(20, 10, 100));
    Record g = record(graph, "ceiling.launch.empty_graph", std::nullopt,
                      {{param_key::kernel, "empty, 1 block x 1 thread"}}, 0, 0, start);
    extra_key::per_launch_us.set(g, graph.summary.median * 1e3);
    c_.empty_launch_graph_us = graph.summary.median * 1e3;
    c_.records.push_back(g);
  }

  // --- HBM: copy, read-only reduction and triad on arrays of >= 8x the L2 ----------------------
  void hbm_and_l2() {
    const double l2 = d_.l2_bytes > 0 ? double(d_.l2_bytes) : 64e6;
    // 2^28 floats (1 GiB) per array, or more when the L2 is so large that 8x L2 exceeds it.
    std::int64_t n4 = std::max<std::int64_t>(std::int64_t(1) << 26, std::int64_t(std::ceil(8 * l2 / 16)));
    const std::size_t bytes = std::size_t(n4) * 16;
    DeviceBuffer a(bytes, "the HBM probe's output array"), b(bytes, "the HBM probe's first input"),
        c(bytes, "the HBM probe's second input");
    DeviceBuffer partials(sizeof(double) * 65536, "reduction partials");
    DeviceBuffer counter(sizeof(unsigned long long), "a counter");
    fill_random(b.get(), n4 * 4, CUDA_R_32F, seed_b, nullptr, fill_lo, fill_hi);
    fill_random(c.get(), n4 * 4, CUDA_R_32F, seed_c, nullptr, fill_lo, fill_hi);
    RIDGE_CHECK(cudaDeviceSynchronize());
    // The reference sum of b runs on the host's cores while the GPU works on the copies.
    std::shared_future<double> b_sum = std::async(std::launch::async, host_group_sum, seed_b, 0, n4).share();

    const nlohmann::json ws{{param_key::elements, n4 * 4}, {param_key::array_bytes, bytes}, {param_key::l2_bytes, l2}};
    std::vector<StreamVariant> variants;
    for (int threads : {256, 1024})
      for (int unroll : {2, 4, 8})
        for (bool streaming : {false, true}) variants.push_back({unroll, streaming, threads});

    auto blocks_for = [&](int per_sm) { return std::min(per_sm * d_.sm_count, 65536); };

    // copy: a = b
    best_stream_kernel(
        "ceiling.hbm.copy", variants, 2.0 * bytes, ws, "reads b, writes a: bytes = 2 x array",
        [&](const StreamVariant& v) { return blocks_for(detail::ceiling::copy_blocks_per_sm(v)); },
        [&](const StreamVariant& v, int blocks) {
          RIDGE_CHECK(cudaMemset(a.get(), 0xff, bytes));  // NaN: a skipped element cannot pass
          RIDGE_CHECK(cudaMemset(counter.get(), 0, sizeof(unsigned long long)));
          detail::ceiling::launch_copy(b.get(), a.get(), n4, v, blocks, nullptr);
          detail::ceiling::launch_count_differences(a.get(), b.get(), n4 * 4, counter.get<unsigned long long>(), nullptr);
          unsigned long long differ = 0;
          RIDGE_CHECK(cudaMemcpy(&differ, counter.get(), sizeof differ, cudaMemcpyDeviceToHost));
          if (differ)
            throw VerificationError(fmt::format("HBM copy kernel ({}): {} of {} words differ from the source",
                                                variant_name(v), differ, n4 * 4));
          for (auto [first, count] : spot_ranges(n4 * 4)) {
            const auto got = copy_to_host(a.get(), first, count);
            for (std::int64_t i = 0; i < count; ++i)
              if (got[i] != random_value(seed_b, first + i, fill_lo, fill_hi))
                throw VerificationError(fmt::format("HBM copy kernel ({}): element {} is {}, the fill wrote {}",
                                                    variant_name(v), first + i, got[i],
                                                    random_value(seed_b, first + i, fill_lo, fill_hi)));
          }
        },
        [&](const StreamVariant& v, int blocks, cuda_stream s) { detail::ceiling::launch_copy(b.get(), a.get(), n4, v, blocks, s); });

    // read-only reduction of b
    best_stream_kernel(
        "ceiling.hbm.read", variants, 1.0 * bytes, ws, "reads b once (sum): bytes = 1 x array",
        [&](const StreamVariant& v) { return blocks_for(detail::ceiling::read_blocks_per_sm(v)); },
        [&](const StreamVariant& v, int blocks) {
          detail::ceiling::launch_read(b.get(), n4, partials.get<double>(), v, blocks, nullptr);
          const double got = device_partials_sum(partials, blocks), want = b_sum.get();
          // Terms are >= 1 each and only the double summation order differs: a dropped or doubled
          // vector moves the sum by >= 1, rounding by far less than 0.25.
          if (!(std::abs(got - want) <= 0.25))
            throw VerificationError(fmt::format("HBM read kernel ({}): sum {:.3f}, host reference {:.3f}",
                                                variant_name(v), got, want));
        },
        [&](const StreamVariant& v, int blocks, cuda_stream s) {
          detail::ceiling::launch_read(b.get(), n4, partials.get<double>(), v, blocks, s);
        });

    // triad: a = b + s * c
    best_stream_kernel(
        "ceiling.hbm.triad", variants, 3.0 * bytes, ws, "reads b and c, writes a: bytes = 3 x array",
        [&](const StreamVariant& v) { return blocks_for(detail::ceiling::triad_blocks_per_sm(v)); },
        [&](const StreamVariant& v, int blocks) {
          RIDGE_CHECK(cudaMemset(a.get(), 0xff, bytes));
          detail::ceiling::launch_triad(a.get(), b.get(), c.get(), triad_scalar, n4, v, blocks, nullptr);
          RIDGE_CHECK(cudaDeviceSynchronize());
          for (auto [first, count] : spot_ranges(n4 * 4)) {
            const auto got = copy_to_host(a.get(), first, count);
            for (std::int64_t i = 0; i < count; ++i) {
              const float want = std::fma(triad_scalar, random_value(seed_c, first + i, fill_lo, fill_hi),
                                          random_value(seed_b, first + i, fill_lo, fill_hi));
              if (got[i] != want)
                throw VerificationError(fmt::format("HBM triad kernel ({}): a[{}] = {}, expected {}", variant_name(v),
                                                    first + i, got[i], want));
            }
          }
        },
        [&](const StreamVariant& v, int blocks, cuda_stream s) {
          detail::ceiling::launch_triad(a.get(), b.get(), c.get(), triad_scalar, n4, v, blocks, s);
        });

    for (const auto& r : c_.records)
      if (r.name.rfind("ceiling.hbm.", 0) == 0 && r.bytes_per_s() > c_.ceilings.memory_bytes_per_s) {
        c_.ceilings.memory_bytes_per_s = r.bytes_per_s();
        c_.hbm_kernel = r.name.substr(std::string("ceiling.hbm.").size());
      }

    l2_bandwidth(b, partials, l2);
  }

  template <typename Blocks, typename Check, typename Launch>
  void best_stream_kernel(const std::string& name, const std::vector<StreamVariant>& variants, double bytes_moved,
                          const nlohmann::json& ws, const std::string& counting, Blocks blocks_of, Check check,
                          Launch launch) {
    const ClockReading start = read_clocks(device_);
    double best_rate = 0;
    StreamVariant best;
    int best_blocks = 0;
    nlohmann::json tried = nlohmann::json::array();
    for (const auto& v : variants) {
      const int blocks = blocks_of(v);
      check(v, blocks);
      const Measurement m = measure_spin([&](cuda_stream s) { launch(v, blocks, s); }, timing(7));
      const double rate = bytes_moved / (m.summary.median * 1e-3);
      tried.push_back({{"variant", variant_json(v, blocks)}, {"bytes_per_s", rate}});
      if (rate > best_rate) {
        best_rate = rate;
        best = v;
        best_blocks = blocks;
      }
    }
    // The winner, measured again with more samples: the recorded number is not the luckiest of
    // many short runs.
    const Measurement m = measure_spin([&](cuda_stream s) { launch(best, best_blocks, s); }, timing(25));
    nlohmann::json params = ws;
    params[param_key::working_set_bytes] = bytes_moved;
    // The shape the tuner kept can change from process to process: it is in extra, not in params,
    // which are the record's identity when runs are compared.
    Record r = record(m, name, DType::fp32, params, bytes_moved, 0, start);
    extra_key::counting.set(r, counting);
    extra_key::variants_tried.set(r, tried);
    extra_key::variant.set(r, variant_json(best, best_blocks));
    c_.records.push_back(r);
  }

  // --- L2: a quarter of the L2 read many times over --------------------------------------------
  void l2_bandwidth(const DeviceBuffer& b, const DeviceBuffer& partials, double l2) {
    const ClockReading start = read_clocks(device_);
    double best_rate = 0;
    Measurement best_m;
    nlohmann::json best_params;
    nlohmann::json tried = nlohmann::json::array();
    const std::int64_t target_n4 = std::int64_t(l2 / 4 / 16);  // a quarter of the L2, in 16-byte vectors
    for (int threads : {256, 512, 1024})
      for (int unroll : {1, 2, 4}) {
        const StreamVariant v{unroll, false, threads};
        // Every thread loads the same number of vectors per pass (a balanced pass, no tail), so
        // the grid shrinks when a full one would need more vectors than the working set holds.
        const std::int64_t per_sm_quantum = std::int64_t(d_.sm_count) * threads * unroll;
        const int blocks_per_sm = static_cast<int>(
            std::min<std::int64_t>(detail::ceiling::l2_read_blocks_per_sm(v), target_n4 / per_sm_quantum));
        if (blocks_per_sm < 1) continue;
        const int blocks = std::min(blocks_per_sm * d_.sm_count, 65536);
        const std::int64_t quantum = std::int64_t(blocks) * threads * unroll;
        const std::int64_t n4 = target_n4 / quantum * quantum;
        const double ws_bytes = double(n4) * 16;
        const int passes = static_cast<int>(std::clamp(8e9 / ws_bytes, 8.0, 20000.0));
        detail::ceiling::launch_l2_read(b.get(), n4, passes, partials.get<double>(), v, blocks, nullptr);
        const double got = device_partials_sum(partials, blocks);
        const double want = passes * host_group_sum(seed_b, 0, n4);
        if (!(std::abs(got - want) <= 0.25 + 1e-12 * want))
          throw VerificationError(fmt::format("L2 read kernel ({}): sum {:.3f} over {} passes, host reference {:.3f}",
                                              variant_name(v), got, passes, want));
        const Measurement m = measure_spin(
            [&](cuda_stream s) { detail::ceiling::launch_l2_read(b.get(), n4, passes, partials.get<double>(), v, blocks, s); },
            timing(9));
        const double rate = ws_bytes * passes / (m.summary.median * 1e-3);
        const nlohmann::json params{{param_key::working_set_bytes, ws_bytes},
                                    {param_key::passes, passes},
                                    {param_key::l2_bytes, l2},
                                    {param_key::variant, variant_json(v, blocks)},
                                    {param_key::bytes_counted, ws_bytes * passes}};
        tried.push_back({{"variant", variant_json(v, blocks)}, {"bytes_per_s", rate}});
        if (rate > best_rate) {
          best_rate = rate;
          best_m = m;
          best_params = params;
        }
      }
    if (best_params.is_null())
      throw Error(fmt::format("the L2 probe found no launch shape for a {} working set on {} SMs", format_bytes(l2 / 4),
                              d_.sm_count));
    const double bytes = best_params[param_key::bytes_counted].get<double>();
    // The kept shape sets the working set and passes too, and can change between processes: in extra.
    Record r = record(best_m, "ceiling.l2.read", DType::fp32, {{param_key::l2_bytes, l2}}, bytes, 0, start);
    extra_key::variant.set(r, best_params);
    extra_key::counting.set(r, "a working set of about L2/4 read `passes` times with L2-only loads: bytes = passes x set");
    extra_key::variants_tried.set(r, tried);
    c_.ceilings.l2_bytes_per_s = r.bytes_per_s();
    c_.records.push_back(r);
  }

  // --- FP32 FMA peak ------------------------------------------------------------------------------
  void fp32_fma() {
    const ClockReading start = read_clocks(device_);
    // x <- x * a + b with a just below 1: values stay near 1 and depend on every step.
    const float a = 1.0f - 1.0f / 1048576.0f, b = 1.0f / 1048576.0f;
    const int work_per_thread = 131072;  // FMAs per thread, whatever the chain count
    DeviceBuffer clock_info(4 * sizeof(unsigned long long), "the FMA probe's clock readings");
    double best_rate = 0, best_mhz = 0;
    Measurement best_m;
    nlohmann::json best_params, tried = nlohmann::json::array();
    double best_flops = 0;
    for (int chains : {8, 16})
      for (int threads : {256, 512, 1024}) {
        const int blocks = detail::ceiling::fma_blocks_per_sm(chains, threads) * d_.sm_count;
        const std::int64_t total_threads = std::int64_t(blocks) * threads;
        const int iterations = work_per_thread / chains;
        DeviceBuffer out(total_threads * sizeof(float), "the FMA probe's output");
        RIDGE_CHECK(cudaMemset(out.get(), 0xff, total_threads * sizeof(float)));
        detail::ceiling::launch_fma(out.get<float>(), iterations, a, b, chains, threads, blocks,
                            clock_info.get<unsigned long long>(), nullptr);
        check_fma(out, total_threads, iterations, a, b, chains, threads);
        const Measurement m = measure_spin(
            [&](cuda_stream s) {
              detail::ceiling::launch_fma(out.get<float>(), iterations, a, b, chains, threads, blocks,
                                  clock_info.get<unsigned long long>(), s);
            },
            timing(9));
        unsigned long long info[4] = {};
        RIDGE_CHECK(cudaMemcpy(info, clock_info.get(), sizeof info, cudaMemcpyDeviceToHost));
        const double mhz = info[3] > info[2] ? double(info[1] - info[0]) / double(info[3] - info[2]) * 1e3 : 0;
        const double flops = 2.0 * double(total_threads) * chains * iterations;
        const double rate = flops / (m.summary.median * 1e-3);
        const nlohmann::json params{{param_key::chains_per_thread, chains}, {param_key::threads_per_block, threads},
                                    {param_key::blocks, blocks},         {param_key::iterations, iterations},
                                    {param_key::observed_sm_mhz, mhz}};
        tried.push_back({{"variant", params}, {"flops_per_s", rate}});
        if (rate > best_rate) {
          best_rate = rate;
          best_m = m;
          best_params = params;
          best_mhz = mhz;
          best_flops = flops;
        }
      }
    // The kept shape and the clock it ran at change between processes: in extra, not the identity.
    Record r = record(best_m, "ceiling.fp32_fma", DType::fp32, nlohmann::json::object(), 0, best_flops, start);
    extra_key::variant.set(r, best_params);
    extra_key::counting.set(r, "2 FLOP per FMA; chains x iterations FMAs per thread");
    extra_key::observed_sm_mhz.set(r, best_mhz);
    extra_key::max_sm_clock_mhz.set(r, d_.max_sm_clock_mhz);
    extra_key::variants_tried.set(r, tried);
    c_.ceilings.peak_flops_per_s["fp32"] = r.flops_per_s();
    c_.fp32_observed_sm_mhz = best_mhz;
    c_.records.push_back(r);
  }

  // The FMA chains of sampled threads, recomputed on the host with the same fused operations.
  void check_fma(const DeviceBuffer& out, std::int64_t total_threads, int iterations, float a, float b, int chains,
                 int threads) {
    std::vector<std::int64_t> sampled;
    for (std::int64_t t = 0; t < 8 && t < total_threads; ++t) sampled.push_back(t);
    for (std::int64_t k = 1; k <= 8; ++k) sampled.push_back(total_threads * k / 9 + k);
    sampled.push_back(total_threads - 1);
    for (std::int64_t t : sampled) {
      float got = 0;
      RIDGE_CHECK(cudaMemcpy(&got, out.get<float>() + t, sizeof got, cudaMemcpyDeviceToHost));
      float sum = 0;
      for (int c = 0; c < chains; ++c) {
        float x = detail::ceiling::fma_start_value(t, c);
        for (int i = 0; i < iterations; ++i) x = std::fma(x, a, b);
        sum += x;
      }
      // Not bit-exact: nvcc may contract the start value's arithmetic differently from the host.
      if (!(std::abs(got - sum) <= 1e-5f * std::abs(sum)))
        throw VerificationError(fmt::format("FP32 FMA kernel ({} chains, {} threads/block): thread {} wrote {:.9g}, "
                                            "host reference {:.9g}",
                                            chains, threads, t, got, sum));
    }
  }

  // --- tensor cores: large cuBLASLt GEMMs per dtype ----------------------------------------------
  void tensor() {
    const std::int64_t n = 8192;
    for (DType dtype : {DType::bf16, DType::fp16, DType::tf32, DType::fp8_e4m3}) {
      std::unique_ptr<detail::Gemm> gemm;
      try {
        gemm = std::make_unique<detail::Gemm>(GemmShape{n, n, n}, dtype);
      } catch (const UsageError& e) {
        c_.notes.push_back(fmt::format("{}: not measured ({})", to_string(dtype), e.what()));
        continue;
      }
      const detail::GemmCheck check = gemm->verify();
      if (!check.passed)
        throw VerificationError(fmt::format("the {} GEMM {}^3 gave wrong results: {}", to_string(dtype), n,
                                            check.summary()));
      const ClockReading start = read_clocks(device_);
      const Measurement m = measure_spin([&](cuda_stream s) { gemm->run(s); }, timing(12, 3));
      Record r = record(m, "ceiling.tensor", dtype, gemm_params(GemmShape{n, n, n}), gemm->bytes(),
                        gemm->flops(), start);
      extra_key::algorithm.set(r, gemm->algorithm());
      extra_key::check.set(r, check.summary());
      c_.ceilings.peak_flops_per_s[to_string(dtype)] = r.flops_per_s();
      c_.records.push_back(r);
    }
  }

  int device_;
  const DeviceDescription& d_;
  MeasuredCeilings c_;
};

}  // namespace

MeasuredCeilings measured_ceilings(int device, bool refresh) {
  require_gpu(device);
  const DeviceDescription d = describe_device(device);
  return cached_or_measured_ceilings(d.uuid, refresh, [&] { return Prober(device, d).run(); });
}

}  // namespace ridge
