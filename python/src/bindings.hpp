#pragma once
// The parts of the ridge._ridge module, one function per feature (module.cpp calls them).
#include <string_view>

#include <nanobind/nanobind.h>

namespace ridge::python {

/// A message from the library as a Python str. Messages name files, and a file name need not be
/// UTF-8: such bytes are shown as \xNN (backslashreplace) instead of failing the conversion.
inline nanobind::str message_text(std::string_view text) {
  PyObject* decoded = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace");
  if (!decoded) throw nanobind::python_error();
  return nanobind::steal<nanobind::str>(decoded);
}

void bind_measure(nanobind::module_& m);  // timers, Measurement, Summary
void bind_history(nanobind::module_& m);  // the run history (SQLite): runs, series, change detection
void bind_model(nanobind::module_& m);    // roofline, decode ceiling, Amdahl: no GPU needed
void bind_report(nanobind::module_& m);   // the report: what `ridge report` writes
void bind_results(nanobind::module_& m);  // result files, writers, compare, device queries
void bind_roofline(nanobind::module_& m);  // catalog, ceilings, shape placement, roofline plot
void bind_trace(nanobind::module_& m);    // the CUPTI tracer, NVTX ranges, saved-trace analysis

}  // namespace ridge::python
