// The timers. Each one returns raw per-operation samples; callers summarize and label them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "measure/cuda/probes.hpp"
#include "measure/cuda/launchers.hpp"
#include "trace/cupti/inject_env.hpp"

namespace ridge {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// The methods that time every launch (events, wall) cannot drop a throttled sample after the fact
/// without changing what they measure; throttle recovery and rests belong to the held batches.
void refuse_held_batch_options(const CudaOptions& o, const char* method) {
  if (o.throttle_threshold > 0)
    throw UsageError(fmt::format("throttle_threshold applies to the launch-free methods (spin, graph), not to {}", method));
  if (o.rest_before_sample_s > 0)
    throw UsageError(fmt::format("rest_before_sample_s applies to the launch-free methods (spin, graph), not to {}", method));
}

/// Throttle recovery for held batches (CudaOptions::throttle_threshold): reads the SM clock after
/// a batch and says whether the batch ran throttled; rests the GPU after one that did.
class ThrottleWatch {
 public:
  static constexpr int max_consecutive_drops = 100;

  explicit ThrottleWatch(const CudaOptions& o) : recovery_s_(o.throttle_recovery_s) {
    if (o.throttle_threshold <= 0) return;
    RIDGE_CHECK(cudaGetDevice(&device_));
    if (read_clocks(device_).source != "nvml")
      throw Error(fmt::format("throttle_threshold needs NVML to read the SM clock, and NVML is not usable ({}); "
                              "set throttle_threshold=0",
                              nvml_status()));
    rated_mhz_ = describe_device(device_).max_sm_clock_mhz;
    below_mhz_ = o.throttle_threshold * rated_mhz_;
  }
  bool on() const { return below_mhz_ > 0; }
  double sm_mhz() const {
    const ClockReading c = read_clocks(device_);
    if (c.source != "nvml" || !(c.sm_mhz > 0))
      throw Error(fmt::format("NVML stopped reading the SM clock during a throttle-watched measurement ({}); "
                              "set throttle_threshold=0",
                              nvml_status()));
    return c.sm_mhz;
  }
  /// True when the batch whose clock is `mhz` ran throttled: the caller drops it. Throws after
  /// max_consecutive_drops in a row, rather than waiting forever for a clock that does not return.
  bool throttled(double mhz) {
    if (!(mhz < below_mhz_)) {
      consecutive_ = 0;
      return false;
    }
    if (++consecutive_ > max_consecutive_drops)
      throw Error(fmt::format("the SM clock stayed below the throttle threshold ({:.0f} MHz, {:.0f}% of the rated "
                              "{:.0f} MHz) for {} batches in a row, resting {} s after each (last read {:.0f} MHz); "
                              "lower throttle_threshold or let the GPU cool",
                              below_mhz_, 100 * below_mhz_ / rated_mhz_, rated_mhz_, max_consecutive_drops, recovery_s_,
                              mhz));
    std::this_thread::sleep_for(std::chrono::duration<double>(recovery_s_));
    return true;
  }

