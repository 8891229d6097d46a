// Hardware counters per kernel: the metric sets, their JSON form, what a profiled launch did
// (bytes and FLOPs by precision) and the measured roofline of every kernel name.
#include "ridge/trace/counters.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/events.hpp"

namespace ridge::trace {

namespace {

constexpr const char* duration_metric = "gpu__time_duration.sum";
constexpr const char* sm_clock_metric = "sm__cycles_elapsed.avg.per_second";
constexpr const char* dram_read_metric = "dram__bytes_read.sum";
constexpr const char* dram_write_metric = "dram__bytes_write.sum";
constexpr const char* l2_metric = "lts__t_bytes.sum";
constexpr std::string_view sass_prefix = "smsp__sass_thread_inst_executed_op_";
constexpr std::string_view tensor_prefix = "sm__ops_path_tensor_";

/// The time, clock and bytes every set reads. With the tensor paths below they fit one pass on
/// GH100 (checked with the Profiler Host API: tests/unit_cupti/test_pass_plan.cpp).
std::vector<std::string> memory_set() {
  return {duration_metric, sm_clock_metric, dram_read_metric, dram_write_metric, l2_metric};
}

/// The roofline set: the memory set, the tensor-core paths Hopper and its neighbours have (they
/// count FLOPs: a BF16 m*n*k GEMM gives 2*m*n*k) and the SASS FP64, FP32 and FP16 instruction
/// counts (per thread, predicated on), which take a pass of their own. On GH100: 2 passes. An
/// "a|b" entry takes the first the GPU offers; paths a GPU lacks are left out there and named.
/// On Hopper the FP16 and TF32 paths are the warpgroup (HGMMA) ones: the all-instruction paths
/// cost two more passes; legacy HMMA, FP64 and INT8 tensor work is in "roofline-full".
const std::vector<std::string>& roofline_metrics() {
  static const std::vector<std::string> metrics = [] {
    std::vector<std::string> m = memory_set();
    for (const char* path : {"src_bf16_dst_fp32", "op_hgmma_src_fp16|sm__ops_path_tensor_src_fp16_dst_fp32",
                             "src_fp16_dst_fp16", "op_hgmma_src_tf32_dst_fp32|sm__ops_path_tensor_src_tf32_dst_fp32",
                             "src_fp8", "src_fp8_dst_fp16", "src_fp8_dst_fp32"})
      m.push_back(fmt::format("{}{}.sum", tensor_prefix, path));
    for (auto& entry : m)  // ".sum" goes on each alternative
      if (const auto bar = entry.find('|'); bar != std::string::npos && entry.substr(0, bar).find('.') == std::string::npos)
        entry = entry.substr(0, bar) + ".sum" + entry.substr(bar);
    for (const char* precision : {"d", "f", "h"})
      for (const char* op : {"fma", "add", "mul"}) m.push_back(fmt::format("{}{}{}_pred_on.sum", sass_prefix, precision, op));
    return m;
  }();
  return metrics;
}

/// The roofline set and the rarer tensor paths (FP64, INT8), each costing passes of its own.
const std::vector<std::string>& roofline_full_metrics() {
  static const std::vector<std::string> metrics = [] {
    std::vector<std::string> m = roofline_metrics();
    for (const char* path : {"src_fp64", "src_int8"}) m.push_back(fmt::format("{}{}.sum", tensor_prefix, path));
    return m;
  }();
  return metrics;
}

/// The memory set: time, clock, DRAM and L2 bytes, which fit in one pass; no FLOPs.
const std::vector<std::string>& memory_metrics() {
  static const std::vector<std::string> metrics = memory_set();
  return metrics;
}

const std::unordered_map<std::string, const std::vector<std::string>*>& metric_sets() {
  static const std::unordered_map<std::string, const std::vector<std::string>*> sets{
      {"roofline", &roofline_metrics()}, {"roofline-full", &roofline_full_metrics()}, {"memory", &memory_metrics()}};
  return sets;
}

/// FLOPs one counted instruction or operation stands for, and the precision it is booked under;
/// {0, ""} for metrics that are not FLOPs.
std::pair<double, std::string> flops_of_metric(std::string_view metric) {
  if (metric.starts_with(sass_prefix)) {
    const std::string_view op = metric.substr(sass_prefix.size(), 4);  // e.g. "ffma"
    const char precision = op.empty() ? '?' : op[0];
    const std::string name = precision == 'd' ? "fp64" : precision == 'f' ? "fp32" : precision == 'h' ? "fp16" : "";
    if (name.empty()) return {0, ""};
    return {op.substr(1, 3) == "fma" ? 2.0 : 1.0, name};
  }
  if (metric.starts_with(tensor_prefix)) {  // sm__ops_path_tensor_[op_KIND_]src_SOURCE[_dst_D].sum
    const auto src = metric.find("src_");
    if (src == std::string_view::npos) return {0, ""};
    std::string_view source = metric.substr(src + 4);
    source = source.substr(0, std::min(source.find("_dst"), source.find('.')));
    if (source.starts_with("fp8")) source = "fp8";
    return {1.0, "tensor_" + std::string(source)};
  }
  return {0, ""};
}

std::uint64_t parse_step(std::string_view text, const std::string& whole) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw UsageError(fmt::format("steps '{}' is not a step or a window FIRST..LAST of steps (e.g. 10..12)", whole));
  return v;
}

}  // namespace

