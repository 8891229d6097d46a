// The timers: measure_wall, measure_naive, measure_cuda, measure_spin, measure_graph, measure.
// Python callables are called with the GIL held, on the caller's thread, exactly as a C++
// std::function would be; a Python exception inside one propagates out of the timer.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "measure/cuda/probes.hpp"
#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/stats.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

using Samples = nb::ndarray<nb::numpy, const double, nb::ndim<1>>;
using MeasurementState = std::tuple<Method, std::vector<double>, int, bool, std::string, std::vector<double>, int,
                                    double, double>;

void require_finite(double value, const char* name) {
  if (!std::isfinite(value)) throw UsageError(std::string(name) + " must be a finite number");
}

// The GPU timers' options from keyword arguments (names and defaults as CudaOptions's).
CudaOptions cuda_options(int warmup, int samples, int repeats, std::uintptr_t stream, bool flush_l2,
                         double target_ci_relative, double time_budget_s, int max_samples, double target_sample_ms,
                         double throttle_threshold, double throttle_recovery_s, double rest_before_sample_s) {
  require_finite(target_ci_relative, "target_ci_relative");
  require_finite(rest_before_sample_s, "rest_before_sample_s");
  require_finite(throttle_threshold, "throttle_threshold");
  require_finite(throttle_recovery_s, "throttle_recovery_s");
  require_finite(time_budget_s, "time_budget_s");
  require_finite(target_sample_ms, "target_sample_ms");
  if (time_budget_s <= 0) throw UsageError("time_budget_s must be > 0");
  if (target_sample_ms <= 0) throw UsageError("target_sample_ms must be > 0");
  CudaOptions o;
  o.warmup = warmup;
  o.samples = samples;
  o.repeats = repeats;
  o.stream = reinterpret_cast<cuda_stream>(stream);
  o.flush_l2 = flush_l2;
  o.target_ci_relative = target_ci_relative;
  o.time_budget_s = time_budget_s;
  o.max_samples = max_samples;
  o.target_sample_ms = target_sample_ms;
  o.throttle_threshold = throttle_threshold;  // range checked by the timers
  o.throttle_recovery_s = throttle_recovery_s;
  o.rest_before_sample_s = rest_before_sample_s;  // range checked by the timers
  return o;
}

// The callable the C++ timers run: fn(stream_handle). The Python layer adapts a user's
// zero-argument function; the stream matters only to graph capture on ridge's own stream.
StreamFn stream_fn(nb::callable fn) {
  return [fn = std::move(fn)](cuda_stream s) { fn(reinterpret_cast<std::uintptr_t>(s)); };
}

#define RIDGE_CUDA_OPTION_ARGS                                                                       \
  "fn"_a, "warmup"_a = 5, "samples"_a = 20, "repeats"_a = 1, nb::kw_only(), "stream"_a = 0,          \
      "flush_l2"_a = false, "target_ci_relative"_a = 0.0, "time_budget_s"_a = 10.0, "max_samples"_a = 10000, \
      "target_sample_ms"_a = 0.5, "throttle_threshold"_a = 0.0, "throttle_recovery_s"_a = 0.05,              \
      "rest_before_sample_s"_a = 0.0

template <Measurement (*Timer)(const StreamFn&, CudaOptions)>
Measurement run_timer(nb::callable fn, int warmup, int samples, int repeats, std::uintptr_t stream, bool flush_l2,
                      double target_ci_relative, double time_budget_s, int max_samples, double target_sample_ms,
                      double throttle_threshold, double throttle_recovery_s, double rest_before_sample_s) {
  return Timer(stream_fn(std::move(fn)), cuda_options(warmup, samples, repeats, stream, flush_l2, target_ci_relative,
                                                      time_budget_s, max_samples, target_sample_ms, throttle_threshold,
                                                      throttle_recovery_s, rest_before_sample_s));
}

