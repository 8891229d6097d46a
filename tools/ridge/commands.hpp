#pragma once
// Entry points of the measuring subcommands, so `ridge report` can run them in-process.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ridge/bandwidth.hpp"
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
struct DecodeOptions {
  int device = 0;
  std::string model = "small";  ///< preset: tiny, small, medium, large, xl
  std::string dtype = "bf16";   ///< fp32 or bf16
  std::string batch = "1";      ///< comma-separated batch sizes
  std::string context = "1024"; ///< comma-separated lengths after the step (N-1 cached + 1 new)
  std::string mode = "eager,graph";
  std::string gemm = "auto";  ///< auto, gemv, cublas
  std::string kernel = "auto";  ///< the GEMV backend's step: auto, barrier, chain
  bool no_pdl = false;
  std::string weights;        ///< safetensors file; empty = random weights from `seed`
  int heads = 0;              ///< for `weights`; 0 = width/64
  std::string check_logits;   ///< reference file from bench/gpt2_export.py; empty = none
  std::uint64_t seed = 1;
  int samples = 20;
  int warmup = 5;
  double bandwidth_gb_per_s = 0;  ///< 0 = measured_ceilings(device).hbm_bytes_per_s
  std::string svg;                ///< roofline plot path; empty = none

  /// A short run for `ridge report`: small bf16, batch 1 and 8, context 1024, both modes.
  static DecodeOptions quick(int device) {
    DecodeOptions o;
    o.device = device;
    o.batch = "1,8";
    o.samples = 10;
    o.warmup = 3;
    return o;
  }
};
/// `ridge decode`: GPT-2 decode steps (eager, spin-held and graph-replayed) per batch and context,
/// each checked against the CPU reference first, with bytes, intensity and % of decode_ceiling.
/// Throws VerificationError when logits are wrong, UsageError for bad options, NoGpuError.
ResultSet run_decode(const DecodeOptions& options, std::FILE* out);

struct ProfileOptions {
  int device = 0;
  std::string model = "small";
  std::string dtype = "bf16";
  int batch = 1;
  int context = 128;  ///< tokens per sequence after the step (a 128-token cache)
  std::string kernel = "auto";  ///< the step's kernels: auto, barrier, chain
  std::string trace = "runs/trace.json";
};
/// `ridge profile`: traces one decode step eagerly and one as a graph replay; prints the analysis.
ResultSet run_profile(const ProfileOptions& options, std::FILE* out);

}  // namespace ridge::cli