std::pair<std::uint64_t, std::uint64_t> parse_step_window(const std::string& text) {
  const auto dots = text.find("..");
  if (dots == std::string::npos) {
    const std::uint64_t step = parse_step(text, text);
    return {step, step};
  }
  const std::pair<std::uint64_t, std::uint64_t> w{parse_step(std::string_view(text).substr(0, dots), text),
                                                  parse_step(std::string_view(text).substr(dots + 2), text)};
  if (w.second < w.first) throw UsageError(fmt::format("steps '{}' ends before it begins", text));
  return w;
}

std::vector<std::string> counter_set_names() {
  std::vector<std::string> names;
  for (const auto& [name, metrics] : metric_sets()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string>& counter_set_metrics(const std::string& set) {
  const auto it = metric_sets().find(set);
  if (it == metric_sets().end())
    throw UsageError(fmt::format("metric_set '{}' is not a metric set; the sets are: {}", set,
                                 fmt::join(counter_set_names(), ", ")));
  return *it->second;
}

void CounterOptions::validate() const {
  if (!metric_set.empty()) counter_set_metrics(metric_set);
  if (metric_set.empty() && metrics.empty()) throw UsageError("metrics: give a metric set or at least one metric");
  for (const auto& m : metrics)
    if (m.empty() || m.find('.') == std::string::npos)
      throw UsageError(fmt::format("metrics: '{}' is not a metric with its rollup (e.g. dram__bytes_read.sum)", m));
  if (steps && steps->second < steps->first) throw UsageError("steps: the window ends before it begins");
  if (steps && step_range.empty()) throw UsageError("steps: a step window needs the NVTX range that marks a step (step_range)");
  if (ranges_per_decode == 0) throw UsageError("ranges_per_decode must be at least 1");
  if (replay == CounterReplay::steps && !steps)
    throw UsageError("replay: replaying by steps needs a step window (steps) of the program's own repeated steps");
}

CounterOptions counter_options(const CounterRequest& request) {
  CounterOptions o;
  o.metric_set = request.set == raw_counter_set ? std::string() : request.set;
  o.metrics = request.metrics;
  o.step_range = request.step_range;
  if (!request.steps.empty()) o.steps = parse_step_window(request.steps);
  if (request.first_launches) o.first_launches_per_kernel = *request.first_launches;
  else if (o.steps) o.first_launches_per_kernel = 0;  // every launch of the window
  if (!request.replay.empty()) o.replay = counter_replay_from_string(request.replay);
  else if (o.steps && o.first_launches_per_kernel > 0) o.replay = CounterReplay::kernel;  // the first N of each kernel
  o.validate();
  return o;
}

CounterReplay CounterOptions::replay_mode() const {
  if (replay) return *replay;
  return steps ? CounterReplay::steps : CounterReplay::kernel;
}

std::pair<std::uint64_t, std::uint64_t> CounterOptions::steps_taken(std::size_t passes) const {
  if (!steps) return {0, 0};
  if (replay_mode() == CounterReplay::kernel) return *steps;
  const std::uint64_t profiled = steps->second - steps->first + 1;
  return {steps->first, steps->first + profiled * std::max<std::size_t>(passes, 1) - 1};
}

std::string to_string(CounterReplay r) { return r == CounterReplay::steps ? "steps" : "kernel"; }

CounterReplay counter_replay_from_string(const std::string& text) {
  if (text == "steps") return CounterReplay::steps;
  if (text == "kernel") return CounterReplay::kernel;
  throw UsageError(fmt::format("replay: '{}' is not a replay mode; use steps (the program's own steps replay it) "
                               "or kernel (each kernel replayed in its launch)", text));
}

nlohmann::json to_json(const CounterOptions& o) {
  nlohmann::json j{{"metric_set", o.metric_set}, {"metrics", o.metrics}, {"step_range", o.step_range},
                   {"first_launches_per_kernel", o.first_launches_per_kernel}, {"ranges_per_decode", o.ranges_per_decode}};
  if (o.steps) j["steps"] = {o.steps->first, o.steps->second};
  if (o.replay) j["replay"] = to_string(*o.replay);
  return j;
}

CounterOptions counter_options_from_json(const nlohmann::json& j) {
  CounterOptions o;
  try {
    o.metric_set = j.value("metric_set", o.metric_set);
    o.metrics = j.value("metrics", o.metrics);
    o.step_range = j.value("step_range", o.step_range);
    o.first_launches_per_kernel = j.value("first_launches_per_kernel", o.first_launches_per_kernel);
    o.ranges_per_decode = j.value("ranges_per_decode", o.ranges_per_decode);
    if (const auto s = j.find("steps"); s != j.end()) o.steps = std::pair{s->at(0).get<std::uint64_t>(), s->at(1).get<std::uint64_t>()};
    if (const auto r = j.find("replay"); r != j.end()) o.replay = counter_replay_from_string(r->get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("counter options: malformed ({})", e.what()));
  }
  o.validate();
  return o;
}

std::vector<std::string> CounterOptions::metric_names() const {
  std::vector<std::string> names;
  if (!metric_set.empty()) names = counter_set_metrics(metric_set);
  for (const auto& m : metrics)
    if (std::find(names.begin(), names.end(), m) == names.end()) names.push_back(m);
  return names;
}

std::optional<std::size_t> KernelCounters::column(const std::string& metric) const {
  const auto it = std::find(metrics.begin(), metrics.end(), metric);
  if (it == metrics.end()) return std::nullopt;
  return static_cast<std::size_t>(it - metrics.begin());
}

namespace {
bool shape_known(const std::array<std::int32_t, 3>& d) { return d[0] > 0 && d[1] > 0 && d[2] > 0; }
bool same_shape(const std::array<std::int32_t, 3>& d, const Dim3& k) { return d[0] == k.x && d[1] == k.y && d[2] == k.z; }
}  // namespace

CounterRowIndex::CounterRowIndex(const KernelCounters& counters) {
  for (const auto& r : counters.rows) by_correlation_.emplace(r.correlation, &r);
}

const CounterRow* CounterRowIndex::find(const Kernel& k) const {
  const auto it = by_correlation_.find(k.correlation);
  if (it == by_correlation_.end()) return nullptr;
  const CounterRow& r = *it->second;
  if (shape_known(r.grid) && shape_known(r.block) && !(same_shape(r.grid, k.grid) && same_shape(r.block, k.block)))
    return nullptr;
  return &r;
}

bool CounterRowIndex::profiler_kernel(const Kernel& k) const {
  return by_correlation_.count(k.correlation) > 0 && find(k) == nullptr;
}

bool KernelCounters::is_perturbed(std::uint32_t correlation) const {
  return std::binary_search(perturbed.begin(), perturbed.end(), correlation);
}

nlohmann::json to_json(const KernelCounters& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json row = {{"correlation", r.correlation}, {"device", r.device}, {"launch_ns", r.launch_ns}, {"values", r.values}};
    if (shape_known(r.grid) && shape_known(r.block)) {
      row["grid"] = r.grid;
      row["block"] = r.block;
    }
    rows.push_back(std::move(row));
  }
  return {{"metric_set", c.metric_set},
          {"metrics", c.metrics},
          {"metrics_not_offered", c.metrics_not_offered},
          {"passes", c.passes},
          {"replay", to_string(c.replay)},
          {"steps_taken", {c.steps_taken.first, c.steps_taken.second}},
          {"steps_profiled", c.steps_profiled},
          {"perturbed", c.perturbed},
          {"mismatches", c.mismatches},
          {"l2_flushed", c.l2_flushed},
          {"launches_profiled", c.launches_profiled},
          {"graph_launches", c.graph_launches},
          {"captured_launches", c.captured_launches},
          {"ranges_dropped", c.ranges_dropped},
          {"ranges_unmatched", c.ranges_unmatched},
          {"profiling_seconds", c.profiling_seconds},
          {"error", c.error},
          {"rows", rows}};
}

KernelCounters kernel_counters_from_json(const nlohmann::json& j) {
  KernelCounters c;
  try {
    c.metric_set = j.value("metric_set", std::string());
    c.metrics = j.at("metrics").get<std::vector<std::string>>();
    c.metrics_not_offered = j.value("metrics_not_offered", std::vector<std::string>{});
    c.passes = j.value("passes", std::size_t{0});
    c.replay = counter_replay_from_string(j.value("replay", std::string("kernel")));
    if (const auto s = j.find("steps_taken"); s != j.end())
      c.steps_taken = {s->at(0).get<std::uint64_t>(), s->at(1).get<std::uint64_t>()};
    c.steps_profiled = j.value("steps_profiled", std::uint64_t{0});
    c.perturbed = j.value("perturbed", std::vector<std::uint32_t>{});
    std::sort(c.perturbed.begin(), c.perturbed.end());
    c.mismatches = j.value("mismatches", std::vector<std::string>{});
    c.l2_flushed = j.value("l2_flushed", false);
    c.launches_profiled = j.value("launches_profiled", std::uint64_t{0});
    c.graph_launches = j.value("graph_launches", std::uint64_t{0});
    c.captured_launches = j.value("captured_launches", std::uint64_t{0});
    c.ranges_dropped = j.value("ranges_dropped", std::uint64_t{0});
    c.ranges_unmatched = j.value("ranges_unmatched", std::uint64_t{0});
    c.profiling_seconds = j.value("profiling_seconds", 0.0);
    c.error = j.value("error", std::string());
    for (const auto& r : j.at("rows")) {
      CounterRow row{r.at("correlation").get<std::uint32_t>(), r.value("device", std::uint32_t{0}), {},
                     r.value("launch_ns", std::uint64_t{0})};
      if (r.contains("grid") && r.contains("block")) {
        row.grid = r.at("grid").get<std::array<std::int32_t, 3>>();
        row.block = r.at("block").get<std::array<std::int32_t, 3>>();
      }
      for (const auto& v : r.at("values"))  // a value CUPTI could not give is written as null
        row.values.push_back(v.is_null() ? std::nan("") : v.get<double>());
      if (row.values.size() != c.metrics.size())
        throw UsageError(fmt::format("counters: the row of launch {} has {} values for {} metrics", row.correlation,
                                     row.values.size(), c.metrics.size()));
      c.rows.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("counters: malformed ({})", e.what()));
  }
  return c;
}

double LaunchWork::total_flops() const {
  double sum = 0;
  for (const auto& [precision, f] : flops) sum += f;
  return sum;
}

std::string LaunchWork::dominant_precision() const {
  std::string best;
  double most = 0;
  for (const auto& [precision, f] : flops)
    if (f > most) most = f, best = precision;
  return best;
}

LaunchWork launch_work(const KernelCounters& counters, const CounterRow& row) {
  LaunchWork w;
  auto value = [&](const char* metric) {
    const auto col = counters.column(metric);
    if (!col) {
      w.missing.push_back(metric);
      return 0.0;
    }
    const double v = row.values.at(*col);
    return std::isfinite(v) ? v : 0.0;
  };
  w.dram_read_bytes = value(dram_read_metric);
  w.dram_write_bytes = value(dram_write_metric);
  w.l2_bytes = value(l2_metric);
  w.profiled_duration_ns = value(duration_metric);
  w.profiled_sm_hz = value(sm_clock_metric);
  for (std::size_t i = 0; i < counters.metrics.size() && i < row.values.size(); ++i) {
    const auto [per_count, precision] = flops_of_metric(counters.metrics[i]);
    if (!precision.empty() && row.values[i] > 0) w.flops[precision] += per_count * row.values[i];
  }
  return w;
}

LaunchWork total_work(const KernelCounters& counters) {
  LaunchWork total;
  double clock_weight = 0, clock_sum = 0, plain_clock_sum = 0;
  for (const auto& row : counters.rows) {
    const LaunchWork w = launch_work(counters, row);
    total.dram_read_bytes += w.dram_read_bytes;
    total.dram_write_bytes += w.dram_write_bytes;
    total.l2_bytes += w.l2_bytes;
    for (const auto& [precision, f] : w.flops) total.flops[precision] += f;
    total.profiled_duration_ns += w.profiled_duration_ns;
    clock_weight += w.profiled_duration_ns;
    clock_sum += w.profiled_sm_hz * w.profiled_duration_ns;
    plain_clock_sum += w.profiled_sm_hz;
    total.missing = w.missing;  // the same columns in every row
  }
  if (clock_weight > 0)
    total.profiled_sm_hz = clock_sum / clock_weight;
  else if (!counters.rows.empty())
    total.profiled_sm_hz = plain_clock_sum / static_cast<double>(counters.rows.size());
  if (counters.rows.empty())  // still name the columns the counters lack
    total.missing = launch_work(counters, CounterRow{0, 0, std::vector<double>(counters.metrics.size(), 0.0), 0}).missing;
  return total;
}

std::string ceiling_dtype_of(const std::string& precision) {
  if (precision.starts_with("tensor_")) {
    const std::string source = precision.substr(7);
    return source == "fp8" ? "fp8_e4m3" : source;
  }
  return precision;
}

}  // namespace ridge::trace
