// The tracer (CUPTI, in-process), NVTX ranges, and the analysis of saved traces. Analyses cross
// the boundary as the JSON `ridge trace --json` writes; the Python layer wraps it.
#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/schedule.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/trace/window.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

trace::AnalysisOptions analysis_options(std::size_t top, const std::string& step_range) {
  trace::AnalysisOptions options;
  options.top = top;
  options.step_range = step_range;
  return options;
}

// The window Python's keywords ask for: skip_seconds, and the steady state from the first range named from_range.
trace::Window window_of(double skip_seconds, const std::string& from_range) {
  if (!(skip_seconds >= 0)) throw UsageError("skip_seconds must be >= 0, got " + std::to_string(skip_seconds));
  trace::Window window;
  window.skip_seconds = skip_seconds;
  window.from_range = from_range;
  return window;
}

// An NVTX range a `with` block can open and close (NvtxRange itself is scope-bound).
class NvtxScope {
 public:
  explicit NvtxScope(std::string name) : name_(std::move(name)) {}
  void enter() {
    if (!range_) range_.emplace(name_);
  }
  void exit() { range_.reset(); }

 private:
  std::string name_;
  std::optional<NvtxRange> range_;
};

/// The counter options Python's keywords ask for, validated by the library (UsageError naming the
/// field); nullopt when neither a set nor metrics are given. `counters_replay`: "steps", "kernel",
/// or "" for the library's default.
std::optional<trace::CounterOptions> counter_options(const std::string& counters, const std::vector<std::string>& metrics,
                                                     const std::string& counters_steps, std::uint64_t counters_first,
                                                     const std::string& step_range, const std::string& counters_replay) {
  if (counters.empty() && metrics.empty()) {
    if (!counters_steps.empty()) throw UsageError("counters_steps chooses the launches counters profiles: give counters too");
    return std::nullopt;
  }
  return trace::counter_options(
      trace::CounterRequest{counters, metrics, counters_steps, counters_first, counters_replay, step_range});
}

/// The trace at `path` when it holds counters (ridge's metadata says so before the events).
std::optional<trace::Trace> trace_with_counters(const std::string& path) {
  if (!trace::trace_has_counters(path)) return std::nullopt;
  trace::Trace t = trace::load_trace(path);
  if (t.counters.metrics.empty()) return std::nullopt;
  return t;
}

/// The analysis as (JSON, text), with the measured roofline of the profiled kernels added when
/// the trace has counters (against this GPU's ceilings when it is the traced one, else the datasheet's).
nb::tuple analysis_with_counters(const trace::Analysis& analysis, const trace::Trace* t) {
  nlohmann::json j = to_json(analysis);
  std::string text = trace::format_analysis(analysis);
  if (t != nullptr && !t->counters.metrics.empty()) {
    const std::string device = t->device_names.empty() ? std::string() : t->device_names.begin()->second;
    const CeilingsLookup lookup = ceilings_for_device_named(device, CeilingsMode::cached);
    const DeviceCeilings ceilings = lookup.best().value_or(DeviceCeilings{});
    const trace::CounterRoofline r = trace::counter_roofline(*t, ceilings);
    j["counter_roofline"] = to_json(r);
    // The same counters by NVTX range (operator), and by step where steps are marked.
    trace::CounterRooflineOptions by;
    by.step_range = analysis.step_range;
    by.by = trace::CounterGrouping::nvtx_range;
    j["counter_roofline_by"][trace::to_string(by.by)] = to_json(trace::counter_roofline(*t, ceilings, by));
    if (!by.step_range.empty()) {
      by.by = trace::CounterGrouping::step;
      j["counter_roofline_by"][trace::to_string(by.by)] = to_json(trace::counter_roofline(*t, ceilings, by));
    }
    j["counters"] = {{"metrics", t->counters.metrics}, {"passes", t->counters.passes},
                     {"launches_profiled", t->counters.rows.size()}, {"graph_launches", t->counters.graph_launches},
                     {"profiling_seconds", t->counters.profiling_seconds}, {"error", t->counters.error}};
    text += fmt::format("\n{}", trace::to_text(r));
    if (!lookup.note.empty()) text += fmt::format("note: {}\n", lookup.note);
  }
  return nb::make_tuple(j.dump(), text);
}

}  // namespace

