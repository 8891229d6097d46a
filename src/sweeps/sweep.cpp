#include "ridge/sweep.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"

namespace ridge {

namespace {

constexpr std::int64_t max_size = std::int64_t{1} << 62;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return parts;
}

// A signed integer with nothing else around it; nullopt for garbage or overflow.
std::optional<std::int64_t> parse_integer(const std::string& text) {
  std::int64_t v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || first == last) return std::nullopt;
  return v;
}

// "1024" or "2^10"; `context` names the whole item for messages.
std::int64_t parse_size_value(const std::string& raw, const std::string& context) {
  const std::string text = trim(raw);
  if (text.empty()) throw UsageError(fmt::format("empty size in '{}'", context));
  const auto caret = text.find('^');
  if (caret == std::string::npos) {
    const auto v = parse_integer(text);
    if (!v) throw UsageError(fmt::format("'{}' in '{}' is not a size: use an integer like 4096 or a power like 2^12", text, context));
    if (*v <= 0) throw UsageError(fmt::format("sizes must be > 0, got {} in '{}'", *v, context));
    return *v;
  }
  const auto base = parse_integer(trim(text.substr(0, caret)));
  const auto exponent = parse_integer(trim(text.substr(caret + 1)));
  if (!base || !exponent)
    throw UsageError(fmt::format("'{}' in '{}' is not a power: write BASE^EXPONENT with integers, e.g. 2^20", text, context));
  if (*base <= 0) throw UsageError(fmt::format("the base of '{}' in '{}' must be > 0", text, context));
  if (*exponent < 0) throw UsageError(fmt::format("the exponent of '{}' in '{}' must be >= 0", text, context));
  if (*base == 1) return 1;  // 1^E: the loop below would run E times (up to 2^63)
  double v = std::pow(static_cast<double>(*base), static_cast<double>(*exponent));
  if (v > static_cast<double>(max_size)) throw UsageError(fmt::format("'{}' in '{}' is too large", text, context));
  std::int64_t exact = 1;
  for (std::int64_t i = 0; i < *exponent; ++i) exact *= *base;
  return exact;
}

void push_unique(std::vector<std::int64_t>& out, std::set<std::int64_t>& seen, std::int64_t v, std::size_t max_count,
                 const std::string& spec) {
  if (!seen.insert(v).second) return;
  if (out.size() >= max_count)
    throw UsageError(fmt::format("'{}' gives more than {} sizes; use a larger step", spec, max_count));
  out.push_back(v);
}

void expand_range(const std::string& item, std::vector<std::int64_t>& out, std::set<std::int64_t>& seen,
                  std::size_t max_count, const std::string& spec) {
  const auto parts = split(item, ':');
  if (parts.size() < 2 || parts.size() > 3)
    throw UsageError(fmt::format("range '{}' must be START:END or START:END:STEP (e.g. 2^10:2^28:2, 256:8192:x2, "
                                 "1024:4096:+1024)",
                                 item));
  const std::int64_t start = parse_size_value(parts[0], item);
  const std::int64_t end = parse_size_value(parts[1], item);
  if (end < start)
    throw UsageError(fmt::format("range '{}' ends ({}) before it starts ({}); write the smaller size first", item, end, start));
  std::string step = parts.size() == 3 ? trim(parts[2]) : "x2";
  if (step.empty()) throw UsageError(fmt::format("range '{}' has an empty step", item));
  bool additive = false;
  if (step[0] == '+') {
    additive = true;
    step = step.substr(1);
  } else if (step[0] == 'x' || step[0] == 'X' || step[0] == '*') {
    step = step.substr(1);
  }
  const auto amount = parse_integer(trim(step));
  if (!amount)
    throw UsageError(fmt::format("step '{}' of range '{}' is not a number: use xF (factor), +D (increment) or a bare factor",
                                 parts.size() == 3 ? trim(parts[2]) : step, item));
  if (*amount <= 0) throw UsageError(fmt::format("the step of range '{}' must be > 0, got {}", item, *amount));
  if (!additive && *amount < 2)
    throw UsageError(fmt::format("the factor of range '{}' must be >= 2 (a factor of {} never reaches the end); "
                                 "use +D for an additive step",
                                 item, *amount));
  for (std::int64_t v = start; v <= end;) {
    push_unique(out, seen, v, max_count, spec);
    if (additive) {
      if (v > max_size - *amount) break;
      v += *amount;
    } else {
      if (v > max_size / *amount) break;
      v *= *amount;
    }
  }
}

}  // namespace

