// Result files, writers and compare, plus the device queries. Records cross the boundary as the
// JSON of ridge's result schema (docs/results-schema.md): the Python layer turns it into objects,
// and a file written from Python is byte-for-byte what the CLI writes.
#include <filesystem>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "ridge/checks.hpp"
#include "ridge/compare.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/result.hpp"
#include "ridge/writers.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

ResultSet parse_result_set(const std::string& json_text) {
  return result_set_from_json(parse_json(json_text, "the result JSON"));  // depth-bounded; UsageError when invalid
}

}  // namespace

void bind_results(nb::module_& m) {
  m.def("load_result_file", [](const std::filesystem::path& path) { return to_json(load_result_file(path)).dump(); }, "path"_a,
        "Reads a ridge result file (or a report folder's results.json); returns its JSON text, checked.");
  m.def("normalize_result_json", [](const std::string& text) { return to_json(parse_result_set(text)).dump(); },
        "json_text"_a, "Parses, checks and re-serializes result JSON (fills each record's summary from its samples).");
  m.def("result_csv", [](const std::string& text) { return to_csv(parse_result_set(text)); }, "json_text"_a,
        "CSV of a result set: one row per record, as `ridge ... --csv` writes.");
  m.def("result_markdown", [](const std::string& text) { return to_markdown(parse_result_set(text)); }, "json_text"_a,
        "Markdown tables of a result set, as `ridge ... --markdown` writes.");
  m.def(
      "write_text",
      [](const std::filesystem::path& path, const std::string& content) { write_text(path.string(), content); },
      "path"_a, "content"_a, "Writes a file the way ridge writes every output ('-' = stdout).");
  m.def(
      "new_result_json",
      [](bool with_device) {
        ResultSet set{make_context(0, nullptr), {}};
        if (with_device && device_count() > 0) set.context.device = describe_device(0);
        return to_json(set).dump();
      },
      "with_device"_a = true,
      "An empty result file's JSON: schema, and a context with version, git sha, host, time and (when a GPU "
      "is usable) device 0.");
  m.def(
      "compare_results",
      [](const std::vector<std::string>& baselines_json, const std::string& next, double threshold, double alpha,
         double spread_factor, bool allow_missing, bool per_method_resolution, const std::optional<std::string>& detector) {
        CompareOptions options;
        if (detector) options.level_detector = make_level_detector(*detector);
        options.allow_missing = allow_missing;
        options.per_method_resolution = per_method_resolution;
        options.threshold = threshold;
        options.alpha = alpha;
        options.spread_factor = spread_factor;
        std::vector<ResultSet> baselines;
        for (const auto& text : baselines_json) baselines.push_back(parse_result_set(text));
        const Comparison c = compare_results(baselines, parse_result_set(next), options);
        return nb::make_tuple(to_json(c).dump(), to_markdown(c), to_text(c), nothing_compared_reason(c));
      },
      "baselines_json"_a, "new_json"_a, "threshold"_a = 0.05, "alpha"_a = 0.01, "spread_factor"_a = 3.0,
      "allow_missing"_a = false, "per_method_resolution"_a = CompareOptions{}.per_method_resolution,
      "detector"_a.none() = nb::none(),
      "Matches records of the new run with the baselines' (one, or repeated runs of the same code); ratio of "
      "medians, Mann-Whitney U test, bootstrap interval, each record's noise band (threshold, the producer's "
      "gate, spread_factor x the baselines' run-to-run spread, the resolution between processes of the record's "
      "timing method on its GPU family), verdicts. Returns (json_text, markdown, text, "
      "nothing_compared_reason): the reason is empty when some record was judged.");

  m.def("impossible_rate_findings", &impossible_rate_findings, "flops_per_s"_a, "bytes_per_s"_a,
        "Why a rate is physically impossible on every GPU in ridge's catalog: above the fastest dense peak "
        "(with 5% slack) or 10x the fastest memory bandwidth. Empty when neither; a rate <= 0 is not given.");
  m.def("device_count", &device_count, "Number of usable CUDA devices (0 without a driver or GPU).");
  m.def("no_gpu_reason", &no_gpu_reason, "Why no GPU is usable, in words (empty when one is).");
  m.def("require_gpu", &require_gpu, "index"_a = 0, "Raises NoGpuError when device `index` is not usable.");
  m.def("read_clocks", [](int index) { return to_json(read_clocks(index)).dump(); }, "index"_a = 0,
        "The device's clocks now, as JSON: sm_mhz, memory_mhz, power_w, temperature_c, throttle_reasons (NVML; "
        "-1 where unknown), source.");
  m.def("describe_device", [](int index) { return to_json(describe_device(index)).dump(); }, "index"_a = 0,
        "The device's properties as JSON (name, SMs, L2, memory, clocks, versions, catalog match).");
}

}  // namespace ridge::python
