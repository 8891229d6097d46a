// The run history (include/ridge/history.hpp): a SQLite file of runs, its records' series and the
// commits where a level changed. Runs and records cross as JSON (the result schema); the Python
// layer (ridge/_history.py) makes DataFrames and objects of them. Built with SQLite only
// (RIDGE_HAVE_HISTORY); without it `have_history` is False and only CheckOptions' defaults exist.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nlohmann/json.hpp>

#include "bindings.hpp"
#include "ridge/errors.hpp"
#include "ridge/history.hpp"
#include "ridge/writers.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

#ifdef RIDGE_HAVE_HISTORY

// JSON text that survives bytes that are not UTF-8 (a file name in `source`).
std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string runs_json(const History& history) {
  nlohmann::json runs = nlohmann::json::array();
  for (const HistoryRun& r : history.runs()) runs.push_back(to_json(r));
  return json_text(runs);
}

// One object per run per record: the series it belongs to, where and when it ran, and the record.
std::string series_json(const History& history) {
  const std::vector<HistoryRun> runs = history.runs();
  nlohmann::json points = nlohmann::json::array();
  const std::vector<RecordSeries> series = record_series(history, runs);
  for (std::size_t s = 0; s < series.size(); ++s)
    for (std::size_t i = 0; i < series[s].points.size(); ++i) {
      const SeriesPoint& p = series[s].points[i];
      const HistoryRun& run = runs[series[s].run_positions[i]];
      points.push_back({{"series", s},
                        {"run_id", run.id},
                        {"commit", p.commit},
                        {"branch", run.branch},
                        {"run_time_utc", p.run_time_utc},
                        {"machine", series[s].machine},
                        {"gpu", series[s].gpu},
                        {"driver_version", p.driver_version},
                        {"record", to_json(p.record)}});
    }
  return json_text(points);
}

nb::tuple add_run(History& history, const std::string& result_json, const std::string& commit,
                  const std::string& branch, const std::string& source, const std::filesystem::path& folder) {
  const ResultSet run = result_set_from_json(parse_json(result_json, "the result JSON"));
  const RunProvenance provenance = resolve_provenance({commit, branch, source}, run, folder);
  if (provenance.commit.empty())
    throw UsageError("commit: not in a git repository and the results have no git sha; give the commit");
  AddResult added;
  {
    nb::gil_scoped_release release;  // a busy timeout may wait for another writer
    added = history.add(run, provenance);
  }
  return nb::make_tuple(added.added, added.run_id, added.content_hash, provenance.commit, provenance.branch);
}

nb::tuple check(const History& history, const std::optional<std::string>& since, double threshold, double alpha,
                std::size_t window_runs, std::size_t max_window_runs, const std::optional<std::string>& detector) {
  CheckOptions options;
  if (detector) options.compare.level_detector = make_level_detector(*detector);
  options.compare.threshold = threshold;
  options.compare.alpha = alpha;
  options.window_runs = window_runs;
  options.max_window_runs = max_window_runs;
  if (since) options.since = *since;
  HistoryCheck result;
  {
    nb::gil_scoped_release release;
    result = check_history(history, options);
  }
  return nb::make_tuple(json_text(to_json(result)), to_text(result));
}

void bind_history_file(nb::module_& m) {
  nb::class_<History>(m, "HistoryFile", "An open run history (ridge::History): one SQLite file.")
      .def_static(
          "open",
          [](const std::filesystem::path& path, bool create) {
            return create ? History::open_or_create(path) : History::open_existing(path);
          },
          "path"_a, "create"_a = true,
          "Opens the history at `path`; creates it when missing if `create` (else a missing file is a UsageError). "
          "A folder, a file that is not SQLite or not a ridge history, or a newer schema is a UsageError.")
      .def_prop_ro("path", &History::path)
      .def_prop_ro("schema_version", &History::schema_version)
      .def("add", &add_run, "result_json"_a, "commit"_a = "", "branch"_a = "", "source"_a = "",
           "folder"_a = std::filesystem::path("."),
           "Adds a run given as result JSON; empty commit and branch come from git at `folder`, else the results' "
           "git sha. Returns (added, run_id, content_hash, commit, branch); added is False when it was there.")
      .def("runs_json", &runs_json, "Every run, oldest first, as a JSON array of objects.")
      .def("series_json", &series_json,
           "Every record's series (one machine and GPU) as a JSON array: one object per run per record.")
      .def("load_run", [](const History& h, std::int64_t id) { return json_text(to_json(h.load_run(id))); }, "run_id"_a,
           "A stored run's result JSON, as it was added.")
      .def("check", &check, "since"_a.none() = nb::none(), "threshold"_a = CheckOptions{}.compare.threshold,
           "alpha"_a = CheckOptions{}.compare.alpha, "window_runs"_a = CheckOptions{}.window_runs,
           "max_window_runs"_a = CheckOptions{}.max_window_runs, "detector"_a.none() = nb::none(),
           "Change detection over every series (ridge::check_history); returns (json_text, text).")
      .def("export_json_lines", &History::export_json_lines, "Every run as JSON lines, oldest first.")
      .def(
          "import_json_lines",
          [](History& h, const std::string& text, const std::string& source) {
            const ImportResult r = h.import_json_lines(text, source);
            return nb::make_tuple(r.added, r.already_present);
          },
          "text"_a, "source"_a, "Adds each line's run; returns (added, already_present). A bad line adds nothing.");
}

#endif

}  // namespace

void bind_history(nb::module_& m) {
  // The defaults of change detection, readable without SQLite too (the struct is header-only).
  nb::class_<CheckOptions>(m, "CheckOptions", "Change detection's options (ridge::CheckOptions) with the library's defaults.")
      .def(nb::init<>())
      .def_prop_ro("threshold", [](const CheckOptions& o) { return o.compare.threshold; },
                   "relative change of the median that counts")
      .def_prop_ro("alpha", [](const CheckOptions& o) { return o.compare.alpha; },
                   "significance level, divided by the commits tested in a series")
      .def_prop_ro("spread_factor", [](const CheckOptions& o) { return o.compare.spread_factor; })
      .def_ro("window_runs", &CheckOptions::window_runs, "runs on each side of a candidate commit")
      .def_ro("max_window_runs", &CheckOptions::max_window_runs,
              "runs a side a series whose own noise hides a threshold step may widen its windows to")
      .def_ro("min_runs_before", &CheckOptions::min_runs_before, "runs a candidate needs before it");
#ifdef RIDGE_HAVE_HISTORY
  m.attr("have_history") = true;
  m.attr("history_schema_version") = history_schema_version;
  bind_history_file(m);
#else
  m.attr("have_history") = false;
#endif
}

}  // namespace ridge::python