 private:
  double recovery_s_ = 0;
  int device_ = 0;
  double rated_mhz_ = 0, below_mhz_ = 0;
  int consecutive_ = 0;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { RIDGE_CHECK(cudaEventCreate(&e)); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

float elapsed_ms(const Event& a, const Event& b) {
  float ms = 0;
  RIDGE_CHECK(cudaEventElapsedTime(&ms, a.e, b.e));
  return ms;
}

// Decides when sampling stops: a fixed count, or adaptively on the median's confidence interval.
class StopRule {
 public:
  explicit StopRule(const CudaOptions& o) : o_(o), start_(clock_type::now()) {}
  bool more(const std::vector<double>& samples, std::string& reason) const {
    const auto n = static_cast<int>(samples.size());
    if (n < o_.samples) return true;
    if (o_.target_ci_relative <= 0) {
      reason = "samples";
      return false;
    }
    if (summarize(samples).median_ci_relative() <= o_.target_ci_relative) {
      reason = "converged";
      return false;
    }
    if (n >= o_.max_samples) {
      reason = "max_samples";
      return false;
    }
    if (ms_since(start_) / 1e3 >= o_.time_budget_s) {
      reason = "time_budget";
      return false;
    }
    return true;
  }

 private:
  const CudaOptions& o_;
  clock_type::time_point start_;
};

// Times one call with events (after the warm-up) and picks repeats so a sample lasts about
// target_sample_ms (ridge::auto_repeats).
int measured_auto_repeats(const StreamFn& fn, cuda_stream stream, double target_ms) {
  Event a, b;
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  RIDGE_CHECK(cudaEventRecord(a.e, stream));
  for (int i = 0; i < 3; ++i) fn(stream);
  RIDGE_CHECK(cudaEventRecord(b.e, stream));
  RIDGE_CHECK(cudaEventSynchronize(b.e));
  return auto_repeats(elapsed_ms(a, b) / 3.0, target_ms);
}

Measurement finish(Measurement m, const std::string& reason) {
  m.summary = summarize(m.samples_ms);
  m.stop_reason = reason;
  return m;
}

/// Whether a hardware-counter profiler replays this process's kernels (`ridge trace --counters`
/// around it). Each profiled launch then returns only once its kernel has run every replay pass,
/// so a stream held by hold_stream_kernel would stall each launch queued behind it until the spin
/// timeout (5 s a pass): the batch is queued without the hold, and its times are not the ones the
/// trace uses anyway (replayed kernels are timed from the launches left untouched).
bool kernels_replayed_by_counters() {
  static const bool replayed = [] {
    const char* counters = std::getenv(detail::inject_env::counters);
    const bool on = counters != nullptr && *counters != '\0';
    // Said once, before the first measurement under counters, so no number is read without it.
    if (on)
      std::fprintf(stderr,
                   "ridge: this process runs under ridge trace with hardware counters: the timers queue their batches without "
                   "holding the stream (a held stream would stall each profiled launch), and a launch profiled by "
                   "kernel replay runs once per pass inside its launch call, so times measured here include "
                   "profiling; the trace times kernels from their unprofiled launches. ridge's own timing kernels "
                   "(stream hold, empty launch, busy wait) are never profiled.\n");
    return on;
  }();
  return replayed;
}

// Pinned, device-mapped flags that let the host release a stream held by hold_stream_kernel.
class StreamHold {
 public:
  StreamHold() {
    RIDGE_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_), 2 * sizeof(int), cudaHostAllocMapped));
    RIDGE_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0));
  }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  ~StreamHold() {
    // The timed function threw (a Python exception, Ctrl-C) while the stream was held: release it
    // and let the kernel end before freeing the flag it polls, or the stream would stall until the
    // spin timeout and the kernel would read freed memory.
    if (held_) {
      release();
      cudaStreamSynchronize(held_stream_);
    }
    if (host_) cudaFreeHost(host_);
  }
  void hold(cuda_stream stream, double timeout_s) {
    std::atomic_ref<int>(host_[0]).store(0);
    std::atomic_ref<int>(host_[1]).store(0);
    launch_hold_stream(stream, device_, timeout_s);
    held_ = true;
    held_stream_ = stream;
  }
  void release() {
    std::atomic_ref<int>(host_[0]).store(1);
    held_ = false;
  }
  bool timed_out() const { return std::atomic_ref<int>(host_[1]).load() != 0; }

 private:
  int* host_ = nullptr;
  int* device_ = nullptr;
  bool held_ = false;
  cuda_stream held_stream_ = nullptr;
};

/// The SM clock now (NVML), or -1 when NVML cannot read it.
double sm_clock_mhz(int device) {
  const ClockReading c = read_clocks(device);
  return c.source == "nvml" && c.sm_mhz > 0 ? c.sm_mhz : -1;
}

