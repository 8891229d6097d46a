#pragma once
// The parts of the ridge._ridge module, one function per feature (module.cpp calls them).
#include <nanobind/nanobind.h>

namespace ridge::python {

void bind_measure(nanobind::module_& m);  // timers, Measurement, Summary
void bind_model(nanobind::module_& m);    // roofline, decode ceiling, Amdahl: no GPU needed
void bind_results(nanobind::module_& m);  // result files, writers, compare, device queries
void bind_trace(nanobind::module_& m);    // the CUPTI tracer, NVTX ranges, saved-trace analysis

}  // namespace ridge::python
