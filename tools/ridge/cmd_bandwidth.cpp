// `ridge bandwidth`: the bandwidth-sweep exercise. x + y (and copy, scale, triad, a read-only sum)
// over sizes 2^10..2^28: where launch overhead dominates, where the chip fills, and how much of
// the datasheet bandwidth the largest size reaches.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/sweep.hpp"
#include "sweep_support.hpp"

namespace ridge::cli {

namespace {

// A record is launch-bound when its time is within this factor of an empty launch's.
constexpr double launch_bound_factor = 2.0;

struct BandwidthPlan {
  std::vector<StreamOp> ops;
  std::vector<StreamVariant> variants;
  std::vector<std::int64_t> sizes;
  std::optional<Method> method;  // nullopt: auto
  BandwidthOptions options;
};

// Every option is checked here, before the GPU is touched, so usage errors exit 2 anywhere.
BandwidthPlan plan(const BandwidthOptions& given) {
  BandwidthPlan p;
  p.options = given;
  auto& o = p.options;
  if (o.quick) {
    o.ops = "add";
    o.sizes = "2^10:2^28:4";
    o.samples = std::min(o.samples, 10);
  }
  for (const auto& name : parse_list(o.ops, "--ops")) p.ops.push_back(stream_op_from_string(name));
  for (const auto& name : parse_list(o.variants, "--variants")) p.variants.push_back(stream_variant_from_string(name));
  p.sizes = parse_sizes(o.sizes);
  p.method = parse_method_option(o.method);
  if (o.samples < 1) throw UsageError(fmt::format("--samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  validate_ceilings_mode(o.ceilings);
  const std::int64_t largest = *std::max_element(p.sizes.begin(), p.sizes.end());
  if (largest > (std::int64_t{1} << 34))
    throw UsageError(fmt::format("--sizes reaches {} elements; the three fp32 arrays would need {}; stay at or below 2^34",
                                 largest, format_bytes(12.0 * double(largest))));
  return p;
}

std::string percent(double fraction) { return fraction > 0 ? fmt::format("{:.1f}%", fraction * 100) : "-"; }

std::string knee_text(const std::optional<double>& n) {
  if (!n) return "never";
  return fmt::format("~{}", size_label(static_cast<std::int64_t>(std::llround(*n))));
}

struct Curve {
  StreamOp op;
  StreamVariant variant;
  std::vector<std::size_t> records;  // indices into the result set, by size
};

}  // namespace

ResultSet run_bandwidth(const BandwidthOptions& given, std::FILE* out) {
  const BandwidthPlan p = plan(given);
  const auto& o = p.options;
  require_gpu(o.device);
  const auto wall_start = std::chrono::steady_clock::now();
  ResultSet set = new_result_set(o.device);
  const DeviceDescription device = *set.context.device;
  const auto datasheet = datasheet_for(device);
  const double datasheet_bw = datasheet ? datasheet->ceilings.memory_bytes_per_s : 0;
  const double fp32_peak = datasheet && datasheet->peak(DType::fp32) ? *datasheet->peak(DType::fp32)
                                                                     : fastest_known_peak_flops(DType::fp32);
  const double l2 = static_cast<double>(device.l2_bytes);

  fmt::print(out, "ridge bandwidth on {} (L2 {}{})\n", device.name, format_bytes(l2),
             datasheet ? fmt::format(", datasheet {} HBM", format_bytes_per_s(datasheet_bw)) : ", not in the catalog");
  const auto measured = measured_ceilings_for(o.device, device, o.ceilings, out);
  const double measured_bw = measured ? measured->ceilings.memory_bytes_per_s : 0;
  if (measured)
    fmt::print(out, "measured HBM ceiling {} ({}, {})\n", format_bytes_per_s(measured_bw), measured->hbm_kernel,
               measured->measured_at_utc);
  const double reference_bw = measured_bw > 0 ? measured_bw : datasheet_bw;  // for knees and estimates
  fmt::print(out, "fp32, random inputs, bytes = reads + writes; {}; each kernel's output checked before timing\n",
             o.cold ? "cold: L2 flushed before each sample (one call per sample)" : "hot: L2 not flushed");
  if (!p.method)
    fmt::print(out, "timing: --method auto = CUDA graph replay (launch-free: the host's launch latency is not in the\n"
                    "number) for ops under 1 ms, CUDA events above; empty launch timed the same way at each point\n");
  else
    fmt::print(out, "timing: {}\n", method_label(*p.method, false));

  const std::int64_t capacity = *std::max_element(p.sizes.begin(), p.sizes.end());
  progress(fmt::format("bandwidth: allocating and filling {} of buffers", format_bytes(12.0 * double(capacity))));
  StreamBench bench(capacity);
  progress_done();

  std::vector<std::string> op_names, variant_names;
  for (auto op : p.ops) op_names.push_back(to_string(op));
  for (auto v : p.variants) variant_names.push_back(to_string(v));
  const auto points = sweep_points(op_names, variant_names, {"fp32"}, p.sizes);

  EmptyLaunchFloor floor;
  const CudaOptions base{.warmup = o.warmup, .samples = o.samples, .repeats = o.cold ? 1 : 0, .flush_l2 = o.cold};

  fmt::print(out, "\n{:<6} {:<12} {:>6} {:>9} {:>10} {:>10} {:>7} {:>7} {:>9}  {}\n", "op", "variant", "n", "bytes",
             "time", "GB/s", "%meas", "%sheet", "empty", "notes");
  auto measure_point = [&](const SweepPoint& pt) {
    const StreamOp op = stream_op_from_string(pt.op);
    const StreamVariant variant = stream_variant_from_string(pt.variant);
    const std::int64_t n = pt.size;
    const StreamCheck check = bench.verify(op, variant, n);
    if (!check.passed)
      throw VerificationError(fmt::format("bandwidth {} {} at n={} gave wrong results: {}", pt.op, pt.variant, n,
                                          check.summary()));
    const double bytes = stream_bytes(op, n);
    const double working_set = stream_working_set_bytes(op, n);
    const double estimated_ms = reference_bw > 0 ? bytes / reference_bw * 1e3 : bytes / 2e12 * 1e3;
    const Method method = p.method ? *p.method : auto_method(estimated_ms);
    auto fn = [&](cuda_stream s) { bench.run(op, variant, n, s); };
    const ClockReading start = read_clocks(o.device);
    const Measurement m = measure(method, fn, base);
    const double empty_ms = floor.ms(method, m.repeats_per_sample, base);
    nlohmann::json params{{"n", n},          {"elements", n},         {"op", pt.op},
                          {"variant", pt.variant}, {"working_set_bytes", working_set}, {"cold", o.cold}};
    Record r = to_record(m, "bandwidth." + pt.op, "fp32", params, bytes, stream_flops(op, n));
    r.clocks_start = start;
    r.clocks_end = read_clocks(o.device);
    r.verification = "passed";
    const double rate = r.bytes_per_s();
    const bool cache_resident = !o.cold && l2 > 0 && working_set <= l2;
    const bool launch_bound = r.summary.median <= launch_bound_factor * empty_ms;
    r.extra["check"] = check.summary();
    r.extra["variant"] = describe(variant);
    r.extra["method_choice"] = p.method ? "user" : "auto";
    r.extra["gb_per_s"] = rate / 1e9;
    if (measured_bw > 0) r.extra["fraction_of_measured_hbm"] = rate / measured_bw;
    if (datasheet_bw > 0) r.extra["fraction_of_datasheet"] = rate / datasheet_bw;
    r.extra["l2_bytes"] = l2;
    r.extra["cache_resident"] = cache_resident;
    r.extra["empty_launch_ms"] = empty_ms;
    r.extra["launch_bound"] = launch_bound;
    if (variant == StreamVariant::grid_stride) r.extra["grid_blocks"] = bench.grid_stride_blocks(op);
    // The roofline floor holds for HBM traffic; a hot, cache-resident working set may beat it.
    std::optional<DeviceCeilings> roof;
    const double floor_bw = std::max(datasheet_bw, measured_bw);
    if (!cache_resident && floor_bw > 0)
      roof = DeviceCeilings{.source_text = datasheet ? datasheet->ceilings.source_text : "measured",
                            .memory_bytes_per_s = floor_bw,
                            .peak_flops_per_s = {{"fp32", fp32_peak}}};
    add_plausibility_warnings(r, roof, l2);
    return r;
  };
  auto print_row = [&](const Record& r) {
    std::string notes;
    if (r.extra.value("launch_bound", false)) notes += "launch-bound ";
    if (r.extra.value("cache_resident", false)) notes += "L2-resident ";
    for (const auto& w : r.warnings)
      if (w.rfind("impossible", 0) == 0 || w.rfind("high spread", 0) == 0 || w.rfind("clocks moved", 0) == 0)
        notes += w.substr(0, w.find(':')) + " ";
    fmt::print(out, "{:<6} {:<12} {:>6} {:>9} {:>10} {:>10.1f} {:>7} {:>7} {:>9}  {}\n", r.params["op"].get<std::string>(),
               r.params["variant"].get<std::string>(), size_label(r.params["n"].get<std::int64_t>()),
               format_bytes(r.bytes), format_ms(r.summary.median), r.bytes_per_s() / 1e9,
               percent(r.extra.value("fraction_of_measured_hbm", 0.0)), percent(r.extra.value("fraction_of_datasheet", 0.0)),
               format_ms(r.extra["empty_launch_ms"].get<double>()), notes);
    std::fflush(out);
  };
  set.records = run_sweep(points, measure_point, print_row, terminal_progress("bandwidth"));

  // ---- the answers, in words ----------------------------------------------------------------
  std::vector<Curve> curves;
  for (std::size_t i = 0; i < set.records.size(); ++i) {
    const auto& r = set.records[i];
    const StreamOp op = stream_op_from_string(r.params["op"].get<std::string>());
    const StreamVariant v = stream_variant_from_string(r.params["variant"].get<std::string>());
    auto it = std::find_if(curves.begin(), curves.end(), [&](const Curve& c) { return c.op == op && c.variant == v; });
    if (it == curves.end()) it = curves.insert(curves.end(), Curve{op, v, {}});
    it->records.push_back(i);
  }
  const std::string ceiling_name = measured_bw > 0 ? "measured HBM" : "datasheet";
  fmt::print(out, "\n{:<6} {:<12} {:>16} {:>11} {:>8} {:>8} {:>10} {:>10}\n", "op", "variant", "launch-bound to",
             "largest", "%sheet", "%meas", "70% knee", "90% knee");
  std::map<StreamOp, std::size_t> best_at_largest;  // op -> record index
  for (auto& c : curves) {
    std::sort(c.records.begin(), c.records.end(), [&](std::size_t a, std::size_t b) {
      return set.records[a].params["n"].get<std::int64_t>() < set.records[b].params["n"].get<std::int64_t>();
    });
    std::optional<std::int64_t> launch_bound_to;
    for (std::size_t i : c.records) {
      if (!set.records[i].extra.value("launch_bound", false)) break;
      launch_bound_to = set.records[i].params["n"].get<std::int64_t>();
    }
    std::vector<RatePoint> rates;
    for (std::size_t i : c.records)
      rates.push_back({set.records[i].params["n"].get<double>(), set.records[i].bytes_per_s()});
    std::vector<Knee> knees;
    if (reference_bw > 0) knees = find_knees(rates, reference_bw);
    const std::size_t last = c.records.back();
    for (std::size_t i : c.records) {
      auto& extra = set.records[i].extra;
      extra["launch_bound_up_to_elements"] = launch_bound_to ? nlohmann::json(*launch_bound_to) : nlohmann::json(nullptr);
      for (const auto& k : knees)
        extra[fmt::format("knee_{:.0f}_elements", k.fraction * 100)] = k.size ? nlohmann::json(*k.size) : nlohmann::json(nullptr);
      if (!knees.empty()) extra["knee_ceiling"] = ceiling_name;
    }
    const Record& top = set.records[last];
    auto best = best_at_largest.find(c.op);
    if (best == best_at_largest.end() || top.bytes_per_s() > set.records[best->second].bytes_per_s())
      best_at_largest[c.op] = last;
    fmt::print(out, "{:<6} {:<12} {:>16} {:>11} {:>8} {:>8} {:>10} {:>10}\n", to_string(c.op), to_string(c.variant),
               launch_bound_to ? size_label(*launch_bound_to) : "none",
               format_bytes_per_s(top.bytes_per_s()), percent(top.extra.value("fraction_of_datasheet", 0.0)),
               percent(top.extra.value("fraction_of_measured_hbm", 0.0)),
               knees.empty() ? "-" : knee_text(knees[0].size), knees.size() > 1 ? knee_text(knees[1].size) : "-");
  }

  fmt::print(out, "\n");
  for (const auto& [op, index] : best_at_largest) {
    const Record& top = set.records[index];
    const auto n = top.params["n"].get<std::int64_t>();
    const std::string variant = top.params["variant"].get<std::string>();
    const auto& curve = *std::find_if(curves.begin(), curves.end(), [&](const Curve& c) {
      return c.op == op && to_string(c.variant) == variant;
    });
    const auto& extra = top.extra;
    std::string line = fmt::format("{}: at {} elements the best variant, {}, moves {}", to_string(op), size_label(n),
                                   variant, format_bytes_per_s(top.bytes_per_s()));
    if (datasheet_bw > 0)
      line += fmt::format(", {} of the {} datasheet", percent(top.bytes_per_s() / datasheet_bw), format_bytes_per_s(datasheet_bw));
    if (measured_bw > 0) line += fmt::format(" ({} of measured)", percent(top.bytes_per_s() / measured_bw));
    if (extra.value("cache_resident", false)) line += "; its working set fits in the L2, so this is a cache figure";
    fmt::print(out, "{}.\n", line);
    const Record& smallest = set.records[curve.records.front()];
    if (!extra["launch_bound_up_to_elements"].is_null())
      fmt::print(out,
                 "  Launch overhead dominates up to {} elements: those calls take within {:.0f}x of an empty launch "
                 "({} at {}), so the kernel's own work is hidden behind launching it.\n",
                 size_label(extra["launch_bound_up_to_elements"].get<std::int64_t>()), launch_bound_factor,
                 format_ms(smallest.extra["empty_launch_ms"].get<double>()), size_label(smallest.params["n"].get<std::int64_t>()));
    else
      fmt::print(out, "  No size is launch-bound: even {} elements take more than {:.0f}x an empty launch ({}).\n",
                 size_label(smallest.params["n"].get<std::int64_t>()), launch_bound_factor,
                 format_ms(smallest.extra["empty_launch_ms"].get<double>()));
    for (int pct : {70, 90}) {
      const auto key = fmt::format("knee_{}_elements", pct);
      if (!extra.contains(key)) continue;
      if (extra[key].is_null()) {
        fmt::print(out, "  It never reaches {}% of the {} bandwidth in this sweep.\n", pct, ceiling_name);
        continue;
      }
      const double knee = extra[key].get<double>();
      const bool in_cache = !o.cold && l2 > 0 && stream_working_set_bytes(op, std::max<std::int64_t>(1, std::llround(knee))) <= l2;
      fmt::print(out, "  It reaches {}% of the {} bandwidth from about {} elements ({} working set){}.\n", pct,
                 ceiling_name, knee_text(knee), format_bytes(stream_working_set_bytes(op, std::max<std::int64_t>(1, std::llround(knee)))),
                 in_cache ? ", inside the L2: rerun with --cold for the HBM knee" : "");
    }
  }
  if (reference_bw <= 0)
    fmt::print(out, "No bandwidth ceiling known for this GPU (not in the catalog, none measured): no knees.\n");

  if (!o.svg.empty()) {
    Plot plot;
    plot.title = fmt::format("Achieved bandwidth vs size on {} (fp32, {})", device.name, o.cold ? "cold L2" : "hot L2");
    plot.x_label = "elements per array";
    plot.y_label = "GB/s (reads + writes)";
    double x_lo = 1e300, x_hi = 0, y_hi = 0;
    for (const auto& c : curves) {
      PlotSeries s;
      s.name = p.ops.size() > 1 ? to_string(c.op) + " " + to_string(c.variant) : to_string(c.variant);
      for (std::size_t i : c.records) {
        const auto& r = set.records[i];
        const double x = r.params["n"].get<double>(), y = r.bytes_per_s() / 1e9;
        s.points.push_back({x, y, fmt::format("{} {}: {:.0f} GB/s", s.name, size_label(std::int64_t(x)), y)});
        x_lo = std::min(x_lo, x);
        x_hi = std::max(x_hi, x);
        y_hi = std::max(y_hi, y);
      }
      plot.series.push_back(std::move(s));
    }
    auto hline = [&](const std::string& name, double gbps, const std::string& color) {
      PlotSeries s{name, {{x_lo, gbps, ""}, {x_hi, gbps, name}}, true, false, true, color};
      plot.series.push_back(std::move(s));
    };
    if (datasheet_bw > 0) hline(fmt::format("datasheet {:.0f} GB/s", datasheet_bw / 1e9), datasheet_bw / 1e9, "#888888");
    if (measured_bw > 0) hline(fmt::format("measured HBM {:.0f} GB/s", measured_bw / 1e9), measured_bw / 1e9, "#444444");
    if (l2 > 0) {
      const double n_l2 = l2 / stream_bytes_per_element(p.ops.front());
      if (n_l2 > x_lo && n_l2 < x_hi) {
        double y_lo = 1e300;
        for (const auto& r : set.records) y_lo = std::min(y_lo, r.bytes_per_s() / 1e9);
        plot.series.push_back(PlotSeries{fmt::format("{} working set = L2", to_string(p.ops.front())),
                                         {{n_l2, y_lo, ""}, {n_l2, std::max(y_hi, datasheet_bw / 1e9), "L2"}},
                                         true, false, true, "#bbbbbb"});
      }
    }
    write_plot(o.svg, plot);
    fmt::print(out, "plot written to {}\n", o.svg);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  fmt::print(out, "{} measurements in {:.1f} s\n", set.records.size(), seconds);
  finish_result_set(set, o.device);
  return set;
}

namespace {

struct BandwidthCommand {
  BandwidthOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "bandwidth", "x + y, copy, scale, triad and a read-only sum over sizes: GB/s, % of ceilings, where launches dominate",
    30, [](CLI::App& app) {
      auto c = std::make_shared<BandwidthCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--ops", o.ops, "comma list of add (c=a+b, 12 B/elem), copy (8 B), scale (8 B), triad (12 B), read (sum, 4 B)")
          ->default_val(o.ops);
      app.add_option("--variants", o.variants, "comma list of kernel variants: scalar, vec4, grid_stride")
          ->default_val(o.variants);
      app.add_option("--sizes", o.sizes,
                     "elements per array: a list (1024,4096), powers (2^20) or ranges START:END[:STEP]; a bare STEP or "
                     "xF multiplies, +D adds (2^10:2^28:2 = every power of two)")
          ->default_val(o.sizes);
      app.add_option("--method", o.method,
                     "timing: auto (graph replay for ops under 1 ms, events above), events, spin, graph, wall")
          ->default_val(o.method);
      app.add_flag("--cold", o.cold, "flush the L2 before each sample (one call per sample); default hot");
      app.add_option("--samples", o.samples, "timed samples per point (median reported)")->default_val(o.samples);
      app.add_option("--warmup", o.warmup, "untimed calls before sampling")->default_val(o.warmup);
      app.add_option("--ceilings", o.ceilings,
                     "measured ceilings: auto (use the cached ones, never measure), measure (measure if not cached, "
                     "tens of seconds), refresh, none")
          ->default_val(o.ceilings);
      app.add_option("--svg", o.svg, "write a plot of GB/s vs size (log axes) per variant to FILE")->type_name("FILE");
      app.add_flag("--quick", o.quick, "short run: add only, 2^10..2^28 every 4x, 10 samples");
      c->exports.add_to(app);
      return run_and_export(c, run_bandwidth);
    }});

}  // namespace
}  // namespace ridge::cli