/// Settle (CudaOptions::settle_max_s): runs the work back to back, in chunks of about 2 ms of GPU
/// time, reading the SM clock after each, until the last `settle_readings` readings agree within
/// `settle_tolerance` or the time is up. Fills m.settle_ms, settled_sm_mhz, settle_reached_steady.
void settle_sm_clock(const std::function<void(cuda_stream)>& enqueue_work, cuda_stream stream, int device,
                     const CudaOptions& o, Measurement& m) {
  if (o.settle_max_s <= 0 || sm_clock_mhz(device) < 0) return;
  const auto t0 = clock_type::now();
  Event a, b;
  RIDGE_CHECK(cudaEventRecord(a.e, stream));
  enqueue_work(stream);
  RIDGE_CHECK(cudaEventRecord(b.e, stream));
  RIDGE_CHECK(cudaEventSynchronize(b.e));
  constexpr double chunk_ms = 2.0;
  const int chunk = static_cast<int>(std::clamp(chunk_ms / std::max(1e-4, static_cast<double>(elapsed_ms(a, b))), 1.0, 256.0));
  std::vector<double> readings;
  while (true) {
    for (int i = 0; i < chunk; ++i) enqueue_work(stream);
    RIDGE_CHECK(cudaStreamSynchronize(stream));
    readings.push_back(sm_clock_mhz(device));
    const auto n = static_cast<std::size_t>(o.settle_readings);
    if (readings.size() >= n) {
      const auto [lo, hi] = std::minmax_element(readings.end() - static_cast<std::ptrdiff_t>(n), readings.end());
      if (*lo > 0 && *hi <= *lo * (1 + o.settle_tolerance)) {
        m.settle_reached_steady = true;
        break;
      }
    }
    if (ms_since(t0) >= o.settle_max_s * 1e3) break;
  }
  m.settle_ms = ms_since(t0);
  m.settled_sm_mhz = readings.back();
}

// Runs samples in batches behind a held stream: hold, queue [ev0][work][ev1] per sample, release,
// synchronize. `ops_per_sample` bounds how many launches one batch queues, so the driver's launch
// queue never fills while the GPU is held. A cold sample is a batch of its own, flushed and
// drained before the hold, as nvbench's cold measurement does: flushed samples queued back to back
// read ~0.5 us higher on a 4 us kernel, with 2.4x the spread, whatever the gap after the flush
// (bench/cold_flush_probe.cu, results/h200/timing/cold_flush).
Measurement held_samples(const std::function<void(cuda_stream)>& enqueue_work, int ops_per_sample,
                         const CudaOptions& o, cuda_stream stream, Method method, int repeats) {
  Measurement m;
  m.method = method;
  m.repeats_per_sample = repeats;
  m.l2_flushed = o.flush_l2;
  m.rest_before_sample_s = o.rest_before_sample_s;
  std::unique_ptr<L2Flusher> flusher;
  if (o.flush_l2) flusher = std::make_unique<L2Flusher>();
  int device = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  settle_sm_clock(enqueue_work, stream, device, o, m);
  // Every batch's clock is kept with its samples when NVML reads it (compare judges clocks).
  bool clock_readable = m.settle_ms > 0 || sm_clock_mhz(device) > 0;
  StreamHold hold;
  const bool hold_queue = !kernels_replayed_by_counters();
  ThrottleWatch throttle(o);
  StopRule rule(o);
  std::string reason;
  const int batch = flusher ? 1 : std::max(1, 128 / std::max(1, ops_per_sample + 3));
  std::vector<std::unique_ptr<Event>> starts, ends;
  for (int i = 0; i < batch; ++i) {
    starts.push_back(std::make_unique<Event>());
    ends.push_back(std::make_unique<Event>());
  }
  while (rule.more(m.samples_ms, reason)) {
    const int remaining = std::max(1, o.samples - static_cast<int>(m.samples_ms.size()));
    const int count = std::min(batch, o.target_ci_relative > 0 ? batch : remaining);
    // The previous batch was synchronized: the GPU is idle for the rest.
    if (o.rest_before_sample_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.rest_before_sample_s));
    if (flusher) flusher->flush(stream);
    RIDGE_CHECK(cudaStreamSynchronize(stream));
    if (hold_queue) hold.hold(stream, o.spin_timeout_s);
    for (int i = 0; i < count; ++i) {
      RIDGE_CHECK(cudaEventRecord(starts[i]->e, stream));
      enqueue_work(stream);
      RIDGE_CHECK(cudaEventRecord(ends[i]->e, stream));
    }
    if (hold_queue) hold.release();
    RIDGE_CHECK(cudaStreamSynchronize(stream));
    if (hold_queue && hold.timed_out())
      throw Error(fmt::format(
          "the spin kernel holding the stream timed out after {} s before the host finished queuing a batch; "
          "the work may launch too many kernels or synchronize inside the timed function. Use fewer repeats, or "
          "the events method (method events; measure_cuda in Python)",
          o.spin_timeout_s));
    if (throttle.on()) {
      const double mhz = throttle.sm_mhz();
      if (throttle.throttled(mhz)) {
        m.throttled_samples_dropped += count;
        continue;
      }
      m.sample_sm_mhz.insert(m.sample_sm_mhz.end(), count, mhz);
    } else if (clock_readable) {
      const double mhz = sm_clock_mhz(device);
      if (mhz > 0) {
        m.sample_sm_mhz.insert(m.sample_sm_mhz.end(), count, mhz);
      } else {  // NVML stopped answering: no clock rather than a clock for some samples only
        clock_readable = false;
        m.sample_sm_mhz.clear();
      }
    }
    for (int i = 0; i < count; ++i) m.samples_ms.push_back(elapsed_ms(*starts[i], *ends[i]) / repeats);
  }
  return finish(std::move(m), reason);
}

}  // namespace

