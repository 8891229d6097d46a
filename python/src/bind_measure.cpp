// The timers: measure_wall, measure_naive, measure_cuda, measure_spin, measure_graph, measure.
// Python callables are called with the GIL held, on the caller's thread, exactly as a C++
// std::function would be; a Python exception inside one propagates out of the timer.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "measure/cuda/probes.hpp"
#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"
#include "ridge/measure.hpp"
#include "ridge/stats.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

using Samples = nb::ndarray<nb::numpy, const double, nb::ndim<1>>;
// The pickled form of a Summary: its fields in declaration order.
using SummaryState = std::tuple<std::size_t, double, double, double, double, double, double, double, double, double,
                                double, double, double, double, double>;
using MeasurementState = std::tuple<Method, std::vector<double>, int, bool, std::string, std::vector<double>, int,
                                    double, double, double, double, bool, std::string>;

void require_finite(double value, const char* name) {
  if (!std::isfinite(value)) throw UsageError(std::string(name) + " must be a finite number");
}

std::string repr_of(nb::handle value) { return nb::cast<std::string>(nb::repr(value)); }

// CudaOptions from Python keywords. Each value's type is checked here (bool is no number, as
// before), its range by CudaOptions::validate(): the Python layer restates neither.
struct IntField {
  const char* name;
  int CudaOptions::*member;
};
struct NumberField {
  const char* name;
  double CudaOptions::*member;
};
constexpr IntField int_fields[] = {{"warmup", &CudaOptions::warmup},
                                   {"samples", &CudaOptions::samples},
                                   {"repeats", &CudaOptions::repeats},
                                   {"max_samples", &CudaOptions::max_samples}};
constexpr NumberField number_fields[] = {{"target_ci_relative", &CudaOptions::target_ci_relative},
                                         {"time_budget_s", &CudaOptions::time_budget_s},
                                         {"target_sample_ms", &CudaOptions::target_sample_ms},
                                         {"spin_timeout_s", &CudaOptions::spin_timeout_s},
                                         {"throttle_threshold", &CudaOptions::throttle_threshold},
                                         {"throttle_recovery_s", &CudaOptions::throttle_recovery_s},
                                         {"rest_before_sample_s", &CudaOptions::rest_before_sample_s}};

long long int_value(nb::handle value, const char* name) {
  if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr()))
    throw nb::type_error(fmt::format("{} must be an int, got {}", name, repr_of(value)).c_str());
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0) throw UsageError(fmt::format("{} is out of range: {}", name, repr_of(value)));
  return v;
}

void set_option(CudaOptions& o, const std::string& name, nb::handle value) {
  for (const auto& f : int_fields) {
    if (name != f.name) continue;
    const long long v = int_value(value, f.name);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      throw UsageError(fmt::format("{} is out of range: {}", f.name, v));
    o.*f.member = static_cast<int>(v);
    return;
  }
  for (const auto& f : number_fields) {
    if (name != f.name) continue;
    if (PyBool_Check(value.ptr()) || !(PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr())))
      throw UsageError(fmt::format("{} must be a finite number, got {}", f.name, repr_of(value)));
    o.*f.member = PyFloat_AsDouble(value.ptr());
    if (PyErr_Occurred()) throw nb::python_error();  // an int too large for a double
    return;
  }
  if (name == "flush_l2") {
    o.flush_l2 = PyObject_IsTrue(value.ptr()) == 1;
  } else if (name == "stream") {
    const long long v = int_value(value, "stream");
    if (v < 0) throw UsageError(fmt::format("stream must be a handle >= 0, got {}", v));
    o.stream = reinterpret_cast<cuda_stream>(static_cast<std::uintptr_t>(v));
  } else {
    throw nb::type_error(fmt::format("CudaOptions has no option '{}'", name).c_str());
  }
}

// A copy of `base` with the keywords' values, checked.
CudaOptions with_options(CudaOptions base, const nb::kwargs& changes) {
  for (auto [key, value] : changes) set_option(base, nb::cast<std::string>(key), value);
  base.validate();
  return base;
}

