#pragma once
// Entry points of the measuring subcommands, so `ridge report` can run them in-process.
#include <cstdio>
#include <string>
#include <vector>

#include "ridge/result.hpp"

namespace ridge::cli {

/// `ridge info`: prints device properties and clocks; returns them as a result set (no records).
ResultSet run_info(int device, std::FILE* out);

struct TimingOptions {
  int device = 0;
  long n = 4096;
  std::string dtype = "fp32";
  std::string backend = "cublaslt";
  long small_n = 256;
  std::string small_dtype = "bf16";
  int samples = 20;
  int warmup = 5;
  int repeats = 1;  ///< calls per event pair in the large case (the seed's measure_cuda `repeats`)
};
/// `ridge timing`: the three-way timing demo plus the small-size launch-free comparison.
/// Throws VerificationError when the GEMM's output is wrong.
ResultSet run_timing(const TimingOptions& options, std::FILE* out);

struct RooflineOptions {
  /// A GPU index ("0") to measure, or a catalog key ("h100-sxm") for a model-only roofline.
  std::string device = "0";
  bool refresh = false;              ///< measure the ceilings again instead of using the cache
  std::vector<std::string> points;   ///< ridge result files to place on the plot
  std::string svg = "runs/roofline.svg";
  std::string catalog;               ///< a catalog file replacing the built-in one
};
/// `ridge roofline`: prints datasheet and measured ceilings and the ridge point per dtype, and
/// writes the SVG roofline to options.svg. Returns the ceilings' raw records (none when model-only).
/// Throws UsageError for an unknown catalog key (listing the known ones) or a bad points file.
ResultSet run_roofline(const RooflineOptions& options, std::FILE* out);

}  // namespace ridge::cli
