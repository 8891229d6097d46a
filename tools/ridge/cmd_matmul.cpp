// `ridge matmul`: the speed-at-a-size exercise. GEMM TFLOP/s over sizes, each placed on the
// device's roofline, and the answer to "at what size do you reach 70% of peak?".
#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gemm.hpp"
#include "ridge/roofline.hpp"
#include "ridge/sweep.hpp"
#include "sweep_support.hpp"

namespace ridge::cli {

namespace {

struct MatmulPlan {
  std::vector<DType> dtypes;
  std::vector<SweepPoint> points;
  bool square = true;
  std::optional<Method> method;
  MatmulOptions options;
};

MatmulPlan plan(const MatmulOptions& given) {
  MatmulPlan p;
  p.options = given;
  auto& o = p.options;
  if (o.quick) {
    o.sizes = "512:8192:x4";
    o.samples = std::min(o.samples, 10);
  }
  std::vector<std::string> dtype_names;
  for (const auto& name : parse_list(o.dtypes, "--dtypes")) {
    p.dtypes.push_back(dtype_from_string(name));
    dtype_names.push_back(to_string(p.dtypes.back()));
  }
  p.method = parse_method_option(o.method);
  if (o.samples < 1) throw UsageError(fmt::format("--samples must be >= 1, got {}", o.samples));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  if (o.tune_candidates < 1) throw UsageError(fmt::format("--tune must be >= 1, got {}", o.tune_candidates));
  validate_ceilings_mode(o.ceilings);
  if (!o.shapes.empty()) {
    p.square = false;
    const auto shapes = parse_shapes(o.shapes);
    for (const auto& dtype : dtype_names)
      for (const auto& s : shapes) {
        SweepPoint pt;
        pt.dtype = dtype;
        pt.shape = s;
        pt.size = (s.m == s.n && s.n == s.k) ? s.n : 0;
        pt.index = p.points.size();
        p.points.push_back(pt);
      }
  } else {
    p.points = sweep_points({}, {}, dtype_names, parse_sizes(o.sizes));
  }
  for (const auto& pt : p.points)
    if (pt.shape.m > 65536 || pt.shape.n > 65536 || pt.shape.k > 65536)
      throw UsageError(fmt::format("GEMM {}x{}x{} is larger than ridge measures (each side <= 65536)", pt.shape.m,
                                   pt.shape.n, pt.shape.k));
  return p;
}

std::string percent(double fraction) { return fraction > 0 ? fmt::format("{:.1f}%", fraction * 100) : "-"; }

std::string shape_label(const nlohmann::json& params) {
  const auto m = params["m"].get<std::int64_t>(), n = params["n"].get<std::int64_t>(), k = params["k"].get<std::int64_t>();
  return m == n && n == k ? fmt::format("{}", n) : fmt::format("{}x{}x{}", m, n, k);
}

struct Roof {
  double peak = 0, bandwidth = 0;
  bool known() const { return peak > 0 && bandwidth > 0; }
};

}  // namespace

ResultSet run_matmul(const MatmulOptions& given, std::FILE* out) {
  const MatmulPlan p = plan(given);
  const auto& o = p.options;
  require_gpu(o.device);
  const auto wall_start = std::chrono::steady_clock::now();
  ResultSet set = new_result_set(o.device);
  const DeviceDescription device = *set.context.device;
  const auto datasheet = datasheet_for(device);
  const double l2 = static_cast<double>(device.l2_bytes);
  fmt::print(out, "ridge matmul on {} (cuBLASLt, random inputs in [-1, 1], C = A @ B, {})\n", device.name,
             o.cold ? "cold: L2 flushed before each sample" : "hot: L2 not flushed");
  const auto measured = measured_ceilings_for(o.device, device, o.ceilings, out);

  auto datasheet_roof = [&](DType d) {
    Roof r;
    if (datasheet) {
      r.bandwidth = datasheet->ceilings.memory_bytes_per_s;
      r.peak = datasheet->peak(d).value_or(0);
    }
    return r;
  };
  auto measured_roof = [&](DType d) {
    Roof r;
    if (measured) {
      r.bandwidth = measured->ceilings.memory_bytes_per_s;
      r.peak = measured->ceilings.peak_flops(to_string(d));
    }
    return r;
  };
  for (DType d : p.dtypes) {
    const Roof ds = datasheet_roof(d), me = measured_roof(d);
    fmt::print(out, "  {}: datasheet {}{}\n", to_string(d),
               ds.known() ? fmt::format("{} peak, {} HBM, ridge at {:.0f} FLOP/B", format_flops(ds.peak),
                                        format_bytes_per_s(ds.bandwidth), ridge_point(ds.peak, ds.bandwidth))
                          : std::string("unknown"),
               me.known() ? fmt::format("; measured {} peak, {} HBM", format_flops(me.peak), format_bytes_per_s(me.bandwidth))
                          : std::string(""));
  }
  if (!p.method)
    fmt::print(out, "timing: --method auto = CUDA graph replay (launch-free) for GEMMs under 1 ms, CUDA events above\n");
  else
    fmt::print(out, "timing: {}\n", method_label(*p.method, false));
  fmt::print(out, "each shape: {} checked against an fp64 reference before it is timed\n",
             o.tune_candidates > 1 ? fmt::format("the fastest of up to {} cuBLASLt algorithms,", o.tune_candidates)
                                   : std::string("cuBLASLt's first algorithm,"));

  EmptyLaunchFloor floor;
  const CudaOptions base{.warmup = o.warmup, .samples = o.samples, .repeats = o.cold ? 1 : 0, .flush_l2 = o.cold};
  fmt::print(out, "\n{:<5} {:>16} {:>10} {:>9} {:>8} {:>11} {:>7} {:>7} {:>8}  {}\n", "dtype", "n (or m x n x k)",
             "time", "TFLOP/s", "FLOP/B", "attainable", "%sheet", "%meas", "bound", "notes");

  auto measure_point = [&](const SweepPoint& pt) {
    const DType dtype = dtype_from_string(pt.dtype);
    Gemm gemm({pt.shape.m, pt.shape.n, pt.shape.k}, dtype, 1 + pt.index);
    if (o.tune_candidates > 1) gemm.tune(o.tune_candidates);
    const GemmCheck check = gemm.verify();
    if (!check.passed)
      throw VerificationError(fmt::format("the {} GEMM {}x{}x{} gave wrong results: {}", pt.dtype, pt.shape.m,
                                          pt.shape.n, pt.shape.k, check.summary()));
    const Roof ds = datasheet_roof(dtype), me = measured_roof(dtype);
    const double peak_guess = ds.peak > 0 ? ds.peak : (me.peak > 0 ? me.peak : fastest_known_peak_flops(dtype));
    const double bw_guess = ds.bandwidth > 0 ? ds.bandwidth : (me.bandwidth > 0 ? me.bandwidth : 2e12);
    // Estimated call time: the roofline floor at an assumed 50% of the ceilings.
    const double estimated_ms = roofline_floor_s(gemm.bytes(), gemm.flops(), peak_guess, bw_guess) * 1e3 / 0.5;
    const Method method = p.method ? *p.method : auto_method(estimated_ms);
    auto fn = [&](cuda_stream s) { gemm.run(s); };
    const ClockReading start = read_clocks(o.device);
    const Measurement m = measure(method, fn, base);
    const double empty_ms = floor.ms(method, m.repeats_per_sample, base);
    const double working_set = gemm.bytes();
    nlohmann::json params{{"m", pt.shape.m}, {"n", pt.shape.n}, {"k", pt.shape.k},
                          {"working_set_bytes", working_set}, {"cold", o.cold}};
    Record r = to_record(m, "matmul", to_string(dtype), params, gemm.bytes(), gemm.flops());
    r.clocks_start = start;
    r.clocks_end = read_clocks(o.device);
    r.verification = "passed";
    const double rate = r.flops_per_s();
    const double intensity = r.intensity_flop_per_byte();
    const bool cache_resident = !o.cold && l2 > 0 && working_set <= l2;
    r.extra["algorithm"] = gemm.algorithm();
    if (!gemm.tuning().empty()) r.extra["tuning"] = gemm.tuning();
    r.extra["check"] = check.summary();
    r.extra["method_choice"] = p.method ? "user" : "auto";
    r.extra["tflop_per_s"] = rate / 1e12;
    r.extra["empty_launch_ms"] = empty_ms;
    r.extra["cache_resident"] = cache_resident;
    r.extra["l2_bytes"] = l2;
    if (ds.known()) {
      const double att = attainable_flops(intensity, ds.peak, ds.bandwidth);
      r.extra["datasheet_attainable_flops_per_s"] = att;
      r.extra["fraction_of_datasheet_attainable"] = rate / att;
      r.extra["fraction_of_datasheet_peak"] = rate / ds.peak;
      r.extra["bound"] = to_string(classify(intensity, ds.peak, ds.bandwidth));
    }
    if (me.known()) {
      const double att = attainable_flops(intensity, me.peak, me.bandwidth);
      r.extra["measured_attainable_flops_per_s"] = att;
      r.extra["fraction_of_measured_attainable"] = rate / att;
      r.extra["fraction_of_measured_peak"] = rate / me.peak;
      if (!r.extra.contains("bound")) r.extra["bound"] = to_string(classify(intensity, me.peak, me.bandwidth));
    }
    // A cache-resident working set can beat the HBM floor honestly; the compute floor always holds.
    double floor_peak = std::max(ds.peak, me.peak);
    if (floor_peak <= 0) floor_peak = fastest_known_peak_flops(dtype);
    double floor_bw = std::max(ds.bandwidth, me.bandwidth);
    if (cache_resident || floor_bw <= 0) floor_bw = 1e18;  // no memory floor to hold it to
    add_plausibility_warnings(r,
                              DeviceCeilings{.source_text = datasheet ? datasheet->ceilings.source_text : "fastest known GPU",
                                             .memory_bytes_per_s = floor_bw,
                                             .peak_flops_per_s = {{to_string(dtype), floor_peak}}},
                              l2);
    return r;
  };
  auto print_row = [&](const Record& r) {
    std::string notes;
    if (r.extra.value("cache_resident", false)) notes += "L2-resident ";
    if (r.summary.median <= 2 * r.extra["empty_launch_ms"].get<double>()) notes += "launch-bound ";
    for (const auto& w : r.warnings)
      if (w.rfind("impossible", 0) == 0 || w.rfind("high spread", 0) == 0 || w.rfind("clocks moved", 0) == 0)
        notes += w.substr(0, w.find(':')) + " ";
    const double att = r.extra.value("datasheet_attainable_flops_per_s", r.extra.value("measured_attainable_flops_per_s", 0.0));
    fmt::print(out, "{:<5} {:>16} {:>10} {:>9.1f} {:>8.0f} {:>11} {:>7} {:>7} {:>8}  {}\n", r.dtype, shape_label(r.params),
               format_ms(r.summary.median), r.flops_per_s() / 1e12, r.intensity_flop_per_byte(),
               att > 0 ? format_flops(att) : "-", percent(r.extra.value("fraction_of_datasheet_attainable", 0.0)),
               percent(r.extra.value("fraction_of_measured_attainable", 0.0)), r.extra.value("bound", std::string("-")), notes);
    std::fflush(out);
  };
  set.records = run_sweep(p.points, measure_point, print_row, terminal_progress("matmul"));

  // ---- "At what size do you reach 70% of peak?" --------------------------------------------
  fmt::print(out, "\n");
  for (DType d : p.dtypes) {
    std::vector<RatePoint> rates;
    for (const auto& r : set.records)
      if (r.dtype == to_string(d) && r.params["m"] == r.params["n"] && r.params["n"] == r.params["k"])
        rates.push_back({r.params["n"].get<double>(), r.flops_per_s()});
    if (rates.empty()) continue;
    const auto best = std::max_element(rates.begin(), rates.end(), [](auto& a, auto& b) { return a.rate < b.rate; });
    for (const auto& [roof, label] : {std::pair{datasheet_roof(d), std::string("datasheet")},
                                      std::pair{measured_roof(d), std::string("measured")}}) {
      if (roof.peak <= 0) continue;
      const auto knees = find_knees(rates, roof.peak);
      std::string words;
      for (const auto& k : knees) {
        if (!words.empty()) words += "; ";
        words += k.size ? fmt::format("{:.0f}% at n ≈ {:.0f}", k.fraction * 100, *k.size)
                        : fmt::format("{:.0f}% never in this sweep", k.fraction * 100);
      }
      fmt::print(out, "{} reaches {} of the {} peak ({}); best {} at n = {:.0f} ({}).\n", to_string(d), words, label,
                 format_flops(roof.peak), format_flops(best->rate), best->size, percent(best->rate / roof.peak));
      for (auto& r : set.records)
        if (r.dtype == to_string(d))
          for (const auto& k : knees)
            r.extra[fmt::format("knee_{:.0f}_of_{}_peak_n", k.fraction * 100, label)] =
                k.size ? nlohmann::json(*k.size) : nlohmann::json(nullptr);
    }
  }

  if (!o.svg_prefix.empty()) {
    Plot rate;
    rate.title = fmt::format("GEMM throughput vs size on {} ({})", device.name, o.cold ? "cold L2" : "hot L2");
    rate.x_label = p.square ? "n (square n x n x n)" : "FLOPs per call";
    rate.y_label = "TFLOP/s";
    Plot roofline;
    roofline.title = fmt::format("GEMMs on the {} roofline", device.name);
    roofline.x_label = "arithmetic intensity (FLOP/byte)";
    roofline.y_label = "TFLOP/s";
    double i_lo = 1e300, i_hi = 0, x_lo = 1e300, x_hi = 0;
    for (DType d : p.dtypes) {
      PlotSeries curve{to_string(d), {}, true, true, false, ""};
      PlotSeries dots{to_string(d) + " measured", {}, false, true, false, ""};
      for (const auto& r : set.records) {
        if (r.dtype != to_string(d)) continue;
        const double x = p.square ? r.params["n"].get<double>() : r.flops;
        curve.points.push_back({x, r.flops_per_s() / 1e12, fmt::format("{} {}: {:.0f} TFLOP/s", r.dtype, shape_label(r.params), r.flops_per_s() / 1e12)});
        dots.points.push_back({r.intensity_flop_per_byte(), r.flops_per_s() / 1e12, shape_label(r.params)});
        i_lo = std::min(i_lo, r.intensity_flop_per_byte());
        i_hi = std::max(i_hi, r.intensity_flop_per_byte());
        x_lo = std::min(x_lo, x);
        x_hi = std::max(x_hi, x);
      }
      rate.series.push_back(std::move(curve));
      roofline.series.push_back(std::move(dots));
    }
    // Roofs: the HBM slope up to the ridge, then the dtype's peak, from 1/10 of the lowest intensity
    // to 10x the highest (and always past the ridge).
    for (DType d : p.dtypes) {
      for (const auto& [roof, label, dashed] : {std::tuple{datasheet_roof(d), std::string("datasheet"), false},
                                               std::tuple{measured_roof(d), std::string("measured"), true}}) {
        if (!roof.known()) continue;
        const double ridge = ridge_point(roof.peak, roof.bandwidth);
        const double lo = std::min(i_lo / 10, ridge / 10), hi = std::max(i_hi * 10, ridge * 10);
        roofline.series.push_back(PlotSeries{fmt::format("{} {} roof", to_string(d), label),
                                             {{lo, lo * roof.bandwidth / 1e12, ""},
                                              {ridge, roof.peak / 1e12, fmt::format("ridge {:.0f} FLOP/B", ridge)},
                                              {hi, roof.peak / 1e12, ""}},
                                             true, false, dashed, ""});
        rate.series.push_back(PlotSeries{fmt::format("{} {} peak", to_string(d), label),
                                         {{x_lo, roof.peak / 1e12, ""}, {x_hi, roof.peak / 1e12, ""}},
                                         true, false, true, ""});
      }
    }
    rate.log_y = false;
    write_plot(o.svg_prefix + "-rate.svg", rate);
    write_plot(o.svg_prefix + "-roofline.svg", roofline);
    fmt::print(out, "plots written to {}-rate.svg and {}-roofline.svg\n", o.svg_prefix, o.svg_prefix);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  fmt::print(out, "{} measurements in {:.1f} s\n", set.records.size(), seconds);
  finish_result_set(set, o.device);
  return set;
}

namespace {

struct MatmulCommand {
  MatmulOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "matmul", "GEMM TFLOP/s over sizes, placed on the roofline; the size that reaches 70% of peak", 40,
    [](CLI::App& app) {
      auto c = std::make_shared<MatmulCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      app.add_option("--dtypes", o.dtypes, "comma list of fp32, tf32, fp16, bf16, fp8 (e4m3 in, bf16 out)")
          ->default_val(o.dtypes);
      app.add_option("--sizes", o.sizes,
                     "square sizes n (n x n x n): a list, powers (2^12) or ranges START:END[:STEP]; xF multiplies, "
                     "+D adds")
          ->default_val(o.sizes);
      app.add_option("--shapes", o.shapes, "explicit shapes 'm,n,k;m,n,k' instead of --sizes")->type_name("LIST");
      app.add_option("--method", o.method,
                     "timing: auto (graph replay for GEMMs under 1 ms, events above), events, spin, graph, wall")
          ->default_val(o.method);
      app.add_flag("--cold", o.cold, "flush the L2 before each sample (one call per sample); default hot");
      app.add_option("--samples", o.samples, "timed samples per point (median reported)")->default_val(o.samples);
      app.add_option("--warmup", o.warmup, "untimed calls before sampling")->default_val(o.warmup);
      app.add_option("--tune", o.tune_candidates,
                     "cuBLASLt algorithms timed per shape, fastest kept (1 = cuBLASLt's first choice)")
          ->default_val(o.tune_candidates);
      app.add_option("--ceilings", o.ceilings,
                     "measured ceilings: auto (cached only), measure (if not cached, tens of seconds), refresh, none")
          ->default_val(o.ceilings);
      app.add_option("--svg-prefix", o.svg_prefix,
                     "write PREFIX-rate.svg (TFLOP/s vs size) and PREFIX-roofline.svg")->type_name("PREFIX");
      app.add_flag("--quick", o.quick, "short run: n = 512, 2048, 8192 and 10 samples");
      c->exports.add_to(app);
      return run_and_export(c, run_matmul);
    }});

}  // namespace
}  // namespace ridge::cli
