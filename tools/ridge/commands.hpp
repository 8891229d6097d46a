#pragma once
// Entry points of the measuring subcommands, so `ridge report` can run them in-process.
#include <cstdint>
#include <cstdio>
#include <string>

#include "ridge/result.hpp"

namespace ridge::cli {

/// `ridge info`: prints device properties and clocks; returns them as a result set (no records).
ResultSet run_info(int device, std::FILE* out);

struct TimingOptions {
  int device = 0;
  long n = 4096;
  std::string dtype = "fp32";
  long small_n = 256;
  std::string small_dtype = "bf16";
  int samples = 20;
  int warmup = 5;
};
/// `ridge timing`: the three-way timing demo plus the small-size launch-free comparison.
/// Throws VerificationError when the GEMM's output is wrong.
ResultSet run_timing(const TimingOptions& options, std::FILE* out);

struct DecodeOptions {
  int device = 0;
  std::string model = "small";  ///< preset: tiny, small, medium, large, xl
  std::string dtype = "bf16";   ///< fp32 or bf16
  std::string batch = "1";      ///< comma-separated batch sizes
  std::string context = "1024"; ///< comma-separated lengths after the step (N-1 cached + 1 new)
  std::string mode = "eager,graph";
  std::string gemm = "auto";  ///< auto, gemv, cublas
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

}  // namespace ridge::cli
