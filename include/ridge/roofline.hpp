#pragma once
#include <optional>
#include <string>

namespace ridge {

/// FLOPs per byte of [M,K] @ [K,N] when each operand is read once and C written once.
/// FLOPs = 2*m*n*k; bytes = (m*k + k*n + m*n) * bytes_per_element. Throws UsageError for sizes <= 0.
double matmul_intensity(double m, double n, double k, double bytes_per_element = 2);

/// FLOPs of [M,K] @ [K,N]: 2*m*n*k.
double matmul_flops(double m, double n, double k);
/// Bytes of [M,K] @ [K,N] if each operand is read once and C written once.
double matmul_bytes(double m, double n, double k, double bytes_per_element = 2);

/// The roofline: min(peak_flops, intensity * bandwidth). FLOP/s, with bandwidth in bytes/s and
/// intensity in FLOP/byte. Throws UsageError on negative intensity or non-positive ceilings.
double attainable_flops(double intensity, double peak_flops, double bandwidth);

/// Ridge point I* = peak_flops / bandwidth, in FLOP/byte.
double ridge_point(double peak_flops, double bandwidth);

/// Upper bound on decode tokens/s when each step reads all weights once (shared by the batch)
/// plus each sequence's own KV cache: batch * bandwidth / (weight_bytes + batch * kv_bytes).
double decode_ceiling(double weight_bytes, double bandwidth, double batch = 1, double kv_bytes_per_sequence = 0);

/// Amdahl's law: whole-program speedup when a fraction f of the time runs s times faster.
/// s may be +infinity (the part vanishes). Throws UsageError for f outside [0,1] or s <= 0.
double amdahl_speedup(double fraction, double speedup);

/// The inverse: the speedup the fraction needs for the whole program to reach `target`.
/// Returns std::nullopt when the target is unreachable (target >= 1/(1-f)); +inf is never returned.
std::optional<double> amdahl_required_speedup(double fraction, double target);

/// The ceiling for an infinitely fast part: 1 / (1 - f) (infinity when f == 1).
double amdahl_limit(double fraction);

enum class Bound { memory, compute };
/// Memory-bound when intensity is below the ridge point.
Bound classify(double intensity, double peak_flops, double bandwidth);
std::string to_string(Bound b);

/// Measured rate over the attainable rate at the op's intensity, in [0, inf); > 1 is impossible.
double roofline_efficiency(double measured_flops_per_s, double intensity, double peak_flops, double bandwidth);

/// Fastest physically possible time, in seconds, for an op moving `bytes` and doing `flops` on a
/// device with the given ceilings: max(bytes / bandwidth, flops / peak_flops).
double roofline_floor_s(double bytes, double flops, double peak_flops, double bandwidth);

}  // namespace ridge