void bind_cuda_options(nb::module_& m) {
  nb::class_<CudaOptions> cls(m, "CudaOptions",
                              "The GPU timers' options: CudaOptions() holds the library's defaults; keywords set "
                              "fields, each checked for its type and range (UsageError naming the field).");
  cls.def("__init__",
          [](CudaOptions* self, const nb::kwargs& fields) { new (self) CudaOptions(with_options({}, fields)); })
      .def("replace", [](const CudaOptions& self, const nb::kwargs& changes) { return with_options(self, changes); },
           "A copy with the keywords' fields changed (checked as the constructor checks).")
      .def_ro("flush_l2", &CudaOptions::flush_l2)
      .def_prop_ro("stream", [](const CudaOptions& o) { return reinterpret_cast<std::uintptr_t>(o.stream); })
      .def_ro_static("max_auto_repeats", &CudaOptions::max_auto_repeats)
      .def_ro_static("graph_repeats", &CudaOptions::graph_repeats)
      .def_ro_static("max_throttle_recovery_s", &CudaOptions::max_throttle_recovery_s)
      .def_ro_static("max_rest_before_sample_s", &CudaOptions::max_rest_before_sample_s);
  for (const auto& f : int_fields) cls.def_ro(f.name, f.member);
  for (const auto& f : number_fields) cls.def_ro(f.name, f.member);
  m.def("auto_repeats", &auto_repeats, "per_call_ms"_a, "target_sample_ms"_a,
        "Calls per sample for repeats=0: about target_sample_ms per sample, within [1, CudaOptions.max_auto_repeats].");
}

// The callable the C++ timers run: fn(stream_handle). The Python layer adapts a user's
// zero-argument function; the stream matters only to graph capture on ridge's own stream.
StreamFn stream_fn(nb::callable fn) {
  return [fn = std::move(fn)](cuda_stream s) { fn(reinterpret_cast<std::uintptr_t>(s)); };
}

template <Measurement (*Timer)(const StreamFn&, CudaOptions)>
Measurement run_timer(nb::callable fn, const CudaOptions& options) {
  return Timer(stream_fn(std::move(fn)), options);
}