std::vector<std::int64_t> parse_sizes(const std::string& spec, std::size_t max_count) {
  if (trim(spec).empty()) throw UsageError("the size list is empty: give sizes like 256,512 or a range like 2^10:2^28:2");
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen;
  for (const auto& raw : split(spec, ',')) {
    const std::string item = trim(raw);
    if (item.empty()) throw UsageError(fmt::format("empty item in size list '{}'", spec));
    if (item.find(':') != std::string::npos)
      expand_range(item, out, seen, max_count, spec);
    else
      push_unique(out, seen, parse_size_value(item, spec), max_count, spec);
  }
  return out;
}

std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  // Powers (2^k) for lists of powers of two that reach 2^16, as one writes element and byte
  // counts; plain numbers otherwise (matrix sides such as 256..8192).
  auto power_of_two = [](std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; };
  const bool powers = !sizes.empty() && std::all_of(sizes.begin(), sizes.end(), power_of_two) &&
                      *std::max_element(sizes.begin(), sizes.end()) >= (std::int64_t{1} << 16);
  std::vector<std::string> labels;
  for (auto n : sizes) labels.push_back(powers ? fmt::format("2^{}", std::countr_zero(static_cast<std::uint64_t>(n)))
                                               : fmt::format("{}", n));
  if (sizes.size() >= 3 && sizes[0] > 0) {
    const std::int64_t factor = sizes[1] / sizes[0], step = sizes[1] - sizes[0];
    bool geometric = factor >= 2, additive = step > 0;
    for (std::size_t i = 1; i < sizes.size(); ++i) {
      geometric = geometric && sizes[i] == sizes[i - 1] * factor;
      additive = additive && sizes[i] - sizes[i - 1] == step;
    }
    if (geometric) return fmt::format("{}:{}:x{}", labels.front(), labels.back(), factor);
    if (additive) return fmt::format("{}:{}:+{}", labels.front(), labels.back(), step);
  }
  return fmt::format("{}", fmt::join(labels, ","));
}

std::vector<std::int64_t> geometric_sizes(std::int64_t first, std::int64_t last, std::int64_t factor) {
  if (first < 1 || last < first || factor < 2)
    throw UsageError(fmt::format("geometric_sizes({}, {}, {}): needs 1 <= first <= last and factor >= 2", first, last,
                                 factor));
  std::vector<std::int64_t> out;
  for (std::int64_t v = first; v <= last; v *= factor) {
    out.push_back(v);
    if (v > last / factor) break;
  }
  return out;
}

void validate_sizes(const std::vector<std::int64_t>& sizes, const std::string& field) {
  if (sizes.empty()) throw UsageError(fmt::format("{}: the list is empty; give at least one size", field));
  for (auto n : sizes)
    if (n < 1) throw UsageError(fmt::format("{}: sizes must be > 0, got {}", field, n));
}

