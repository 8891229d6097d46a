// `ridge p2p` on the GPUs: copy-engine (cudaMemcpyAsync across devices) and SM (a copy kernel) copies between
// every pair of GPUs, one way and both ways, plus host-to-device and device-to-host copies from
// pinned and pageable memory. Every copy is checked against the source's pattern before it is timed.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "collectives/cuda/collective_kernels.hpp"
#include "measure/cuda/cuda_check.hpp"
#include "ridge/checks.hpp"
#include "ridge/collectives.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"

namespace ridge {

namespace {

using detail::collective_kernels::launch_pattern_check;
using detail::collective_kernels::launch_pattern_fill;
using detail::collective_kernels::launch_sm_copy;
using detail::collective_kernels::pattern_word;

std::uint32_t salt_of(int gpu) { return 0x51ED0000u + static_cast<std::uint32_t>(gpu); }
std::uint32_t host_salt(int gpu) { return 0x40570000u + static_cast<std::uint32_t>(gpu); }

struct Gpu {
  int index = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  void* src = nullptr;
  void* dst = nullptr;
  unsigned long long* counters = nullptr;
  int copy_blocks = 0;
};

class P2pBench {
 public:
  P2pBench(const P2pOptions& o, int gpus) : o_(o) {
    for (int g = 0; g < gpus; ++g) {
      Gpu x;
      x.index = g;
      RIDGE_CHECK(cudaSetDevice(g));
      RIDGE_CHECK(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking));
      RIDGE_CHECK(cudaEventCreateWithFlags(&x.event, cudaEventDisableTiming));
      alloc(&x.src, g);
      alloc(&x.dst, g);
      RIDGE_CHECK(cudaMalloc(reinterpret_cast<void**>(&x.counters), 2 * sizeof(unsigned long long)));
      int sms = 0;
      RIDGE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g));
      x.copy_blocks = sms * 4;
      launch_pattern_fill(static_cast<std::uint32_t*>(x.src), words(), salt_of(g), x.stream);
      RIDGE_CHECK_LAUNCH();
      RIDGE_CHECK(cudaStreamSynchronize(x.stream));
      gpu_.push_back(x);
    }
    peer_.assign(gpus, std::vector<bool>(gpus, true));
    for (int s = 0; s < gpus; ++s)
      for (int d = 0; d < gpus; ++d) {
        if (s == d) continue;
        int can = 0;
        RIDGE_CHECK(cudaDeviceCanAccessPeer(&can, s, d));
        peer_[s][d] = can != 0;
        if (!can) continue;
        RIDGE_CHECK(cudaSetDevice(s));
        const cudaError_t status = cudaDeviceEnablePeerAccess(d, 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled)
          cudaGetLastError();
        else
          RIDGE_CHECK(status);
      }
  }
  ~P2pBench() {
    for (auto& x : gpu_) {
      cudaSetDevice(x.index);
      cudaFree(x.src);
      cudaFree(x.dst);
      cudaFree(x.counters);
      cudaEventDestroy(x.event);
      cudaStreamDestroy(x.stream);
    }
  }
  P2pBench(const P2pBench&) = delete;
  P2pBench& operator=(const P2pBench&) = delete;

  const std::vector<std::vector<bool>>& peer_access() const { return peer_; }

  /// One-way copy s -> d (bandwidth and latency), by the copy engine and by SMs where allowed.
  void one_way(int s, int d, std::vector<Record>& out, const SweepCallbacks& cb) {
    auto ce = [&, s, d](std::int64_t bytes) {
      return [&, s, d, bytes](cuda_stream st) {
        // cudaMemcpyAsync with unified addressing, not cudaMemcpyPeerAsync: the same copy-engine copy,
        // and the latency is timed by graph replay, where a peer copy cannot be captured.
        RIDGE_CHECK(cudaMemcpyAsync(gpu_[d].dst, gpu_[s].src, static_cast<std::size_t>(bytes), cudaMemcpyDefault, st));
      };
    };
    checked_copy(d, s, ce(o_.bytes), gpu_[s].stream, fmt::format("copy engine GPU {} -> GPU {}", s, d));
    emit(out, cb, time_bw(ce(o_.bytes), s, "p2p.ce", p2p_params(s, d, "one_way", "device", o_.bytes, "bandwidth")));
    emit(out, cb,
         time_latency(ce(o_.latency_bytes), s, "p2p.ce",
                      p2p_params(s, d, "one_way", "device", o_.latency_bytes, "latency")));
    if (!peer_[s][d]) return;  // an SM copy needs s to address d's memory
    auto sm = [&, s, d](std::int64_t bytes) {
      return [&, s, d, bytes](cuda_stream st) {
        launch_sm_copy(gpu_[d].dst, gpu_[s].src, bytes, gpu_[s].copy_blocks, st);
        RIDGE_CHECK_LAUNCH();
      };
    };
    checked_copy(d, s, sm(o_.bytes), gpu_[s].stream, fmt::format("SM copy GPU {} -> GPU {}", s, d));
    emit(out, cb, time_bw(sm(o_.bytes), s, "p2p.sm", p2p_params(s, d, "one_way", "device", o_.bytes, "bandwidth")));
    emit(out, cb,
         time_latency(sm(o_.latency_bytes), s, "p2p.sm",
                      p2p_params(s, d, "one_way", "device", o_.latency_bytes, "latency")));
  }

  /// s -> d and d -> s at once (s != d): bytes counted in both directions.
  void both_ways(int s, int d, std::vector<Record>& out, const SweepCallbacks& cb) {
    for (const bool sm : {false, true}) {
      if (sm && !(peer_[s][d] && peer_[d][s])) continue;
      auto copy = [&, s, d, sm](cuda_stream st) {
        // Fork d's stream off s's, copy both ways, join back: one timed window on s's stream.
        RIDGE_CHECK(cudaSetDevice(s));
        RIDGE_CHECK(cudaEventRecord(gpu_[s].event, st));
        RIDGE_CHECK(cudaStreamWaitEvent(gpu_[d].stream, gpu_[s].event, 0));
        copy_on(s, d, sm, st);
        RIDGE_CHECK(cudaSetDevice(d));
        copy_on(d, s, sm, gpu_[d].stream);
        RIDGE_CHECK(cudaEventRecord(gpu_[d].event, gpu_[d].stream));
        RIDGE_CHECK(cudaSetDevice(s));
        RIDGE_CHECK(cudaStreamWaitEvent(st, gpu_[d].event, 0));
      };
      const std::string what = fmt::format("{} GPU {} <-> GPU {}", sm ? "SM copy" : "copy engine", s, d);
      poison(s);
      poison(d);
      RIDGE_CHECK(cudaSetDevice(s));
      copy(gpu_[s].stream);
      RIDGE_CHECK(cudaStreamSynchronize(gpu_[s].stream));
      verify(d, s, what);
      verify(s, d, what);
      RIDGE_CHECK(cudaSetDevice(s));
      Record r = time_bw(copy, s, sm ? "p2p.sm" : "p2p.ce", p2p_params(s, d, "both_ways", "device", o_.bytes, "bandwidth"));
      r.bytes = 2.0 * static_cast<double>(o_.bytes);
      emit(out, cb, r);
    }
  }

  /// Host -> GPU g and GPU g -> host, pinned and pageable.
  void host(int g, std::vector<Record>& out, const SweepCallbacks& cb) {
    const auto count = static_cast<std::size_t>(words());
    std::vector<std::uint32_t> pageable(count);
    std::uint32_t* pinned = nullptr;
    RIDGE_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned), count * sizeof(std::uint32_t)));
    std::unique_ptr<std::uint32_t, decltype(&cudaFreeHost)> pinned_owner(pinned, cudaFreeHost);
    RIDGE_CHECK(cudaSetDevice(g));
    const auto bytes = static_cast<std::size_t>(o_.bytes);
    for (const bool is_pinned : {true, false}) {
      std::uint32_t* h = is_pinned ? pinned : pageable.data();
      const std::string memory = is_pinned ? "pinned" : "pageable";
      // Host to device: the host holds the host pattern, the GPU checks it.
      for (std::size_t i = 0; i < count; ++i) h[i] = pattern_word(host_salt(g), static_cast<std::int64_t>(i));
      auto h2d = [&, h](cuda_stream st) {
        RIDGE_CHECK(cudaMemcpyAsync(gpu_[g].dst, h, bytes, cudaMemcpyHostToDevice, st));
      };
      poison(g);
      h2d(gpu_[g].stream);
      RIDGE_CHECK(cudaStreamSynchronize(gpu_[g].stream));
      verify_words(g, gpu_[g].dst, host_salt(g), fmt::format("host ({}) -> GPU {}", memory, g));
      emit(out, cb, time_host(h2d, g, is_pinned, p2p_params(-1, g, "one_way", memory, o_.bytes, "bandwidth")));
      // Device to host: the host checks the GPU's pattern.
      auto d2h = [&, h](cuda_stream st) {
        RIDGE_CHECK(cudaMemcpyAsync(h, gpu_[g].src, bytes, cudaMemcpyDeviceToHost, st));
      };
      std::fill(h, h + count, 0xFFFFFFFFu);
      d2h(gpu_[g].stream);
      RIDGE_CHECK(cudaStreamSynchronize(gpu_[g].stream));
      for (std::size_t i = 0; i < count; ++i)
        if (h[i] != pattern_word(salt_of(g), static_cast<std::int64_t>(i)))
          throw VerificationError(fmt::format("GPU {} -> host ({}): word {} of {} is wrong", g, memory, i, count));
      emit(out, cb, time_host(d2h, g, is_pinned, p2p_params(g, -1, "one_way", memory, o_.bytes, "bandwidth")));
    }
  }

 private:
  std::int64_t words() const { return o_.bytes / 4; }

  void alloc(void** p, int g) {
    if (cudaMalloc(p, static_cast<std::size_t>(o_.bytes)) != cudaSuccess) {
      cudaGetLastError();
      throw Error(fmt::format("cannot allocate 2 x {} on GPU {} for p2p copies: lower bytes, the size of each copy", o_.bytes, g));
    }
  }

  void copy_on(int from, int to, bool sm, cuda_stream st) {
    if (sm) {
      launch_sm_copy(gpu_[to].dst, gpu_[from].src, o_.bytes, gpu_[from].copy_blocks, st);
      RIDGE_CHECK_LAUNCH();
    } else {
      RIDGE_CHECK(cudaMemcpyPeerAsync(gpu_[to].dst, to, gpu_[from].src, from, static_cast<std::size_t>(o_.bytes), st));
    }
  }

  void poison(int g) {
    RIDGE_CHECK(cudaSetDevice(g));
    RIDGE_CHECK(cudaMemsetAsync(gpu_[g].dst, 0xFF, static_cast<std::size_t>(o_.bytes), gpu_[g].stream));
    RIDGE_CHECK(cudaStreamSynchronize(gpu_[g].stream));
  }

  void verify_words(int g, const void* data, std::uint32_t salt, const std::string& what) {
    RIDGE_CHECK(cudaSetDevice(g));
    Gpu& x = gpu_[g];
    RIDGE_CHECK(cudaMemsetAsync(x.counters, 0, sizeof(unsigned long long), x.stream));
    RIDGE_CHECK(cudaMemsetAsync(x.counters + 1, 0xFF, sizeof(unsigned long long), x.stream));
    launch_pattern_check(static_cast<const std::uint32_t*>(data), words(), salt, x.counters, x.stream);
    RIDGE_CHECK_LAUNCH();
    unsigned long long host[2] = {0, 0};
    RIDGE_CHECK(cudaMemcpyAsync(host, x.counters, sizeof host, cudaMemcpyDeviceToHost, x.stream));
    RIDGE_CHECK(cudaStreamSynchronize(x.stream));
    if (host[0] != 0)
      throw VerificationError(fmt::format("{}: {} of {} words wrong, the first at word {}", what, host[0], words(), host[1]));
  }

  /// GPU d's destination must hold GPU s's pattern.
  void verify(int d, int s, const std::string& what) { verify_words(d, gpu_[d].dst, salt_of(s), what); }

  void checked_copy(int d, int s, const StreamFn& copy, cuda_stream st, const std::string& what) {
    poison(d);
    RIDGE_CHECK(cudaSetDevice(s));
    copy(st);
    RIDGE_CHECK(cudaStreamSynchronize(st));
    verify(d, s, what);
  }

  CudaOptions options_on(int g) const {
    CudaOptions c;
    c.samples = o_.samples;
    c.warmup = o_.warmup;
    c.stream = gpu_[g].stream;
    return c;
  }

  Record time_bw(const StreamFn& fn, int s, const std::string& name, nlohmann::json params) {
    RIDGE_CHECK(cudaSetDevice(s));
    Record r = to_record(measure_cuda(fn, options_on(s)), name, std::nullopt, std::move(params), static_cast<double>(o_.bytes));
    r.verification = "passed";
    return r;
  }

  Record time_latency(const StreamFn& fn, int s, const std::string& name, nlohmann::json params) {
    RIDGE_CHECK(cudaSetDevice(s));
    CudaOptions c = options_on(s);
    c.repeats = 20;  // copies per graph: the launch stays out of the time per copy
    Record r = to_record(measure_graph(fn, c), name, std::nullopt, std::move(params), static_cast<double>(o_.latency_bytes));
    r.verification = "passed";  // the same copy, checked at full size
    return r;
  }

  Record time_host(const StreamFn& fn, int g, bool pinned, nlohmann::json params) {
    RIDGE_CHECK(cudaSetDevice(g));
    // A pageable copy stages through a driver buffer on the host: only the caller's wait is honest.
    const Measurement m = pinned ? measure_cuda(fn, options_on(g))
                                 : measure_wall([&] { fn(gpu_[g].stream); }, WallOptions{o_.samples, o_.warmup, true});
    Record r = to_record(m, "p2p.host", std::nullopt, std::move(params), static_cast<double>(o_.bytes));
    r.verification = "passed";
    return r;
  }

  static void emit(std::vector<Record>& out, const SweepCallbacks& cb, Record r) {
    out.push_back(std::move(r));
    if (cb.on_record) cb.on_record(out.back());
  }

  const P2pOptions& o_;
  std::vector<Gpu> gpu_;
  std::vector<std::vector<bool>> peer_;
};

}  // namespace