void bind_trace(nb::module_& m) {
  const trace::TraceSchedule defaults;
  nb::class_<trace::TraceSchedule>(m, "TraceSchedule",
                                   "Which steps ridge.trace records, like torch.profiler.schedule: after skip_first steps, "
                                   "cycles of wait (collection off), warmup (collected, dropped) and active (recorded) "
                                   "steps, repeat times (0 = no limit). Steps are the pushes of the NVTX range step_range "
                                   "(ridge.trace's step_range when empty).")
      .def(
          "__init__",
          [](trace::TraceSchedule* self, std::uint64_t wait, std::uint64_t warmup, std::uint64_t active,
             std::uint64_t repeat, std::uint64_t skip_first, const std::string& step_range) {
            new (self) trace::TraceSchedule{skip_first, wait, warmup, active, repeat, step_range};
          },
          "wait"_a = defaults.wait, "warmup"_a = defaults.warmup, "active"_a = defaults.active,
          "repeat"_a = defaults.repeat, "skip_first"_a = defaults.skip_first, "step_range"_a = defaults.step_range)
      .def_rw("skip_first", &trace::TraceSchedule::skip_first, "steps left out before the first cycle")
      .def_rw("wait", &trace::TraceSchedule::wait, "per cycle: steps with collection off")
      .def_rw("warmup", &trace::TraceSchedule::warmup, "per cycle: steps collected whose records are dropped")
      .def_rw("active", &trace::TraceSchedule::active, "per cycle: steps recorded (at least 1)")
      .def_rw("repeat", &trace::TraceSchedule::repeat, "cycles; 0 = no limit")
      .def_rw("step_range", &trace::TraceSchedule::step_range, "the NVTX range whose pushes begin the steps")
      .def("validate", &trace::TraceSchedule::validate, "Raises UsageError naming the field that is wrong.")
      .def(
          "phase", [](const trace::TraceSchedule& s, std::uint64_t step) { return trace::to_string(trace::step_phase(s, step)); },
          "step"_a, "What the schedule makes of step `step` (0-based): skipped, wait, warmup, active or done.")
      // An operator: another type compares unequal (NotImplemented), and the stub says `other: object`.
      .def("__eq__", [](const trace::TraceSchedule& a, const trace::TraceSchedule& b) { return a == b; }, nb::is_operator(),
           nb::sig("def __eq__(self, other: object, /) -> bool"))
      .def("__repr__", [](const trace::TraceSchedule& s) {
        return fmt::format("ridge.TraceSchedule(wait={}, warmup={}, active={}, repeat={}, skip_first={}, step_range={})",
                           s.wait, s.warmup, s.active, s.repeat, s.skip_first, nlohmann::json(s.step_range).dump());
      });

  nb::class_<Tracer>(m, "Tracer", "Traces this process's CUDA activity (CUPTI) between start() and stop().")
      .def(
          "__init__",
          [](Tracer* self, bool all_api_calls, std::size_t buffer_bytes, bool synchronization_records,
             const std::string& api_calls, bool launch_calls, const std::string& counters,
             const std::vector<std::string>& metrics, const std::string& counters_steps, std::uint64_t counters_first,
             const std::string& counters_replay, const std::string& step_range,
             std::optional<trace::TraceSchedule> schedule) {
            TracerOptions options;
            if (schedule) {
              if (schedule->step_range.empty()) schedule->step_range = step_range;
              schedule->validate();
              options.schedule = schedule;
            }
            options.counters = counter_options(counters, metrics, counters_steps, counters_first, step_range, counters_replay);
            options.api_calls = all_api_calls ? trace::ApiCalls::all : trace::api_calls_from_string(api_calls);
            options.buffer_bytes = buffer_bytes;
            options.synchronization = synchronization_records;
            options.launch_calls = launch_calls;
            options.validate();
            new (self) Tracer(options);
          },
          "all_api_calls"_a = false, "buffer_bytes"_a = TracerOptions{}.buffer_bytes,
          "synchronization_records"_a = TracerOptions{}.synchronization, "api_calls"_a = trace::to_string(TracerOptions{}.api_calls),
          "launch_calls"_a = TracerOptions{}.launch_calls, "counters"_a = "", "metrics"_a = std::vector<std::string>{},
          "counters_steps"_a = "", "counters_first"_a = trace::CounterOptions::default_first_launches,
          "counters_replay"_a = "", "step_range"_a = "", "schedule"_a = nb::none(),
          "all_api_calls: record every runtime/driver call; buffer_bytes: each CUPTI buffer (bytes); "
          "synchronization_records: CUPTI's records of host waits (CUPTI then hooks every runtime call); "
          "api_calls: none, selected, most or all (as ridge trace --api); launch_calls: with selected, record the "
          "kernel launch calls too (else each kernel carries its launch's queue time, at a tenth of the cost); "
          "counters: a metric set (roofline) or raw, with metrics: hardware counters of the launches in steps "
          "counters_steps (FIRST..LAST of the NVTX range step_range), else of the first counters_first launches of each "
          "kernel name; counters_replay: steps or kernel (how the passes are replayed; empty: steps with "
          "counters_steps, else kernel); schedule: a TraceSchedule, record only its active steps (its step_range, else "
          "step_range).")
      .def("start", &Tracer::start, "Begins recording; raises Error if CUPTI cannot start (another profiler attached).")
      .def("stop", &Tracer::stop, "Synchronizes the device, stops recording and flushes every record.")
      .def_prop_ro("running", &Tracer::running)
      .def_prop_ro("dropped_records", &Tracer::dropped_records, "records CUPTI dropped for lack of buffer space")
      .def(
          "write", [](const Tracer& t, const std::filesystem::path& path) { t.write(path.string()); }, "path"_a,
          "Writes the trace (atomically): Chrome/Perfetto JSON, or Perfetto's protobuf format when the name ends in .pftrace.")
      .def(
          "analysis",
          [](const Tracer& t, std::size_t top, const std::string& step_range, double skip_seconds,
             const std::string& from_range) {
            const auto analysis = t.summary(analysis_options(top, step_range), window_of(skip_seconds, from_range));
            return analysis_with_counters(analysis, &t.events());
          },
          "top"_a = 10, "step_range"_a = "", "skip_seconds"_a = 0.0, "from_range"_a = "",
          "The analysis of the last trace, windowed: (analysis JSON, the summary `ridge trace` prints).");

  nb::class_<NvtxScope>(m, "NvtxScope", "An NVTX range opened by enter() and closed by exit().")
      .def(nb::init<std::string>(), "name"_a)
      .def("enter", &NvtxScope::enter)
      .def("exit", &NvtxScope::exit);
  m.def("enable_nvtx_capture", &enable_nvtx_capture,
        "Routes this process's NVTX calls to CUPTI (NVTX reads this at its first call); False if CUPTI is not found.");
  m.def("check_trace_window", [](double skip_seconds, const std::string& from_range) { window_of(skip_seconds, from_range); },
        "skip_seconds"_a, "from_range"_a = "",
        "Raises UsageError for a window ridge.trace could not apply, before anything is traced.");
  m.def(
      "check_counter_options",
      [](const std::string& counters, const std::vector<std::string>& metrics, const std::string& counters_steps,
         std::uint64_t counters_first, const std::string& counters_replay, const std::string& step_range) {
        counter_options(counters, metrics, counters_steps, counters_first, step_range, counters_replay);
      },
      "counters"_a = "", "metrics"_a = std::vector<std::string>{}, "counters_steps"_a = "",
      "counters_first"_a = trace::CounterOptions::default_first_launches, "counters_replay"_a = "", "step_range"_a = "",
      "Raises UsageError naming the field for counter options Tracer would refuse, before anything is traced (no GPU "
      "needed).");
  m.def("nvtx_mark", [](const std::string& name) { nvtx_mark(name.c_str()); }, "name"_a, "An instantaneous NVTX marker.");

  m.def(
      "analyze_trace_file",
      [](const std::filesystem::path& path, std::size_t top, const std::string& step_range, double skip_seconds,
         const std::string& from_range) {
        const auto file = trace::analyze_trace_file(path.string(), window_of(skip_seconds, from_range),
                                                    analysis_options(top, step_range));
        // A trace with counters is read once more for them (the analysis keeps no events).
        const std::optional<trace::Trace> counted = trace_with_counters(path.string());
        return analysis_with_counters(file.analysis, counted ? &*counted : nullptr);
      },
      "path"_a, "top"_a = 10, "step_range"_a = "", "skip_seconds"_a = 0.0, "from_range"_a = "",
      "Analyzes a saved trace, windowed: returns (analysis JSON, the summary `ridge trace` prints).");
}

}  // namespace ridge::python
