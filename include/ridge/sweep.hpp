#pragma once
// Size sweeps: parameter lists and ranges, the byte/FLOP accounting of the streaming ops, the
// knee finder ("the smallest size that reaches X% of the ceiling"), and a runner that streams
// each record as it completes. CPU-only: everything here is unit-tested on any machine.
// (Implementation: src/sweeps/sweep.cpp.)
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/dtype.hpp"
#include "ridge/measure.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"

namespace ridge {

// ---- parameter lists and ranges ----------------------------------------------------------------

/// Parses sizes (element counts or matrix sides) from a comma-separated list whose items are
/// numbers, powers or ranges:
///   "256,512,1024"       the list as given
///   "2^20"               one power
///   "2^10:2^28:2"        2^10, 2^11, ..., 2^28 (a bare step is a factor: each size is 2x the last)
///   "256:8192:x2"        256, 512, ..., 8192 (an explicit factor)
///   "1024:4096:+1024"    1024, 2048, 3072, 4096 (an additive step)
///   "256:8192"           factor 2 by default
/// The end is included when the steps land on it, never exceeded. Returns the sizes in the order
/// given, duplicates removed. Throws UsageError naming the bad item for garbage, non-positive
/// sizes, an end below the start, a zero step, a factor <= 1, or more than `max_count` sizes.
std::vector<std::int64_t> parse_sizes(const std::string& spec, std::size_t max_count = 4096);

/// The sizes as parse_sizes reads them back: "START:END:xF" for a run of three or more sizes that
/// each grow by the same integer factor, "START:END:+D" for a constant step, else a comma list;
/// lists of powers of two reaching 2^16 written as 2^k. parse_sizes(sizes_text(s)) == s for sizes
/// without repeats.
std::string sizes_text(const std::vector<std::int64_t>& sizes);

/// first, first x factor, ... up to `last` (included when a step lands on it): the option
/// structs' default size lists. Throws UsageError for first < 1, last < first or factor < 2.
std::vector<std::int64_t> geometric_sizes(std::int64_t first, std::int64_t last, std::int64_t factor);

/// Checks a size list of an option struct: not empty, every size > 0 (upper limits are each
/// sweep's). Throws UsageError naming `field` ("sizes: sizes must be > 0, got 0").
void validate_sizes(const std::vector<std::int64_t>& sizes, const std::string& field);

/// `values` with repeats removed, the first of each kept in place (the option lists a plan runs).
template <typename T>
std::vector<T> without_repeats(const std::vector<T>& values) {
  std::vector<T> out;
  for (const T& v : values)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

/// Splits "a,b,c" into its items (whitespace trimmed, repeats dropped). Throws UsageError, naming
/// `what` (e.g. "ops"), for an empty list or an empty item.
std::vector<std::string> parse_list(const std::string& spec, const std::string& what);

/// One GEMM shape per item of "m,n,k;m,n,k" (also "n" for a square n,n,n). Throws UsageError.
struct MatmulDims {
  std::int64_t m = 0, n = 0, k = 0;
  bool operator==(const MatmulDims&) const = default;
};
std::vector<MatmulDims> parse_shapes(const std::string& spec);

// ---- streaming ops: bytes and FLOPs ------------------------------------------------------------

/// The memory-bound ops of `ridge bandwidth` (STREAM's names, plus x + y).
enum class StreamOp {
  add,    ///< c = a + b      2 reads, 1 write, 1 FLOP per element
  copy,   ///< c = a          1 read,  1 write, 0 FLOP
  scale,  ///< c = s * a      1 read,  1 write, 1 FLOP
  triad,  ///< c = a + s * b  2 reads, 1 write, 2 FLOP
  read,   ///< sum(a)         1 read,  0 writes (a final pass over per-block partial sums), 1 FLOP
};
std::string to_string(StreamOp op);
/// "add", "copy", "scale", "triad", "read" (also "sum", "reduce"); throws UsageError otherwise.
StreamOp stream_op_from_string(const std::string& name);
/// All ops, in the order above.
const std::vector<StreamOp>& all_stream_ops();

/// Arrays of n elements the op reads / writes once each.
int arrays_read(StreamOp op);
int arrays_written(StreamOp op);
/// Bytes moved per element (reads + writes): add 12, copy 8, scale 8, triad 12, read 4 for fp32.
double stream_bytes_per_element(StreamOp op, DType dtype = DType::fp32);
/// FLOPs per element: add 1, copy 0, scale 1, triad 2 (a multiply and an add), read 1.
double stream_flops_per_element(StreamOp op);
/// Bytes one call moves over n elements (reads + writes), as the rate's numerator.
double stream_bytes(StreamOp op, std::int64_t n, DType dtype = DType::fp32);
/// FLOPs of one call over n elements.
double stream_flops(StreamOp op, std::int64_t n);
/// Bytes of distinct memory one call touches (every array it reads or writes): compared with
/// the L2 size to decide whether a hot measurement is cache-resident.
double stream_working_set_bytes(StreamOp op, std::int64_t n, DType dtype = DType::fp32);

/// Working set of a GEMM: A, B and C once each (the same as matmul_bytes).
double matmul_working_set_bytes(double m, double n, double k, double ab_bytes, double c_bytes);

// ---- the knee finder ---------------------------------------------------------------------------

/// One measured point of a sweep: size (elements, or n) and rate (bytes/s or FLOP/s).
struct RatePoint {
  double size = 0;
  double rate = 0;
};

/// The smallest size at which `rate` first reaches `fraction` (e.g. 0.7) of `ceiling`,
/// interpolated linearly in log(size) between the last measured size below the threshold and the
/// first at or above it. Points are sorted by size first. Returns the first size when it already
/// reaches the threshold, and nullopt when no point does (or there are no points). Throws
/// UsageError for fraction outside (0, 1.5] or a non-positive ceiling.
std::optional<double> find_knee(std::vector<RatePoint> points, double ceiling, double fraction);

struct Knee {
  double fraction = 0;          ///< e.g. 0.7
  std::optional<double> size;   ///< nullopt: never reached
};
/// find_knee for each fraction (default 70% and 90%).
std::vector<Knee> find_knees(const std::vector<RatePoint>& points, double ceiling,
                             const std::vector<double>& fractions = {0.7, 0.9});

// ---- timing method selection -------------------------------------------------------------------

/// The method `--method auto` picks for an op whose single call takes about `estimated_ms`:
/// CUDA-graph replay (launch-free) below `launch_free_below_ms`, where the host's launch latency
/// would be a visible part of a per-sample event pair; CUDA events above it.
Method auto_method(double estimated_ms, double launch_free_below_ms = 1.0);
/// Parses "auto" (nullopt) or a method name (see method_from_string).
std::optional<Method> parse_method_option(const std::string& name);
/// The inverse: "auto" for nullopt, else the method's name.
std::string method_option_text(const std::optional<Method>& method);

// ---- the sweep runner --------------------------------------------------------------------------

/// One point of a sweep: the values of each axis.
struct SweepPoint {
  std::int64_t size = 0;
  std::string op;       ///< e.g. "add"; empty when the sweep has no op axis
  std::string variant;  ///< e.g. "vec4"
  std::string dtype;    ///< e.g. "fp32"
  MatmulDims shape;     ///< for GEMM sweeps given explicit shapes (size = 0 then)
  std::size_t index = 0;  ///< position in the sweep, from 0
};

/// The cartesian product ops x variants x dtypes x sizes (sizes innermost, so each curve is
/// measured in one go). Empty axes count as one empty value.
std::vector<SweepPoint> sweep_points(const std::vector<std::string>& ops, const std::vector<std::string>& variants,
                                     const std::vector<std::string>& dtypes, const std::vector<std::int64_t>& sizes);

/// Progress reporting: called before each point with (index, total, what).
using SweepProgress = std::function<void(std::size_t index, std::size_t total, const std::string& what)>;
/// A progress reporter that rewrites one line on stderr, only when stderr is a terminal.
SweepProgress terminal_progress(const std::string& label);

/// Runs `measure` on every point in order, handing each finished record to `on_record` at once
/// (so a caller can print or write it while the sweep goes on), and returns all of them. Errors
/// from `measure` propagate (a failed verification stops the sweep). Progress is cleared at the end.
std::vector<Record> run_sweep(const std::vector<SweepPoint>& points, const std::function<Record(const SweepPoint&)>& measure,
                              const std::function<void(const Record&)>& on_record = {},
                              const SweepProgress& progress = {});

/// "2^20" for powers of two >= 2^10, else the plain number: compact size labels for tables.
std::string size_label(std::int64_t n);

/// Human label of a timing method: "CUDA graph replay (launch-free)" etc., with ", chosen
/// automatically" when `automatic`.
std::string method_label(Method method, bool automatic);

/// Checks a measured-ceilings mode: "auto" (the cached measurement if one exists; never starts a
/// measurement of tens of seconds), "measure" (cached, or measured now), "refresh" (measured now),
/// "none". Throws UsageError for another.
void validate_ceilings_mode(const std::string& mode);

/// A line without markers through `points` (a ceiling, a roof, a size marker) for a sweep's plot.
PlotSeries line_series(std::string name, std::vector<PlotPoint> points, bool dashed, std::string color = {});

// ---- record parameters ---------------------------------------------------------------------------

// Their keys are param_key (record_keys.hpp). Read them through the typed accessors (stream_point,
// gemm_shape, int_param) where one exists.

/// An integer parameter of a record; nullopt when absent or not a number.
std::optional<std::int64_t> int_param(const Record& record, std::string_view key);
/// A text parameter of a record; nullopt when absent or not a string.
std::optional<std::string> text_param(const Record& record, std::string_view key);

// ---- findings and callbacks ----------------------------------------------------------------------

/// One finding of an analysis, in words: a headline (level 0) or a detail under the headline
/// before it (level 1). Printers indent details; the report writes them as nested list items.
struct Finding {
  std::string text;
  int level = 0;
};

/// What a running sweep tells its caller. Every member is optional.
struct SweepCallbacks {
  /// A record as soon as it is measured (print a table row, write a file...).
  std::function<void(const Record&)> on_record;
  /// Before each point (see terminal_progress).
  SweepProgress on_progress;
  /// A transient status line ("allocating 3.2 GB of buffers"); an empty line clears it.
  std::function<void(const std::string&)> on_status;
};

}  // namespace ridge
