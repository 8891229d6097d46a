// The CPU side of `ridge collectives`: names, nccl-tests' bandwidth definitions, buffer shapes,
// the fill and its expected outputs, the options, combining ranks, curves, knees and the plot.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "collectives/fill_formula.hpp"
#include "ridge/collectives.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"

namespace ridge {

namespace {

struct OpName {
  CollectiveOp op;
  const char* name;
  std::vector<const char*> aliases;
};

const std::vector<OpName>& op_names() {
  static const std::vector<OpName> names = {
      {CollectiveOp::all_reduce, "all_reduce", {"allreduce", "all-reduce"}},
      {CollectiveOp::all_gather, "all_gather", {"allgather", "all-gather"}},
      {CollectiveOp::reduce_scatter, "reduce_scatter", {"reducescatter", "reduce-scatter"}},
      {CollectiveOp::broadcast, "broadcast", {"bcast"}},
      {CollectiveOp::reduce, "reduce", {}},
      {CollectiveOp::alltoall, "alltoall", {"all_to_all", "all-to-all"}},
      {CollectiveOp::send_recv, "send_recv", {"sendrecv", "send-recv", "p2p"}},
  };
  return names;
}

bool splits_buffer(CollectiveOp op) {
  return op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter || op == CollectiveOp::alltoall;
}

}  // namespace

std::string to_string(CollectiveOp op) {
  for (const auto& n : op_names())
    if (n.op == op) return n.name;
  return "unknown";
}

CollectiveOp collective_op_from_string(const std::string& name) {
  for (const auto& n : op_names()) {
    if (name == n.name) return n.op;
    for (const char* alias : n.aliases)
      if (name == alias) return n.op;
  }
  throw UsageError(fmt::format("unknown collective '{}'; known: all_reduce, all_gather, reduce_scatter, broadcast, "
                               "reduce, alltoall, send_recv",
                               name));
}

const std::vector<CollectiveOp>& all_collective_ops() {
  static const std::vector<CollectiveOp> ops = {CollectiveOp::all_reduce, CollectiveOp::all_gather,
                                                CollectiveOp::reduce_scatter, CollectiveOp::broadcast,
                                                CollectiveOp::reduce, CollectiveOp::alltoall,
                                                CollectiveOp::send_recv};
  return ops;
}

double bus_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw UsageError(fmt::format("a collective needs at least 1 rank, got {}", ranks));
  const double n = ranks;
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::alltoall:
      return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv:
      return 1.0;
  }
  return 1.0;
}

std::string bus_factor_formula(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "2(n-1)/n";
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::alltoall:
      return "(n-1)/n";
    default:
      return "1";
  }
}

CollectiveRates collective_rates(CollectiveOp op, double bytes, double seconds, int ranks) {
  if (!(seconds > 0) || !std::isfinite(seconds))
    throw UsageError(fmt::format("a collective's time must be > 0 s, got {}", seconds));
  CollectiveRates r;
  r.algbw_bytes_per_s = bytes / seconds;
  r.busbw_bytes_per_s = r.algbw_bytes_per_s * bus_factor(op, ranks);
  return r;
}

std::optional<CollectiveShape> collective_shape(CollectiveOp op, std::int64_t bytes, DType dtype, int ranks) {
  if (ranks < 1) throw UsageError(fmt::format("a collective needs at least 1 rank, got {}", ranks));
  if (bytes < 1) throw UsageError(fmt::format("a collective's size must be > 0 bytes, got {}", bytes));
  const auto element = static_cast<std::int64_t>(bytes_per_element(dtype));
  std::int64_t count = bytes / element;
  CollectiveShape s;
  if (splits_buffer(op)) {
    s.chunk = count / ranks;
    if (s.chunk < 1) return std::nullopt;
    count = s.chunk * ranks;
    if (op == CollectiveOp::all_gather) {
      s.send_count = s.chunk;
      s.recv_count = count;
    } else if (op == CollectiveOp::reduce_scatter) {
      s.send_count = count;
      s.recv_count = s.chunk;
    } else {
      s.send_count = s.recv_count = count;
    }
  } else {
    if (count < 1) return std::nullopt;
    s.chunk = s.send_count = s.recv_count = count;
  }
  s.bytes = static_cast<double>(count * element);
  return s;
}

