#pragma once
// What launched work did, from hardware counters: bytes and FLOPs by precision. A type of its
// own, free of JSON and CUPTI, so the timers' header (measure.hpp, also read by .cu files) can
// hold it. (Implementation: src/trace/model/counters.cpp.)
#include <map>
#include <string>
#include <vector>

namespace ridge::trace {

/// What one profiled launch (or a call's launches together) did, from its counters (metrics
/// absent from the row count as 0 and are named in `missing`).
struct LaunchWork {
  double dram_read_bytes = 0, dram_write_bytes = 0, l2_bytes = 0;
  /// FLOPs by precision: "fp64", "fp32", "fp16" from SASS instruction counts (an FMA counts two),
  /// and tensor-core FLOPs by source type: "tensor_fp16", "tensor_bf16", "tensor_tf32",
  /// "tensor_fp8", "tensor_fp64", "tensor_int8" (operations).
  std::map<std::string, double> flops;
  double profiled_duration_ns = 0;  ///< gpu__time_duration of the profiled pass
  double profiled_sm_hz = 0;        ///< SM clock during the profiled pass
  std::vector<std::string> missing;

  double dram_bytes() const { return dram_read_bytes + dram_write_bytes; }
  double total_flops() const;
  /// The precision with the most FLOPs ("" when none).
  std::string dominant_precision() const;
};

}  // namespace ridge::trace