std::vector<std::string> parse_list(const std::string& spec, const std::string& what) {
  if (trim(spec).empty()) throw UsageError(fmt::format("{} is empty", what));
  std::vector<std::string> out;
  for (const auto& raw : split(spec, ',')) {
    const std::string item = trim(raw);
    if (item.empty()) throw UsageError(fmt::format("{} '{}' has an empty item", what, spec));
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return out;
}

std::vector<MatmulDims> parse_shapes(const std::string& spec) {
  if (trim(spec).empty())
    throw UsageError("the shape list is empty: give m,n,k triples separated by ';', e.g. 4096,4096,4096;128,4096,4096");
  std::vector<MatmulDims> out;
  for (const auto& raw : split(spec, ';')) {
    const std::string item = trim(raw);
    if (item.empty()) continue;
    const auto parts = split(item, ',');
    if (parts.size() != 1 && parts.size() != 3)
      throw UsageError(fmt::format("shape '{}' must be m,n,k (or one n for n,n,n)", item));
    std::vector<std::int64_t> v;
    for (const auto& p : parts) v.push_back(parse_size_value(p, item));
    out.push_back(parts.size() == 1 ? MatmulDims{v[0], v[0], v[0]} : MatmulDims{v[0], v[1], v[2]});
  }
  if (out.empty()) throw UsageError(fmt::format("the shape list '{}' holds no shape", spec));
  return out;
}

// ---- streaming ops ----------------------------------------------------------------------------

std::string to_string(StreamOp op) {
  switch (op) {
    case StreamOp::add: return "add";
    case StreamOp::copy: return "copy";
    case StreamOp::scale: return "scale";
    case StreamOp::triad: return "triad";
    case StreamOp::read: return "read";
  }
  return "unknown";
}

StreamOp stream_op_from_string(const std::string& name) {
  if (name == "add") return StreamOp::add;
  if (name == "copy") return StreamOp::copy;
  if (name == "scale") return StreamOp::scale;
  if (name == "triad") return StreamOp::triad;
  if (name == "read" || name == "sum" || name == "reduce") return StreamOp::read;
  throw UsageError(fmt::format("unknown op '{}': use add, copy, scale, triad or read", name));
}

const std::vector<StreamOp>& all_stream_ops() {
  static const std::vector<StreamOp> ops{StreamOp::add, StreamOp::copy, StreamOp::scale, StreamOp::triad,
                                         StreamOp::read};
  return ops;
}

int arrays_read(StreamOp op) {
  switch (op) {
    case StreamOp::add:
    case StreamOp::triad: return 2;
    case StreamOp::copy:
    case StreamOp::scale:
    case StreamOp::read: return 1;
  }
  return 0;
}

int arrays_written(StreamOp op) { return op == StreamOp::read ? 0 : 1; }

double stream_bytes_per_element(StreamOp op, DType dtype) {
  return (arrays_read(op) + arrays_written(op)) * bytes_per_element(dtype);
}

double stream_flops_per_element(StreamOp op) {
  switch (op) {
    case StreamOp::copy: return 0;
    case StreamOp::add:
    case StreamOp::scale:
    case StreamOp::read: return 1;
    case StreamOp::triad: return 2;
  }
  return 0;
}

double stream_bytes(StreamOp op, std::int64_t n, DType dtype) {
  if (n <= 0) throw UsageError(fmt::format("element count must be > 0, got {}", n));
  return static_cast<double>(n) * stream_bytes_per_element(op, dtype);
}

double stream_flops(StreamOp op, std::int64_t n) {
  if (n <= 0) throw UsageError(fmt::format("element count must be > 0, got {}", n));
  return static_cast<double>(n) * stream_flops_per_element(op);
}

double stream_working_set_bytes(StreamOp op, std::int64_t n, DType dtype) {
  // Each array is touched once, so the working set equals the traffic for these ops.
  return stream_bytes(op, n, dtype);
}

double matmul_working_set_bytes(double m, double n, double k, double ab_bytes, double c_bytes) {
  return (m * k + k * n) * ab_bytes + m * n * c_bytes;
}

// ---- knees --------------------------------------------------------------------------------------

std::optional<double> find_knee(std::vector<RatePoint> points, double ceiling, double fraction) {
  if (!(ceiling > 0)) throw UsageError("the ceiling of a knee must be > 0");
  if (!(fraction > 0 && fraction <= 1.5)) throw UsageError(fmt::format("knee fraction must be in (0, 1.5], got {}", fraction));
  std::erase_if(points, [](const RatePoint& p) { return !(p.size > 0) || !std::isfinite(p.rate); });
  std::stable_sort(points.begin(), points.end(), [](const RatePoint& a, const RatePoint& b) { return a.size < b.size; });
  const double threshold = fraction * ceiling;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].rate < threshold) continue;
    if (i == 0) return points[0].size;
    const RatePoint& lo = points[i - 1];
    const RatePoint& hi = points[i];
    if (hi.size == lo.size) return hi.size;
    const double t = (threshold - lo.rate) / (hi.rate - lo.rate);  // in (0, 1]: lo below, hi at or above
    return std::exp(std::log(lo.size) + t * (std::log(hi.size) - std::log(lo.size)));
  }
  return std::nullopt;
}

std::vector<Knee> find_knees(const std::vector<RatePoint>& points, double ceiling, const std::vector<double>& fractions) {
  std::vector<Knee> knees;
  for (double f : fractions) knees.push_back(Knee{f, find_knee(points, ceiling, f)});
  return knees;
}

// ---- methods ---------------------------------------------------------------------------------

Method auto_method(double estimated_ms, double launch_free_below_ms) {
  return estimated_ms < launch_free_below_ms ? Method::graph_replay : Method::cuda_events;
}

std::optional<Method> parse_method_option(const std::string& name) {
  if (name == "auto") return std::nullopt;
  return method_from_string(name);
}

