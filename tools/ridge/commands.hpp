#pragma once
// Entry points of the measuring subcommands, so `ridge report` can run them in-process.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ridge/bandwidth.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/matmul.hpp"
#include "ridge/result.hpp"
#include "ridge/timing.hpp"

namespace ridge::cli {

/// `ridge info`: prints device properties and clocks; returns them as a result set (no records).
ResultSet run_info(int device, std::FILE* out);

// `ridge timing`, `ridge bandwidth` and `ridge matmul` are library calls: run_timing_demo
// (ridge/timing.hpp), run_bandwidth_sweep (ridge/bandwidth.hpp), run_matmul_sweep (ridge/matmul.hpp).
// These run them and print what the commands print on `out` (rows as they are measured), so the
// report's sections can show the same output with --verbose. An empty path writes no plot.
TimingDemo run_timing_printed(const TimingDemoOptions& options, std::FILE* out);
BandwidthSweep run_bandwidth_printed(const BandwidthSweepOptions& options, std::FILE* out, const std::string& svg = {});
MatmulSweep run_matmul_printed(const MatmulSweepOptions& options, std::FILE* out, const std::string& svg_prefix = {});

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

/// `ridge decode`: gpt2::run_decode with its table printed to `out` as it runs, the summary after
/// it, and the roofline and tokens/s plots written to `svg` (when non-empty).
gpt2::DecodeRun run_decode(const gpt2::DecodeOptions& options, const std::string& svg, std::FILE* out);

/// `ridge profile`: gpt2::run_profile, its analysis printed to `out`.
gpt2::ProfileRun run_profile(const gpt2::ProfileOptions& options, std::FILE* out);

}  // namespace ridge::cli