void bind_summary(nb::module_& m) {
  nb::class_<Summary>(m, "Summary", "Distribution of raw samples, in the samples' unit (milliseconds for timers).")
      .def_ro("count", &Summary::count)
      .def_ro("median", &Summary::median)
      .def_ro("min", &Summary::min)
      .def_ro("max", &Summary::max)
      .def_ro("mean", &Summary::mean)
      .def_ro("stddev", &Summary::stddev, "sample standard deviation (n-1)")
      .def_ro("cv", &Summary::cv, "coefficient of variation: stddev / mean")
      .def_ro("p10", &Summary::p10)
      .def_ro("p25", &Summary::p25)
      .def_ro("p75", &Summary::p75)
      .def_ro("p90", &Summary::p90)
      .def_ro("iqr", &Summary::iqr)
      .def_ro("median_ci_low", &Summary::median_ci_low, "lower end of the median's distribution-free interval")
      .def_ro("median_ci_high", &Summary::median_ci_high)
      .def_ro("confidence", &Summary::confidence)
      .def_prop_ro("median_ci_relative", &Summary::median_ci_relative,
                   "half-width of the median's confidence interval over the median")
      .def("__repr__", [](const Summary& s) {
        return fmt::format("Summary(n={}, median {:.6g}, {:.0f}% CI [{:.6g}, {:.6g}], min {:.6g}, max {:.6g}, cv {:.2f}%)",
                           s.count, s.median, s.confidence * 100, s.median_ci_low, s.median_ci_high, s.min, s.max,
                           s.cv * 100);
      });
  m.def(
      "summarize",
      [](const std::vector<double>& samples, double confidence) { return summarize(samples, confidence); },
      "samples"_a, "confidence"_a = 0.95, "Median, quantiles, spread and the median's confidence interval.");
}

void bind_measurement(nb::module_& m) {
  // Each value's docstring is the library's sentence of what its number means (nanobind copies it).
  nb::enum_<Method> method(m, "Method", "How a number was obtained.");
  for (auto [name, value] : {std::pair{"cpu_wall", Method::cpu_wall}, std::pair{"wall_naive", Method::wall_naive},
                             std::pair{"wall_sync", Method::wall_sync}, std::pair{"cuda_events", Method::cuda_events},
                             std::pair{"spin_hold", Method::spin_hold}, std::pair{"graph_replay", Method::graph_replay}})
    method.value(name, value, describe(value).c_str());
  m.def("method_from_string", &method_from_string, "name"_a, "Parses 'events', 'spin', 'graph', 'wall_sync', ...");
  m.def("describe_method", [](Method method) { return describe(method); }, "method"_a,
        "One sentence saying what the method's number means.");
  m.def("method_name", [](Method method) { return to_string(method); }, "method"_a);

  nb::class_<Measurement>(m, "Measurement", "Raw samples (milliseconds per operation) and their summary.")
      .def_ro("method", &Measurement::method)
      .def_prop_ro(
          "samples_ms",
          [](nb::handle_t<Measurement> self) {
            const auto& samples = nb::cast<const Measurement&>(self).samples_ms;
            // A read-only view of the C++ vector, kept alive by the Measurement: no copy.
            return Samples(samples.data(), {samples.size()}, self);
          },
          "raw samples as a read-only NumPy array (ms per operation), a view without a copy")
      .def_ro("summary", &Measurement::summary)
      .def_ro("repeats_per_sample", &Measurement::repeats_per_sample)
      .def_ro("l2_flushed", &Measurement::l2_flushed)
      .def_ro("stop_reason", &Measurement::stop_reason,
              "why sampling stopped: samples, converged, time_budget or max_samples")
      .def_ro("sample_sm_mhz", &Measurement::sample_sm_mhz,
              "the SM clock (MHz) of each sample, read after its batch; empty unless throttle_threshold was set")
      .def_ro("throttled_samples_dropped", &Measurement::throttled_samples_dropped,
              "samples taken below throttle_threshold and dropped (not in samples_ms)")
      .def_ro("rest_before_sample_s", &Measurement::rest_before_sample_s,
              "seconds the GPU was left idle before each held batch (0: back to back)")
      .def_ro("host_queue_ms", &Measurement::host_queue_ms,
              "cuda_events: the host's time to queue one operation, median (ms); -1 when not timed")
      // Pickle and copy keep every field; the summary is recomputed from the samples, as the timers make it.
      .def("__getstate__",
           [](const Measurement& m) {
             return nb::make_tuple(m.method, m.samples_ms, m.repeats_per_sample, m.l2_flushed, m.stop_reason,
                                   m.sample_sm_mhz, m.throttled_samples_dropped, m.rest_before_sample_s,
                                   m.host_queue_ms);
           })
      .def("__setstate__", [](Measurement& m, const MeasurementState& state) {
        new (&m) Measurement{};
        std::tie(m.method, m.samples_ms, m.repeats_per_sample, m.l2_flushed, m.stop_reason, m.sample_sm_mhz,
                 m.throttled_samples_dropped, m.rest_before_sample_s, m.host_queue_ms) = state;
        m.summary = summarize(m.samples_ms);
      });
  m.def(
      "measurement_warnings",
      [](const Measurement& measurement) {
        std::vector<std::string> warnings;
        if (auto w = launch_bound_warning(measurement)) warnings.push_back(std::move(*w));
        return warnings;
      },
      "measurement"_a, "What the library says about a measurement on its own (e.g. 'launch-bound: ...').");
}