P2pRun run_p2p(const P2pOptions& options, const SweepCallbacks& callbacks) {
  const auto started = std::chrono::steady_clock::now();
  validate(options);
  require_gpu(0);
  P2pRun run;
  run.options = options;
  const int visible = device_count();
  run.gpus = options.gpus == 0 ? visible : options.gpus;
  if (run.gpus > visible)
    throw UsageError(fmt::format("gpus {}: only {} GPU{} visible", run.gpus, visible, visible == 1 ? " is" : "s are"));
  for (int g = 0; g < run.gpus; ++g) run.devices.push_back(describe_device(g));
  P2pBench bench(options, run.gpus);
  run.peer_access = bench.peer_access();
  const std::size_t total = static_cast<std::size_t>(run.gpus * run.gpus + run.gpus * (run.gpus - 1) / 2) +
                            (options.host ? static_cast<std::size_t>(run.gpus) : 0);
  std::size_t step = 0;
  auto progress = [&](const std::string& what) {
    if (callbacks.on_progress) callbacks.on_progress(step++, total, what);
  };
  for (int s = 0; s < run.gpus; ++s)
    for (int d = 0; d < run.gpus; ++d) {
      progress(fmt::format("GPU {} -> GPU {}", s, d));
      bench.one_way(s, d, run.records, callbacks);
    }
  for (int s = 0; s < run.gpus; ++s)
    for (int d = s + 1; d < run.gpus; ++d) {
      progress(fmt::format("GPU {} <-> GPU {}", s, d));
      bench.both_ways(s, d, run.records, callbacks);
    }
  if (options.host)
    for (int g = 0; g < run.gpus; ++g) {
      progress(fmt::format("host <-> GPU {}", g));
      bench.host(g, run.records, callbacks);
    }
  analyze_p2p(run);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run;
}

}  // namespace ridge