const std::vector<DType>& collective_dtypes() {
  static const std::vector<DType> dtypes{DType::fp32, DType::fp16, DType::bf16, DType::fp64};
  return dtypes;
}

double collective_fill_value(int rank, std::int64_t index) { return detail::collective_formula::fill(rank, index); }

std::optional<double> collective_expected_value(CollectiveOp op, int rank, int ranks, std::int64_t chunk,
                                                std::int64_t index) {
  if (ranks < 1 || rank < 0 || rank >= ranks || chunk < 1 || index < 0)
    throw UsageError(fmt::format("collective_expected_value: rank {} of {}, chunk {}, index {} is out of range", rank,
                                 ranks, chunk, index));
  bool defined = false;
  const double v = detail::collective_formula::expected(static_cast<int>(op), rank, ranks, chunk, index, &defined);
  if (!defined) return std::nullopt;
  return v;
}

std::string CollectiveCheck::summary() const {
  if (passed) return fmt::format("checked {} elements: ok", checked);
  return fmt::format("{} of {} elements wrong; the first at [{}] should hold {}", mismatches, checked,
                     first_bad_index, first_bad_expected);
}

std::string to_string(Placement placement) {
  return placement == Placement::in_place ? "in_place" : "out_of_place";
}

Placement placement_from_string(const std::string& name) {
  if (name == "out" || name == "out_of_place" || name == "out-of-place") return Placement::out_of_place;
  if (name == "in" || name == "in_place" || name == "in-place") return Placement::in_place;
  throw UsageError(fmt::format("'{}' is neither 'out' (out-of-place) nor 'in' (in-place)", name));
}

CollectivesPlan plan_collectives(const CollectivesOptions& options) {
  CollectivesPlan p;
  p.options = options;
  auto& o = p.options;
  if (o.quick) {
    o.ops = {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter};
    o.sizes = geometric_sizes(1 << 10, 1 << 28, 16);
    o.samples = std::min(o.samples, 10);
  }
  o.ops = without_repeats(o.ops);
  o.sizes = without_repeats(o.sizes);
  o.dtypes = without_repeats(o.dtypes);
  o.placements = without_repeats(o.placements);
  if (o.ops.empty()) throw UsageError("ops: the list is empty; give at least one collective, e.g. all_reduce");
  validate_sizes(o.sizes, "sizes");
  constexpr std::int64_t largest = 8LL << 30;
  for (auto s : o.sizes)
    if (s > largest) throw UsageError(fmt::format("sizes: {} bytes is above the largest size, 8 GiB", s));
  if (o.dtypes.empty()) throw UsageError("dtypes: the list is empty; give at least one of fp32, fp16, bf16, fp64");
  for (DType d : o.dtypes)
    if (std::find(collective_dtypes().begin(), collective_dtypes().end(), d) == collective_dtypes().end())
      throw UsageError(fmt::format("dtypes: collectives run fp32, fp16, bf16 or fp64, not '{}'", to_string(d)));
  if (o.placements.empty()) throw UsageError("placements: the list is empty; give out-of-place, in-place or both");
  if (o.method && *o.method != Method::cuda_events && *o.method != Method::graph_replay)
    throw UsageError(fmt::format("method: collectives are timed with events or graph (or automatically), not '{}'",
                                 to_string(*o.method)));
  if (o.samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", o.warmup));
  if (o.gpus < 0) throw UsageError(fmt::format("gpus must be >= 0 (0 = every visible GPU), got {}", o.gpus));
  if (o.launcher != "auto" && o.launcher != "threads" && o.launcher != "mpi" && o.launcher != "env")
    throw UsageError(fmt::format("launcher: '{}' is not one of auto, threads, mpi, env", o.launcher));
  return p;
}

nlohmann::json to_json(const RankInfo& info) {
  return {{"rank", info.rank},
          {"local_rank", info.local_rank},
          {"hostname", info.hostname},
          {"device", to_json(info.device)},
          {"clocks_start", to_json(info.clocks_start)},
          {"clocks_end", to_json(info.clocks_end)}};
}

RankInfo rank_info_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("a rank's description is not a JSON object");
  RankInfo info;
  info.rank = j.value("rank", 0);
  info.local_rank = j.value("local_rank", 0);
  info.hostname = j.value("hostname", std::string());
  if (j.contains("device")) info.device = device_from_json(j["device"]);
  if (j.contains("clocks_start")) info.clocks_start = clock_reading_from_json(j["clocks_start"], "clocks_start");
  if (j.contains("clocks_end")) info.clocks_end = clock_reading_from_json(j["clocks_end"], "clocks_end");
  return info;
}