Measurement measure_wall(const HostFn& fn, WallOptions o) {
  if (o.samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", o.warmup));
  const bool cuda = o.cuda.value_or(device_count() > 0);
  Measurement m;
  m.method = cuda ? Method::wall_sync : Method::cpu_wall;
  for (int i = 0; i < o.warmup; ++i) fn();
  for (int i = 0; i < o.samples; ++i) {
    if (cuda) RIDGE_CHECK(cudaDeviceSynchronize());
    const auto t0 = clock_type::now();
    fn();
    if (cuda) RIDGE_CHECK(cudaDeviceSynchronize());
    m.samples_ms.push_back(ms_since(t0));
  }
  return finish(std::move(m), "samples");
}

Measurement measure_naive(const HostFn& fn, int samples, int warmup) {
  if (samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", samples));
  const bool cuda = device_count() > 0;
  Measurement m;
  m.method = Method::wall_naive;
  for (int i = 0; i < warmup; ++i) fn();
  for (int i = 0; i < samples; ++i) {
    // Drain earlier work outside the window so each sample starts from an empty queue, exactly as
    // a notebook's `t0 = perf_counter(); y = x @ x; perf_counter() - t0` does in a fresh cell.
    if (cuda) RIDGE_CHECK(cudaDeviceSynchronize());
    const auto t0 = clock_type::now();
    fn();
    m.samples_ms.push_back(ms_since(t0));
  }
  if (cuda) RIDGE_CHECK(cudaDeviceSynchronize());
  return finish(std::move(m), "samples");
}

Measurement measure_cuda(const StreamFn& fn, CudaOptions o) {
  o.validate();
  refuse_held_batch_options(o, "events");
  kernels_replayed_by_counters();  // says so once, under counters
  cuda_stream stream = o.stream;
  for (int i = 0; i < o.warmup; ++i) fn(stream);
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  int repeats = o.repeats == 0 ? measured_auto_repeats(fn, stream, o.target_sample_ms) : o.repeats;
  if (o.flush_l2) repeats = 1;  // the flush must precede every timed call
  Measurement m;
  m.method = Method::cuda_events;
  m.repeats_per_sample = repeats;
  m.l2_flushed = o.flush_l2;
  std::unique_ptr<L2Flusher> flusher;
  if (o.flush_l2) flusher = std::make_unique<L2Flusher>();
  Event start, end;
  StopRule rule(o);
  std::string reason;
  std::vector<double> host_queue_ms;  // how long the host took to queue each sample, per operation
  while (rule.more(m.samples_ms, reason)) {
    if (flusher) flusher->flush(stream);
    const auto queued_from = clock_type::now();
    RIDGE_CHECK(cudaEventRecord(start.e, stream));
    for (int r = 0; r < repeats; ++r) fn(stream);
    RIDGE_CHECK(cudaEventRecord(end.e, stream));
    host_queue_ms.push_back(ms_since(queued_from) / repeats);
    RIDGE_CHECK(cudaEventSynchronize(end.e));
    m.samples_ms.push_back(elapsed_ms(start, end) / repeats);
  }
  m.host_queue_ms = summarize(host_queue_ms).median;
  return finish(std::move(m), reason);
}

Measurement measure_cuda(const HostFn& fn, CudaOptions o) {
  return measure_cuda([&](cuda_stream) { fn(); }, o);
}

namespace {

// How many operations one call of fn enqueues, found by capturing it into a graph on a scratch
// stream and counting the nodes (nothing runs). Falls back to a cautious guess when fn cannot be
// captured. A held stream must never have more operations queued than the driver's launch queue
// holds, or the host blocks until the spin kernel times out.
int launches_per_call(const StreamFn& fn) {
  constexpr int fallback = 64;
  cudaStream_t scratch = nullptr;
  if (cudaStreamCreateWithFlags(&scratch, cudaStreamNonBlocking) != cudaSuccess) return fallback;
  int count = fallback;
  if (cudaStreamBeginCapture(scratch, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    bool threw = false;
    try {
      fn(scratch);
    } catch (...) {
      threw = true;
    }
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(scratch, &graph) == cudaSuccess && graph && !threw) {
      size_t nodes = 0;
      if (cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess) count = std::max<int>(1, static_cast<int>(nodes));
    }
    if (graph) cudaGraphDestroy(graph);
  }
  cudaGetLastError();
  cudaStreamDestroy(scratch);
  return count;
}

}  // namespace

Measurement measure_spin(const StreamFn& fn, CudaOptions o) {
  o.validate();
  cuda_stream stream = o.stream;
  for (int i = 0; i < o.warmup; ++i) fn(stream);
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  const int launches = launches_per_call(fn);
  constexpr int max_held_launches = 512;
  int repeats = o.repeats == 0 ? std::min(64, measured_auto_repeats(fn, stream, o.target_sample_ms)) : o.repeats;
  if (o.repeats == 0) repeats = std::max(1, std::min(repeats, max_held_launches / launches));
  if (o.flush_l2) repeats = 1;  // the flush must precede every timed call
  if (repeats * launches > max_held_launches)
    throw UsageError(fmt::format("spin hold: {} calls x {} launches per call would overfill the launch queue while "
                                 "the stream is held; use fewer repeats (at most {}) or the graph method",
                                 repeats, launches, std::max(1, max_held_launches / launches)));
  return held_samples(
      [&](cuda_stream s) {
        for (int r = 0; r < repeats; ++r) fn(s);
      },
      repeats * launches, o, stream, Method::spin_hold, repeats);
}

Measurement measure_graph(const StreamFn& fn, CudaOptions o) {
  o.validate();
  cudaStream_t stream = o.stream;
  cudaStream_t own = nullptr;
  if (!stream) {
    RIDGE_CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    stream = own;
  }
  struct Cleanup {
    cudaStream_t s = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    ~Cleanup() {
      if (e) cudaGraphExecDestroy(e);
      if (g) cudaGraphDestroy(g);
      if (s) cudaStreamDestroy(s);
    }
  } cleanup{own};
  for (int i = 0; i < o.warmup; ++i) fn(stream);
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  int repeats = o.repeats == 0 ? measured_auto_repeats(fn, stream, o.target_sample_ms) : o.repeats;
  if (o.flush_l2) repeats = 1;  // the flush must precede every timed call
  RIDGE_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int r = 0; r < repeats; ++r) fn(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  const cudaError_t status = cudaStreamEndCapture(stream, &cleanup.g);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(fmt::format("CUDA graph capture failed ({}): the timed function must launch all its work on the "
                            "stream it is given and must not synchronize. Use the events or spin method instead",
                            detail::status_text(status)));
  }
  RIDGE_CHECK(cudaGraphInstantiate(&cleanup.e, cleanup.g, 0));
  RIDGE_CHECK(cudaGraphUpload(cleanup.e, stream));
  for (int i = 0; i < 2; ++i) RIDGE_CHECK(cudaGraphLaunch(cleanup.e, stream));
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  return held_samples([&](cuda_stream s) { RIDGE_CHECK(cudaGraphLaunch(cleanup.e, s)); }, 1, o, stream,
                      Method::graph_replay, repeats);
}

Measurement measure(Method method, const StreamFn& fn, CudaOptions o) {
  require_timer(method);
  switch (method) {
    case Method::cpu_wall:
      refuse_held_batch_options(o, "wall");
      return measure_wall([&] { fn(o.stream); }, WallOptions{o.samples, o.warmup, false});
    case Method::wall_naive:
      refuse_held_batch_options(o, "wall");
      return measure_naive([&] { fn(o.stream); }, o.samples, o.warmup);
    case Method::wall_sync:
      refuse_held_batch_options(o, "wall");
      return measure_wall([&] { fn(o.stream); }, WallOptions{o.samples, o.warmup, true});
    case Method::cuda_events:
      return measure_cuda(fn, o);
    case Method::spin_hold:
      return measure_spin(fn, o);
    case Method::graph_replay:
      return measure_graph(fn, o);
    case Method::cupti_trace:
    case Method::none: break;  // refused above
  }
  throw UsageError("unknown timing method");
}

}  // namespace ridge
