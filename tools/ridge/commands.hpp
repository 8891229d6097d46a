#pragma once
// Entry points of the measuring subcommands, so `ridge report` can run them in-process.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ridge/device.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/result.hpp"
#include "ridge/roofline.hpp"

namespace ridge::cli {

/// `ridge info`: prints device_info(device) (properties, datasheet match, clocks) and returns it.
DeviceInfo run_info(int device, std::FILE* out);

struct TimingOptions {
  int device = 0;
  long n = 4096;
  std::string dtype = "fp32";
  std::string backend = "cublaslt";
  long small_n = 256;
  std::string small_dtype = "bf16";
  int samples = 20;
  int warmup = 5;
  int repeats = 1;  ///< calls per event pair in the large case (measure_cuda's `repeats`)
};
/// `ridge timing`: the three-way timing demo plus the small-size launch-free comparison.
/// Throws VerificationError when the GEMM's output is wrong.
ResultSet run_timing(const TimingOptions& options, std::FILE* out);

/// `ridge roofline`'s options: the library's (ridge::RooflineOptions) plus where the plot goes.
struct RooflineCommandOptions {
  RooflineOptions roofline;
  std::string svg = "runs/roofline.svg";
};
/// `ridge roofline`: prints run_roofline's analysis (ceilings, ridge points, placed operations) and
/// writes its plot to options.svg. Returns the ceilings' raw records (none when model-only).
ResultSet run_roofline(const RooflineCommandOptions& options, std::FILE* out);
struct BandwidthOptions {
  int device = 0;
  std::string ops = "add,copy,scale,triad,read";  ///< comma list of add, copy, scale, triad, read
  std::string variants = "scalar,vec4,grid_stride";
  std::string sizes = "2^10:2^28:2";  ///< elements per array (see parse_sizes)
  std::string method = "auto";        ///< auto, events, spin, graph, wall
  bool cold = false;                  ///< flush the L2 before each sample (one call per sample)
  int samples = 20;
  int warmup = 3;
  std::string ceilings = "auto";  ///< measured ceilings: auto (cached only), measure, refresh, none
  std::string svg;                ///< GB/s vs size plot, written when non-empty
  bool quick = false;             ///< report mode: add only, every 4th power of two, 10 samples
};
/// `ridge bandwidth`: streaming ops over a size sweep, each variant checked before it is timed;
/// prints a table as it goes, then the answers (launch-bound sizes, % of datasheet, knees).
/// Throws UsageError for bad options (before touching the GPU), VerificationError for a wrong kernel.
ResultSet run_bandwidth(const BandwidthOptions& options, std::FILE* out);

struct MatmulOptions {
  int device = 0;
  std::string dtypes = "bf16";        ///< comma list of fp32, tf32, fp16, bf16, fp8
  std::string sizes = "256:8192:x2";  ///< square n (ignored when shapes is set)
  std::string shapes;                 ///< "m,n,k;m,n,k" instead of square sizes
  std::string method = "auto";
  bool cold = false;
  int samples = 20;
  int warmup = 5;
  int tune_candidates = 8;  ///< cuBLASLt heuristic algorithms timed per shape (1 = its first choice)
  std::string ceilings = "auto";
  std::string svg_prefix;  ///< writes PREFIX-rate.svg and PREFIX-roofline.svg when non-empty
  bool quick = false;      ///< report mode: 512, 2048, 8192 and 10 samples
};
/// `ridge matmul`: cuBLASLt GEMMs over sizes or shapes, each verified before timing; TFLOP/s,
/// roofline placement and the size that reaches 70% / 90% of peak.
ResultSet run_matmul(const MatmulOptions& options, std::FILE* out);
/// `ridge decode`: gpt2::run_decode with its table printed to `out` as it runs, the summary after
/// it, and the roofline and tokens/s plots written to `svg` (when non-empty).
gpt2::DecodeRun run_decode(const gpt2::DecodeOptions& options, const std::string& svg, std::FILE* out);

/// `ridge profile`: gpt2::run_profile, its analysis printed to `out`.
gpt2::ProfileRun run_profile(const gpt2::ProfileOptions& options, std::FILE* out);

}  // namespace ridge::cli
