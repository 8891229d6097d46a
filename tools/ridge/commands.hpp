#pragma once
// Entry points of the measuring subcommands, so `ridge report` can run them in-process.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ridge/bandwidth.hpp"
#include "ridge/device.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/matmul.hpp"
#include "ridge/result.hpp"
#include "ridge/roofline.hpp"
#include "ridge/timing.hpp"

namespace ridge::cli {

/// `ridge info`: prints device_info(device) (properties, datasheet match, clocks) and returns it.
DeviceInfo run_info(int device, std::FILE* out);

// `ridge timing`, `ridge bandwidth` and `ridge matmul` are library calls: run_timing_demo
// (ridge/timing.hpp), run_bandwidth_sweep (ridge/bandwidth.hpp), run_matmul_sweep (ridge/matmul.hpp).
// These run them and print what the commands print on `out` (rows as they are measured), so the
// report's sections can show the same output with --verbose. An empty path writes no plot.
TimingDemo run_timing_printed(const TimingDemoOptions& options, std::FILE* out);
BandwidthSweep run_bandwidth_printed(const BandwidthSweepOptions& options, std::FILE* out, const std::string& svg = {});
MatmulSweep run_matmul_printed(const MatmulSweepOptions& options, std::FILE* out, const std::string& svg_prefix = {});

/// `ridge roofline`'s options: the library's (ridge::RooflineOptions) plus where the plot goes.
struct RooflineCommandOptions {
  RooflineOptions roofline;
  std::string svg = "runs/roofline.svg";
};
/// `ridge roofline`: prints run_roofline's analysis (ceilings, ridge points, placed operations) and
/// writes its plot to options.svg. Returns the ceilings' raw records (none when model-only).
ResultSet run_roofline(const RooflineCommandOptions& options, std::FILE* out);

/// `ridge decode`: gpt2::run_decode with its table printed to `out` as it runs, the summary after
/// it, and the roofline and tokens/s plots written to `svg` (when non-empty).
gpt2::DecodeRun run_decode(const gpt2::DecodeOptions& options, const std::string& svg, std::FILE* out);

/// `ridge profile`: gpt2::run_profile, its analysis printed to `out`.
gpt2::ProfileRun run_profile(const gpt2::ProfileOptions& options, std::FILE* out);

}  // namespace ridge::cli
