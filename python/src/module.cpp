// ridge._ridge: the C++ library, bound with nanobind. The pure-Python layer (python/ridge/)
// resolves streams, wraps results as Python objects and adds the PyTorch-aware pieces; this
// module only exposes the library's functions with their names and defaults.
#include <string>

#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "ridge/errors.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {
// A new exception class ridge._ridge.NAME deriving from `bases` (a class or a tuple of classes).
// The reference returned is kept for the life of the process (the translator below uses it).
PyObject* new_exception(nb::module_& m, const char* name, const char* doc, PyObject* bases) {
  const std::string qualified = std::string("ridge._ridge.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::borrow(type);
  return type;
}

// Raises `type` with a C++ message (file names in it need not be UTF-8: see message_text).
void set_error(PyObject* type, const char* message) {
  try {
    PyErr_SetObject(type, ridge::python::message_text(message).ptr());
  } catch (const nb::python_error&) {  // out of memory: the type alone still says what failed
    PyErr_SetString(type, "(the error message could not be shown)");
  }
}
// What a Python user can still do without a GPU: the library says why none is usable, and each
// front end names its own way on (the CLI names commands, this names functions).
constexpr const char* no_gpu_hint =
    "Without a GPU these still work: ridge.devices(), "
    "ridge.roofline(device=\"h100-sxm\"), ridge.place_matmul(..., device=\"h100-sxm\"), the models "
    "(ridge.attainable_flops, ridge.decode_ceiling, ridge.amdahl_speedup), ridge.Results and ridge.compare.";
}  // namespace

NB_MODULE(_ridge, m) {
  m.doc() = "ridge: measure GPU work honestly and explain the number (C++ core)";

  // One Python exception per ridge error class. UsageError is also a ValueError, so code that
  // catches ValueError for bad arguments keeps working; NoGpuError is what GPU functions raise on
  // a machine without a usable GPU.
  static PyObject* error = new_exception(
      m, "Error", "The base of ridge's errors (a RuntimeError): a failure the message explains.", PyExc_RuntimeError);
  static PyObject* usage_error = new_exception(
      m, "UsageError", "An argument is wrong (also a ValueError); the message names it and says what is accepted.",
      nb::make_tuple(nb::handle(error), nb::handle(PyExc_ValueError)).ptr());
  static PyObject* verification_error = new_exception(
      m, "VerificationError",
      "A kernel's output failed its check against a host reference: its timing would be of wrong work.", error);
  static PyObject* no_gpu_error = new_exception(
      m, "NoGpuError", "The work needs a GPU and none is usable; the message says why and what works without one.",
      error);
  static PyObject* counters_unavailable_error = new_exception(
      m, "CountersUnavailableError",
      "Hardware counters cannot be read here (not permitted, or a virtualized or MIG GPU); the message says what to do.",
      error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ridge::UsageError& e) {
      set_error(usage_error, e.what());
    } catch (const ridge::VerificationError& e) {
      set_error(verification_error, e.what());
    } catch (const ridge::NoGpuError& e) {
      set_error(no_gpu_error, (std::string(e.what()) + "\n  " + no_gpu_hint).c_str());
    } catch (const ridge::CountersUnavailableError& e) {
      set_error(counters_unavailable_error, e.what());
    } catch (const ridge::Error& e) {
      set_error(error, e.what());
    }
  });

  m.attr("no_gpu_hint") = no_gpu_hint;
  // nanobind reports objects still alive after the interpreter's teardown. PyTorch (torch.compile's
  // caches) keeps references past it, so ridge objects a script held would be reported as leaked by
  // ridge: nanobind added this switch for that case. ridge/__init__.py turns the report off at exit
  // only when torch was imported; ridge's own objects hold no Python references in C++ statics.
  m.def("set_leak_warnings", [](bool value) { nb::set_leak_warnings(value); }, "value"_a,
        "Whether nanobind reports objects left alive at interpreter exit.");
  ridge::python::bind_measure(m);
  ridge::python::bind_model(m);
  ridge::python::bind_history(m);
  ridge::python::bind_report(m);
  ridge::python::bind_results(m);
  ridge::python::bind_roofline(m);
  ridge::python::bind_trace(m);
}