nlohmann::json collective_params(CollectiveOp op, const CollectiveShape& shape, Placement placement, int ranks) {
  return {{param_key::op, to_string(op)},
          {param_key::bytes, static_cast<std::int64_t>(shape.bytes)},
          {param_key::send_count, shape.send_count},
          {param_key::recv_count, shape.recv_count},
          {param_key::placement, to_string(placement)},
          {param_key::ranks, ranks}};
}

Record combine_rank_records(const std::vector<Record>& per_rank, CollectiveOp op, int ranks) {
  if (per_rank.empty()) throw Error("combine_rank_records: no rank's record to combine");
  Record out = per_rank.front();
  const std::size_t samples = out.samples_ms.size();
  std::vector<double> medians;
  for (const auto& r : per_rank) {
    if (r.samples_ms.size() != samples)
      throw Error(fmt::format("ranks measured {} and {} samples of {}: every rank must take the same samples",
                              samples, r.samples_ms.size(), out.name));
    medians.push_back(r.summary.median);
  }
  for (std::size_t i = 0; i < samples; ++i) {
    double sum = 0;
    for (const auto& r : per_rank) sum += r.samples_ms[i];
    out.samples_ms[i] = sum / static_cast<double>(per_rank.size());
  }
  for (std::size_t k = 1; k < per_rank.size(); ++k) {
    for (const auto& w : per_rank[k].warnings) out.warnings.push_back(fmt::format("rank {}: {}", k, w));
    if (per_rank[k].verification != "passed") out.verification = per_rank[k].verification;
  }
  finalize(out);
  const CollectiveRates rates = collective_rates(op, out.bytes, out.median_s(), ranks);
  extra_key::rank_median_ms.set(out, medians);
  extra_key::time_over_ranks.set(out, "mean of the ranks' samples, as nccl-tests averages");
  extra_key::algbw_bytes_per_s.set(out, rates.algbw_bytes_per_s);
  extra_key::busbw_bytes_per_s.set(out, rates.busbw_bytes_per_s);
  extra_key::bus_factor.set(out, bus_factor(op, ranks));
  extra_key::bus_factor_formula.set(out, bus_factor_formula(op));
  return out;
}

LinkCeilings link_ceilings(const std::optional<CatalogEntry>& entry) {
  LinkCeilings c;
  if (!entry) return c;
  // Datasheets give both directions together; busbw is one direction's rate.
  c.nvlink_bytes_per_s = entry->nvlink_bytes_per_s / 2;
  c.pcie_bytes_per_s = entry->pcie_bytes_per_s / 2;
  return c;
}

std::vector<std::string> collective_definitions(const std::vector<CollectiveOp>& ops, int ranks) {
  std::vector<std::string> lines;
  lines.push_back("algbw = size / time; busbw = algbw x factor (nccl-tests' definitions), n = " +
                  std::to_string(ranks) + " ranks:");
  for (auto op : ops)
    lines.push_back(fmt::format("  {:<15} factor {:<9} = {:.3g}", to_string(op), bus_factor_formula(op),
                                bus_factor(op, ranks)));
  const bool zero = std::any_of(ops.begin(), ops.end(), [&](CollectiveOp op) { return bus_factor(op, ranks) == 0; });
  if (zero)
    lines.push_back("at n = 1 the factor of all_reduce, all_gather, reduce_scatter and alltoall is 0: no byte crosses "
                    "a link, busbw is 0 by definition (nccl-tests prints 0 too); compare time and algbw there");
  return lines;
}