void bind_summary(nb::module_& m) {
  nb::class_<Summary>(m, "Summary", "Distribution of raw samples, in the samples' unit (milliseconds for timers).")
      .def(
          "__init__",
          [](Summary* s, const std::vector<double>& samples, double confidence) {
            new (s) Summary(summarize(samples, confidence));
          },
          "samples"_a, "confidence"_a = 0.95,
          "The summary of raw samples, as the timers make it (ridge.summarize); UsageError for none, NaN or infinity.")
      // Pickle and copy keep every field.
      .def("__getstate__",
           [](const Summary& s) {
             return SummaryState{s.count, s.median, s.min, s.max, s.mean, s.stddev, s.cv, s.p10, s.p25, s.p75,
                                 s.p90, s.iqr, s.median_ci_low, s.median_ci_high, s.confidence};
           })
      .def("__setstate__",
           [](Summary& s, const SummaryState& state) {
             new (&s) Summary{};
             std::tie(s.count, s.median, s.min, s.max, s.mean, s.stddev, s.cv, s.p10, s.p25, s.p75, s.p90, s.iqr,
                      s.median_ci_low, s.median_ci_high, s.confidence) = state;
           })
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

/// What a timed callable did, by hardware counters, and where stated work disagrees with it.
void bind_counted_work(nb::module_& m) {
  nb::class_<CountedWork>(m, "CountedWork",
                          "What one call of a timed callable did on the GPU, from hardware counters read in a pass of "
                          "its own after the timed samples (ridge.measure_cuda(fn, counters=True)): summed over the "
                          "kernels it launched.")
      .def_ro("metric_set", &CountedWork::metric_set, "the metric set read (\"roofline\")")
      .def_ro("kernels", &CountedWork::kernels, "kernels the call launched")
      .def_ro("passes", &CountedWork::passes, "replay passes each kernel ran under the profiler")
      .def_prop_ro("dram_read_bytes", [](const CountedWork& c) { return c.work.dram_read_bytes; }, "DRAM bytes read")
      .def_prop_ro("dram_write_bytes", [](const CountedWork& c) { return c.work.dram_write_bytes; },
                   "DRAM bytes written")
      .def_prop_ro("dram_bytes", [](const CountedWork& c) { return c.work.dram_bytes(); }, "DRAM bytes read and written")
      .def_prop_ro("l2_bytes", [](const CountedWork& c) { return c.work.l2_bytes; }, "bytes through the L2 (lts__t_bytes)")
      .def_prop_ro("flops", [](const CountedWork& c) { return c.work.flops; },
                   "FLOPs by precision: fp64, fp32, fp16 from SASS instructions (an FMA counts 2), tensor_bf16, "
                   "tensor_fp16, tensor_tf32, tensor_fp8, tensor_fp64, tensor_int8 from the tensor cores")
      .def_prop_ro("total_flops", [](const CountedWork& c) { return c.work.total_flops(); }, "FLOPs of every precision")
      .def_prop_ro("profiled_ms", [](const CountedWork& c) { return c.work.profiled_duration_ns / 1e6; },
                   "the kernels' durations in the profiled pass, summed (ms; replay serializes them: not a timing)")
      .def_prop_ro("sm_mhz", [](const CountedWork& c) { return c.work.profiled_sm_hz / 1e6; },
                   "the SM clock of the profiled pass (MHz, weighted by kernel duration)")
      .def_prop_ro("missing", [](const CountedWork& c) { return c.work.missing; },
                   "metrics the GPU did not give (their amounts read 0)")
      .def_ro("metrics_not_offered", &CountedWork::metrics_not_offered, "of the set, the metrics this GPU lacks")
      .def("to_json", [](const CountedWork& c) { return to_json(c).dump(); },
           "The JSON text a record keeps under extra.counters.")
      .def("__repr__", [](const CountedWork& c) {
        return fmt::format("CountedWork({} kernel{}, DRAM read {:.4g} B written {:.4g} B, L2 {:.4g} B, {:.4g} FLOPs, "
                           "SM {:.0f} MHz)",
                           c.kernels, c.kernels == 1 ? "" : "s", c.work.dram_read_bytes, c.work.dram_write_bytes,
                           c.work.l2_bytes, c.work.total_flops(), c.work.profiled_sm_hz / 1e6);
      });
  nb::class_<WorkCountFinding>(m, "WorkCountFinding",
                               "Where the bytes or FLOPs a caller states and what the hardware counters saw disagree.")
      .def_ro("quantity", &WorkCountFinding::quantity, "\"bytes\" (DRAM bytes) or \"flops\"")
      .def_ro("stated", &WorkCountFinding::stated, "per call, as the caller counts it")
      .def_ro("counted", &WorkCountFinding::counted, "per call, from the counters (0 when they could not say)")
      .def_ro("ratio", &WorkCountFinding::ratio, "counted / stated (0 when not comparable)")
      .def_ro("comparable", &WorkCountFinding::comparable,
              "False: the counters needed are missing, or the call launched no kernel")
      .def_ro("text", &WorkCountFinding::text, "the finding in words")
      .def("__repr__", [](const WorkCountFinding& f) { return "WorkCountFinding(" + f.text + ")"; });
  m.attr("counted_work_tolerance") = counted_work_tolerance;
  m.def("compare_counted_work", &compare_counted_work, "stated_bytes"_a, "stated_flops"_a, "counted"_a,
        "tolerance"_a = counted_work_tolerance,
        "Findings where stated bytes or FLOPs per call (0: not stated) and the counted work differ by more than "
        "`tolerance` of the stated amount, or cannot be compared.");
}

void bind_measurement(nb::module_& m) {
  // Each value's docstring is the library's sentence of what its number means (nanobind copies it).
  nb::enum_<Method> method(m, "Method", "How a number was obtained.");
  for (Method value : all_methods) method.value(to_string(value).c_str(), value, describe(value).c_str());
  m.def("method_from_string", &method_from_string, "name"_a, "Parses a name of method_names() (UsageError otherwise).");
  m.def("method_names", &method_names, "Every timing method name the library accepts, with its Method.");
  m.def("describe_method", [](Method method) { return describe(method); }, "method"_a,
        "One sentence saying what the method's number means.");
  m.def("method_name", [](Method method) { return to_string(method); }, "method"_a);

  bind_counted_work(m);
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
      .def_ro("settle_ms", &Measurement::settle_ms,
              "time spent running the work until the SM clock stopped moving, before sampling (ms); 0 when not settled")
      .def_ro("settled_sm_mhz", &Measurement::settled_sm_mhz, "the SM clock sampling started at (MHz); -1 when not read")
      .def_ro("settle_reached_steady", &Measurement::settle_reached_steady,
              "False: settling ran out of time (settle_max_s) with the clock still moving")
      .def_prop_ro("counted", [](const Measurement& m) { return m.counted; },
              "what one call did, from hardware counters (measure_with_counters); None when not counted")
      // Pickle and copy keep every field; the summary is recomputed from the samples, as the timers make it.
      .def("__getstate__",
           [](const Measurement& m) {
             return nb::make_tuple(m.method, m.samples_ms, m.repeats_per_sample, m.l2_flushed, m.stop_reason,
                                   m.sample_sm_mhz, m.throttled_samples_dropped, m.rest_before_sample_s,
                                   m.host_queue_ms, m.settle_ms, m.settled_sm_mhz, m.settle_reached_steady,
                                   m.counted ? to_json(*m.counted).dump() : std::string());
           })
      .def("__setstate__", [](Measurement& m, const MeasurementState& state) {
        new (&m) Measurement{};
        std::string counted;
        std::tie(m.method, m.samples_ms, m.repeats_per_sample, m.l2_flushed, m.stop_reason, m.sample_sm_mhz,
                 m.throttled_samples_dropped, m.rest_before_sample_s, m.host_queue_ms, m.settle_ms, m.settled_sm_mhz,
                 m.settle_reached_steady, counted) = state;
        if (!counted.empty()) m.counted = counted_work_from_json(parse_json(counted, "counters"));
        m.summary = summarize(m.samples_ms);
      });
  m.def(
      "measurement_record",
      [](Measurement measurement, const std::string& name, const std::string& method, int per_call_divisor,
         const std::string& dtype, const std::string& params_json, double bytes, double flops) {
        // The record of ridge's result schema, as the CLI writes it (to_record), for a measurement
        // whose Python wrapper names its method and divides it into calls.
        measurement.method = method_from_string(method);
        if (per_call_divisor > 1) {
          for (double& sample : measurement.samples_ms) sample /= per_call_divisor;
          measurement.repeats_per_sample *= per_call_divisor;
          measurement.summary = summarize(measurement.samples_ms);
        }
        const std::optional<DType> record_dtype = dtype.empty() ? std::nullopt : std::optional(dtype_from_string(dtype));
        return to_json(to_record(measurement, name, record_dtype, parse_json(params_json, "params"), bytes, flops)).dump();
      },
      "measurement"_a, "name"_a, "method"_a, "per_call_divisor"_a, "dtype"_a, "params_json"_a, "bytes"_a, "flops"_a,
      "The measurement as a record of ridge's result schema (JSON text).");
  m.def("measurement_warnings", &measurement_warnings, "measurement"_a,
        "What the library says about a measurement on its own (e.g. 'launch-bound: ...').");
}

void bind_timers(nb::module_& m) {
  m.def(
      "measure_wall",
      [](nb::callable fn, int samples, int warmup, std::optional<bool> cuda) {
        return measure_wall([&] { fn(); }, WallOptions{samples, warmup, cuda});
      },
      "fn"_a, "samples"_a = WallOptions{}.samples, "warmup"_a = WallOptions{}.warmup, "cuda"_a = nb::none(),
      "Wall-clock ms of fn(), the GPU synchronized before and after each sample (cuda=None: when a GPU exists).");
  m.def(
      "measure_naive", [](nb::callable fn, int samples, int warmup) { return measure_naive([&] { fn(); }, samples, warmup); },
      "fn"_a, "samples"_a = WallOptions{}.samples, "warmup"_a = WallOptions{}.warmup,
      "The wrong way, for the demonstration: wall clock with no synchronization (times the launch queue).");
  // The timers take one CudaOptions (checked when it was made); its defaults are CudaOptions{}'s.
  m.def("measure_cuda", &run_timer<static_cast<Measurement (*)(const StreamFn&, CudaOptions)>(&measure_cuda)>, "fn"_a,
        "options"_a = CudaOptions{},
        "GPU ms between CUDA events around `repeats` calls of fn on `stream` (repeats=0: automatic).");
  m.def("measure_spin", &run_timer<&measure_spin>, "fn"_a, "options"_a = CudaOptions{},
        "Events, with the stream held by a spin kernel while each batch is queued: GPU time only, no launch latency.");
  m.def("measure_graph", &run_timer<&measure_graph>, "fn"_a, "options"_a = CudaOptions{},
        "`repeats` calls of fn(stream) captured into one CUDA graph on ridge's stream, replays timed: ms per call.");
  m.def(
      "measure",
      [](Method method, nb::callable fn, const CudaOptions& options) {
        return measure(method, stream_fn(std::move(fn)), options);
      },
      "method"_a, "fn"_a, "options"_a = CudaOptions{}, "Dispatches to the timer of `method`.");
  m.def(
      "measure_with_counters",
      [](Method method, nb::callable fn, const CudaOptions& options) {
        return measure_with_counters(method, stream_fn(std::move(fn)), options);
      },
      "method"_a, "fn"_a, "options"_a = CudaOptions{},
      "The timer of `method`, then one more call of fn under CUPTI's range profiler: Measurement.counted holds its "
      "DRAM and L2 bytes, FLOPs by precision and kernels (CountersUnavailableError where counters cannot be read).");
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
        CudaOptions o;
        o.warmup = warmup;
        o.samples = samples;
        o.repeats = repeats;
        return measure(method, [](cuda_stream s) { launch_empty(s); }, o);
      },
      "method"_a, "warmup"_a = CudaOptions{}.warmup, "samples"_a = CudaOptions{}.samples,
      "repeats"_a = CudaOptions{}.repeats,
      "The empty kernel timed by the C++ timer alone: the baseline of the Python layer's cost.");
}

}  // namespace

void bind_measure(nb::module_& m) {
  bind_cuda_options(m);
  bind_summary(m);
  bind_measurement(m);
  bind_timers(m);
  bind_probes(m);
}

}  // namespace ridge::python
