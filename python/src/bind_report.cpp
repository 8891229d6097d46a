// The report (ridge::run_report): what `ridge report` writes, from Python. The options' defaults
// are the library's (ReportOptions): an argument left as None keeps them.
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "bindings.hpp"
#include "ridge/report.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

using SectionStart = std::function<void(std::size_t, std::size_t, const std::string&, const std::string&)>;
using SectionDone = std::function<void(std::size_t, std::size_t, const std::string&)>;

nlohmann::json section_json(const SectionRun& s) {
  return {{"key", s.key},         {"title", s.title},   {"seconds", s.seconds},
          {"records", s.records}, {"error", s.error},   {"exit_code", s.exit_code}};
}

/// The result as JSON text (the records themselves are in the folder's results.json). The folder
/// travels beside it: its name need not be UTF-8.
std::string result_json(const ReportResult& r) {
  nlohmann::json sections = nlohmann::json::array();
  for (const auto& s : r.sections) sections.push_back(section_json(s));
  return nlohmann::json{{"gpu", r.gpu},
                        {"subject", r.subject},
                        {"sections", sections},
                        {"measured", r.measured},
                        {"markdown", r.markdown},
                        {"files", r.files},
                        {"kept_files", r.kept_files},
                        {"wall_seconds", r.wall_seconds},
                        {"exit_code", r.exit_code},
                        {"stopped_by_signal", r.stopped_by_signal},
                        {"history", r.history_added ? nlohmann::json{{"added", r.history_added->added},
                                                                     {"run_id", r.history_added->run_id},
                                                                     {"content_hash", r.history_added->content_hash},
                                                                     {"commit", r.history_provenance.commit},
                                                                     {"branch", r.history_provenance.branch}}
                                                    : nlohmann::json(nullptr)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::pair<std::string, std::filesystem::path> run_report_json(const std::optional<std::filesystem::path>& folder, std::optional<int> device,
                            bool quick, std::optional<std::string> model, const std::vector<std::string>& predictions,
                            bool force, const std::vector<std::string>& argv, const SectionStart& on_start,
                            const SectionDone& on_done, const std::optional<std::filesystem::path>& history) {
  ReportOptions o;
  if (folder) o.folder = folder->string();
  if (device) o.device = *device;
  if (model) o.model = *model;
  o.quick = quick;
  o.force = force;
  o.predictions = predictions;
  o.argv = argv;
  if (history) o.history = history->string();
  ReportCallbacks callbacks;
  // Python's callbacks need the interpreter: the report itself runs without it held.
  if (on_start)
    callbacks.on_section_start = [&](std::size_t i, std::size_t n, const std::string& key, const std::string& title) {
      nb::gil_scoped_acquire gil;
      on_start(i, n, key, title);
    };
  if (on_done)
    callbacks.on_section_done = [&](std::size_t i, std::size_t n, const SectionRun& run) {
      nb::gil_scoped_acquire gil;
      on_done(i, n, section_json(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    };
  // Ctrl-C stops the report at the next section, as it does `ridge report`.
  callbacks.stop_requested = [] {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return 0;
    PyErr_Clear();
    return int(SIGINT);
  };
  nb::gil_scoped_release release;
  const ReportResult r = run_report(o, callbacks);
  return {result_json(r), r.folder};
}

}  // namespace

void bind_report(nb::module_& m) {
  m.def("run_report", &run_report_json, "folder"_a.none() = nb::none(), "device"_a.none() = nb::none(),
        "quick"_a = false, "model"_a.none() = nb::none(), "predictions"_a = std::vector<std::string>{},
        "force"_a = false, "argv"_a = std::vector<std::string>{}, "on_section_start"_a.none() = nb::none(),
        "on_section_done"_a.none() = nb::none(), "history"_a.none() = nb::none(),
        "Runs the report (ridge::run_report); returns its result as JSON text and the folder, which holds the rest.");
}

}  // namespace ridge::python