void bind_timers(nb::module_& m) {
  m.def(
      "measure_wall",
      [](nb::callable fn, int samples, int warmup, std::optional<bool> cuda) {
        return measure_wall([&] { fn(); }, WallOptions{samples, warmup, cuda});
      },
      "fn"_a, "samples"_a = 10, "warmup"_a = 3, "cuda"_a = nb::none(),
      "Wall-clock ms of fn(), the GPU synchronized before and after each sample (cuda=None: when a GPU exists).");
  m.def(
      "measure_naive", [](nb::callable fn, int samples, int warmup) { return measure_naive([&] { fn(); }, samples, warmup); },
      "fn"_a, "samples"_a = 10, "warmup"_a = 3,
      "The wrong way, for the demonstration: wall clock with no synchronization (times the launch queue).");
  m.def("measure_cuda", &run_timer<static_cast<Measurement (*)(const StreamFn&, CudaOptions)>(&measure_cuda)>,
        RIDGE_CUDA_OPTION_ARGS, "GPU ms between CUDA events around `repeats` calls of fn on `stream` (repeats=0: automatic).");
  m.def("measure_spin", &run_timer<&measure_spin>, RIDGE_CUDA_OPTION_ARGS,
        "Events, with the stream held by a spin kernel while each batch is queued: GPU time only, no launch latency.");
  m.def("measure_graph", &run_timer<&measure_graph>, RIDGE_CUDA_OPTION_ARGS,
        "`repeats` calls of fn(stream) captured into one CUDA graph on ridge's stream, replays timed: ms per call.");
  m.def(
      "measure",
      [](Method method, nb::callable fn, int warmup, int samples, int repeats, std::uintptr_t stream, bool flush_l2,
         double target_ci_relative, double time_budget_s, int max_samples, double target_sample_ms,
         double throttle_threshold, double throttle_recovery_s, double rest_before_sample_s) {
        return measure(method, stream_fn(std::move(fn)),
                       cuda_options(warmup, samples, repeats, stream, flush_l2, target_ci_relative, time_budget_s,
                                    max_samples, target_sample_ms, throttle_threshold, throttle_recovery_s,
                                    rest_before_sample_s));
      },
      "method"_a, RIDGE_CUDA_OPTION_ARGS, "Dispatches to the timer of `method`.");
}

// ridge's own probe kernels, for tests and for measuring what the Python layer costs: the same
// empty kernel timed from C++ alone and through a Python callable.
void bind_probes(nb::module_& m) {
  m.def("launch_empty", [](std::uintptr_t stream) { launch_empty(reinterpret_cast<cuda_stream>(stream)); },
        "stream"_a = 0, "Launches ridge's empty kernel on `stream` (a probe for tests and overhead benchmarks).");
  m.def(
      "launch_busy_wait",
      [](std::uintptr_t stream, double nanoseconds) {
        require_finite(nanoseconds, "nanoseconds");
        launch_busy_wait(reinterpret_cast<cuda_stream>(stream), nanoseconds);
      },
      "stream"_a, "nanoseconds"_a, "Launches a kernel that spins on the GPU's clock for `nanoseconds`.");
  m.def(
      "measure_empty_kernel",
      [](Method method, int warmup, int samples, int repeats) {
        return measure(method, [](cuda_stream s) { launch_empty(s); },
                       cuda_options(warmup, samples, repeats, 0, false, 0.0, 10.0, 10000, 0.5, 0.0, 0.05, 0.0));
      },
      "method"_a, "warmup"_a = 5, "samples"_a = 20, "repeats"_a = 1,
      "The empty kernel timed by the C++ timer alone: the baseline of the Python layer's cost.");
}

}  // namespace

void bind_measure(nb::module_& m) {
  bind_summary(m);
  bind_measurement(m);
  bind_timers(m);
  bind_probes(m);
}

}  // namespace ridge::python