void analyze_collectives(CollectivesRun& run) {
  run.curves.clear();
  run.findings.clear();
  std::map<std::tuple<int, int, int>, std::size_t> curve_of;
  for (std::size_t i = 0; i < run.records.size(); ++i) {
    const Record& r = run.records[i];
    const CollectiveOp op = collective_op_from_string(r.params.value(param_key::op, std::string()));
    const DType dtype = dtype_of(r);
    const Placement placement = r.params.value(param_key::placement, std::string()) == "in_place"
                                    ? Placement::in_place
                                    : Placement::out_of_place;
    const auto key = std::make_tuple(static_cast<int>(op), static_cast<int>(dtype), static_cast<int>(placement));
    auto it = curve_of.find(key);
    if (it == curve_of.end()) {
      it = curve_of.emplace(key, run.curves.size()).first;
      CollectiveCurve c;
      c.op = op;
      c.dtype = dtype;
      c.placement = placement;
      run.curves.push_back(c);
    }
    run.curves[it->second].records.push_back(i);
  }
  const LinkCeilings links = link_ceilings(run.datasheet);
  Plot& plot = run.plot;
  plot = Plot{};
  bool any_bus = false, any_alg = false;
  for (auto& c : run.curves) {
    std::sort(c.records.begin(), c.records.end(),
              [&](std::size_t a, std::size_t b) { return run.records[a].bytes < run.records[b].bytes; });
    c.knees_on_algbw = bus_factor(c.op, run.ranks) == 0;
    std::vector<RatePoint> points;
    PlotSeries series;
    series.name = fmt::format("{} {} {}", to_string(c.op), to_string(c.dtype),
                              c.placement == Placement::in_place ? "in-place" : "out-of-place");
    for (auto idx : c.records) {
      const Record& r = run.records[idx];
      const double alg = extra_key::algbw_bytes_per_s.get(r);
      const double bus = extra_key::busbw_bytes_per_s.get(r);
      c.peak_algbw_bytes_per_s = std::max(c.peak_algbw_bytes_per_s, alg);
      c.peak_busbw_bytes_per_s = std::max(c.peak_busbw_bytes_per_s, bus);
      const double rate = c.knees_on_algbw ? alg : bus;
      points.push_back({r.bytes, rate});
      if (rate > 0) series.points.push_back({r.bytes, rate / 1e9, {}});
    }
    const double peak = c.knees_on_algbw ? c.peak_algbw_bytes_per_s : c.peak_busbw_bytes_per_s;
    if (peak > 0) c.knees = find_knees(points, peak);
    (c.knees_on_algbw ? any_alg : any_bus) = true;
    if (!series.points.empty()) plot.series.push_back(std::move(series));
    auto knee_text = [&](std::size_t k) {
      if (k >= c.knees.size() || !c.knees[k].size) return std::string("never");
      return format_bytes(*c.knees[k].size);
    };
    run.findings.push_back(
        {fmt::format("{} {} {}: peak busbw {}, algbw {}; {} reaches 70% of its peak at {} and 90% at {}",
                     to_string(c.op), to_string(c.dtype), to_string(c.placement),
                     format_bytes_per_s(c.peak_busbw_bytes_per_s), format_bytes_per_s(c.peak_algbw_bytes_per_s),
                     c.knees_on_algbw ? "algbw (busbw is 0 at n = 1)" : "busbw", knee_text(0), knee_text(1)),
         0});
  }
  plot.title = fmt::format("NCCL collectives, {} rank{}", run.ranks, run.ranks == 1 ? "" : "s");
  plot.x_label = "size (bytes)";
  plot.y_label = any_alg && !any_bus ? "algbw (GB/s; busbw is 0 at n = 1)"
                 : any_alg          ? "busbw (GB/s); algbw where busbw is 0 by definition"
                                    : "busbw (GB/s)";
  if (!plot.series.empty() && !run.records.empty()) {
    double lo = run.records.front().bytes, hi = lo;
    for (const auto& r : run.records) {
      lo = std::min(lo, r.bytes);
      hi = std::max(hi, r.bytes);
    }
    auto ceiling = [&](const std::string& name, double bytes_per_s) {
      if (bytes_per_s <= 0) return;
      PlotSeries s = line_series(name, {{lo, bytes_per_s / 1e9, {}}, {hi, bytes_per_s / 1e9, {}}}, true);
      s.end_label = fmt::format("{} {:.0f} GB/s per direction", name, bytes_per_s / 1e9);
      plot.series.push_back(std::move(s));
    };
    ceiling("NVLink", links.nvlink_bytes_per_s);
    ceiling("PCIe", links.pcie_bytes_per_s);
  }
  if (run.datasheet && links.nvlink_bytes_per_s <= 0 && links.pcie_bytes_per_s <= 0)
    run.findings.push_back({fmt::format("the catalog gives no link bandwidth for {}: no ceiling drawn", run.datasheet->name), 0});
}

}  // namespace ridge