std::string method_option_text(const std::optional<Method>& method) { return method ? to_string(*method) : "auto"; }

// ---- runner -----------------------------------------------------------------------------------

std::vector<SweepPoint> sweep_points(const std::vector<std::string>& ops, const std::vector<std::string>& variants,
                                     const std::vector<std::string>& dtypes, const std::vector<std::int64_t>& sizes) {
  const std::vector<std::string> none{""};
  const auto& o = ops.empty() ? none : ops;
  const auto& v = variants.empty() ? none : variants;
  const auto& d = dtypes.empty() ? none : dtypes;
  std::vector<SweepPoint> points;
  for (const auto& op : o)
    for (const auto& variant : v)
      for (const auto& dtype : d)
        for (std::int64_t size : sizes) {
          SweepPoint p;
          p.size = size;
          p.op = op;
          p.variant = variant;
          p.dtype = dtype;
          p.shape = MatmulDims{size, size, size};
          p.index = points.size();
          points.push_back(p);
        }
  return points;
}

SweepProgress terminal_progress(const std::string& label) {
  if (!isatty(STDERR_FILENO)) return {};
  return [label](std::size_t index, std::size_t total, const std::string& what) {
    std::fprintf(stderr, "\r\033[K%s [%zu/%zu] %s", label.c_str(), index + 1, total, what.c_str());
    std::fflush(stderr);
  };
}

std::vector<Record> run_sweep(const std::vector<SweepPoint>& points, const std::function<Record(const SweepPoint&)>& measure,
                              const std::function<void(const Record&)>& on_record, const SweepProgress& progress) {
  std::vector<Record> records;
  records.reserve(points.size());
  const bool tty = isatty(STDERR_FILENO);
  auto clear = [&] {
    if (progress && tty) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  };
  try {
    for (const auto& p : points) {
      if (progress) {
        std::string what = p.op;
        if (!p.variant.empty()) what += (what.empty() ? "" : " ") + p.variant;
        if (!p.dtype.empty()) what += (what.empty() ? "" : " ") + p.dtype;
        what += fmt::format(" {}", p.size > 0 ? size_label(p.size) : fmt::format("{}x{}x{}", p.shape.m, p.shape.n, p.shape.k));
        progress(p.index, points.size(), what);
      }
      Record r = measure(p);
      if (on_record) {
        clear();  // a streamed line must not land in the middle of the progress line
        on_record(r);
      }
      records.push_back(std::move(r));
    }
  } catch (...) {
    clear();
    throw;
  }
  clear();
  return records;
}

std::string size_label(std::int64_t n) {
  if (n >= 1024 && (n & (n - 1)) == 0) {
    int e = 0;
    while ((std::int64_t{1} << e) < n) ++e;
    return fmt::format("2^{}", e);
  }
  return fmt::format("{}", n);
}

std::string method_label(Method method, bool automatic) {
  std::string label;
  switch (method) {
    case Method::graph_replay: label = "CUDA graph replay (launch-free)"; break;
    case Method::spin_hold: label = "events behind a spin-held stream (launch-free)"; break;
    case Method::cuda_events: label = "CUDA events per sample"; break;
    case Method::wall_sync: label = "synchronized wall clock"; break;
    case Method::wall_naive: label = "unsynchronized wall clock (wrong on purpose)"; break;
    case Method::cpu_wall: label = "CPU wall clock"; break;
    case Method::cupti_trace: label = "CUPTI kernel trace"; break;
    case Method::none: label = "no timing"; break;
  }
  return automatic ? label + ", chosen automatically" : label;
}

void validate_ceilings_mode(const std::string& mode) { ceilings_mode_from_string(mode); }

PlotSeries line_series(std::string name, std::vector<PlotPoint> points, bool dashed, std::string color) {
  PlotSeries s;
  s.name = std::move(name);
  s.points = std::move(points);
  s.markers = false;
  s.dashed = dashed;
  s.color = std::move(color);
  return s;
}

std::optional<std::int64_t> int_param(const Record& record, std::string_view key) {
  const auto it = record.params.find(std::string(key));
  if (it == record.params.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  return static_cast<std::int64_t>(std::llround(it->get<double>()));
}

std::optional<std::string> text_param(const Record& record, std::string_view key) {
  const auto it = record.params.find(std::string(key));
  if (it == record.params.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace ridge
