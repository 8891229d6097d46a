// The model functions: roofline, decode ceiling and Amdahl's law. Pure arithmetic, no GPU.
#include <optional>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "ridge/dtype.hpp"
#include "ridge/roofline.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {

void bind_model(nb::module_& m) {
  m.def("matmul_intensity", &matmul_intensity, "m"_a, "n"_a, "k"_a, "bytes_per_element"_a = 2,
        "FLOP per byte of [m,k] @ [k,n] when each operand is read once and C written once.");
  m.def(
      "matmul_intensity",
      [](double m_, double n, double k, const std::string& dtype) {
        return matmul_intensity(m_, n, k, bytes_per_element(dtype_from_string(dtype)));
      },
      "m"_a, "n"_a, "k"_a, "dtype"_a, "The same, with the element size given by a dtype name ('bf16', 'fp32', ...).");
  m.def("matmul_flops", &matmul_flops, "m"_a, "n"_a, "k"_a, "FLOPs of [m,k] @ [k,n]: 2*m*n*k.");
  m.def("matmul_bytes", &matmul_bytes, "m"_a, "n"_a, "k"_a, "bytes_per_element"_a = 2,
        "Bytes of [m,k] @ [k,n] if each operand is read once and C written once.");
  m.def(
      "matmul_bytes",
      [](double m_, double n, double k, const std::string& dtype) {
        return matmul_bytes(m_, n, k, bytes_per_element(dtype_from_string(dtype)));
      },
      "m"_a, "n"_a, "k"_a, "dtype"_a, "The same, with the element size given by a dtype name ('bf16', 'fp32', ...).");
  m.def("attainable_flops", &attainable_flops, "intensity"_a, "peak_flops"_a, "bandwidth"_a,
        "The roofline: min(peak_flops, intensity * bandwidth), FLOP/s (intensity in FLOP/byte, bandwidth in bytes/s).");
  m.def("ridge_point", &ridge_point, "peak_flops"_a, "bandwidth"_a,
        "Intensity (FLOP/byte) at which an operation stops being memory-bound: peak_flops / bandwidth.");
  m.def("decode_ceiling", &decode_ceiling, "weight_bytes"_a, "bandwidth"_a, "batch"_a = 1, "kv_bytes_per_sequence"_a = 0,
        "Upper bound on decode tokens/s: batch * bandwidth / (weight_bytes + batch * kv_bytes_per_sequence).");
  m.def("amdahl_speedup", &amdahl_speedup, "fraction"_a, "speedup"_a,
        "Whole-program speedup when `fraction` of the time runs `speedup` times faster (speedup may be inf).");
  m.def("amdahl_required_speedup", &amdahl_required_speedup, "fraction"_a, "target"_a,
        "The speedup the fraction needs for the whole program to reach `target`; None when unreachable.");
  m.def("amdahl_limit", &amdahl_limit, "fraction"_a, "The ceiling for an infinitely fast part: 1 / (1 - fraction).");
  m.def(
      "bound", [](double intensity, double peak_flops, double bandwidth) {
        return to_string(classify(intensity, peak_flops, bandwidth));
      },
      "intensity"_a, "peak_flops"_a, "bandwidth"_a, "'memory' below the ridge point, else 'compute'.");
  m.def("roofline_efficiency", &roofline_efficiency, "measured_flops_per_s"_a, "intensity"_a, "peak_flops"_a,
        "bandwidth"_a, "Measured rate over the attainable rate at the intensity; above 1 is impossible.");
  m.def("roofline_floor_s", &roofline_floor_s, "bytes"_a, "flops"_a, "peak_flops"_a, "bandwidth"_a,
        "Fastest physically possible time in seconds: max(bytes / bandwidth, flops / peak_flops).");
}

}  // namespace ridge::python
