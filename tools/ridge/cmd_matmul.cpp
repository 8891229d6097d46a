// `ridge matmul`: the speed-at-a-size exercise. GEMM TFLOP/s over sizes, each placed on the
// device's roofline, and the answer to "at what size do you reach 70% of peak?". The sweep and its
// analysis are run_matmul_sweep (ridge/matmul.hpp); this file prints them.
#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/device.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/matmul.hpp"
#include "ridge/result.hpp"
#include "ridge/roofline.hpp"
#include "ridge/timing.hpp"
#include "ridge/format.hpp"
#include "ridge/matmul.hpp"
#include "ridge/roofline.hpp"
#include "sweep_support.hpp"

namespace ridge::cli {

namespace {

void print_setup(std::FILE* out, const MatmulSetup& setup) {
  const auto& o = setup.plan.options;
  fmt::print(out, "ridge matmul on {} (cuBLASLt, random inputs in [-1, 1], C = A @ B, {})\n", setup.device.name,
             o.cold ? "cold: L2 flushed before each sample" : "hot: L2 not flushed");
  if (!setup.ceilings.note.empty()) fmt::print(out, "{}\n", setup.ceilings.note);
  const DeviceCeilings ds = setup.ceilings.datasheet_ceilings().value_or(DeviceCeilings{});
  const DeviceCeilings me = setup.ceilings.measured ? setup.ceilings.measured->ceilings : DeviceCeilings{};
  for (DType d : o.dtypes) {
    const std::string t = to_string(d);
    fmt::print(out, "  {}: datasheet {}{}\n", t,
               ds.ridge_point(t) > 0 ? fmt::format("{} peak, {} HBM, ridge at {:.0f} FLOP/B", format_flops(ds.peak_flops(t)),
                                                   format_bytes_per_s(ds.memory_bytes_per_s), ds.ridge_point(t))
                                     : std::string("unknown"),
               me.ridge_point(t) > 0 ? fmt::format("; measured {} peak, {} HBM", format_flops(me.peak_flops(t)),
                                                   format_bytes_per_s(me.memory_bytes_per_s))
                                     : std::string(""));
  }
  if (!o.method)
    fmt::print(out, "timing: --method auto = CUDA graph replay (launch-free) for GEMMs under 1 ms, CUDA events above\n");
  else
    fmt::print(out, "timing: {}\n", method_label(*o.method, false));
  fmt::print(out, "each shape: {} checked against an fp64 reference before it is timed\n",
             o.tune_candidates > 1 ? fmt::format("the fastest of up to {} cuBLASLt algorithms,", o.tune_candidates)
                                   : std::string("cuBLASLt's first algorithm,"));
  fmt::print(out, "\n{:<5} {:>16} {:>10} {:>9} {:>8} {:>11} {:>7} {:>7} {:>8}  {}\n", "dtype", "n (or m x n x k)",
             "time", "TFLOP/s", "FLOP/B", "attainable", "%sheet", "%meas", "bound", "notes");
}

void print_record(std::FILE* out, const Record& r) {
  std::string notes;
  if (extra_key::cache_resident.get(r)) notes += "L2-resident ";
  if (r.summary.median <= launch_bound_factor * extra_key::empty_launch_ms.get(r)) notes += "launch-bound ";
  notes += warning_tags(r);
  const double att = extra_key::datasheet_attainable_flops_per_s.find(r).value_or(
      extra_key::measured_attainable_flops_per_s.get(r));
  fmt::print(out, "{:<5} {:>16} {:>10} {:>9.1f} {:>8.0f} {:>11} {:>7} {:>7} {:>8}  {}\n", to_string(r.dtype),
             shape_label(gemm_shape(r)), format_ms(r.summary.median), r.flops_per_s() / 1e12,
             r.intensity_flop_per_byte(), att > 0 ? format_flops(att) : "-",
             format_percent(extra_key::fraction_of_datasheet_attainable.get(r)),
             format_percent(extra_key::fraction_of_measured_attainable.get(r)),
             extra_key::bound.find(r).value_or("-"), notes);
  std::fflush(out);
}

struct MatmulCommand {
  MatmulSweepOptions options;
  std::string svg_prefix;  ///< writes PREFIX-rate.svg and PREFIX-roofline.svg when non-empty
  ExportOptions exports;
};

MatmulSweep run_matmul_printed(const MatmulSweepOptions& options, std::FILE* out, const std::string& svg_prefix) {
  const MatmulSetup setup = prepare_matmul_sweep(options);
  print_setup(out, setup);
  MatmulSweep sweep = run_matmul_sweep(setup, sweep_callbacks("matmul", out, print_record));
  fmt::print(out, "\n");
  print_findings(out, sweep.findings);
  if (!svg_prefix.empty()) {
    write_plot(svg_prefix + "-rate.svg", sweep.rate_plot);
    write_plot(svg_prefix + "-roofline.svg", sweep.roofline_plot);
    fmt::print(out, "plots written to {}-rate.svg and {}-roofline.svg\n", svg_prefix, svg_prefix);
  }
  fmt::print(out, "{} measurements in {:.1f} s\n", sweep.records.size(), sweep.seconds);
  return sweep;
}

RIDGE_REGISTER_COMMAND(Command{
    "matmul", "GEMM TFLOP/s over sizes, placed on the roofline; the size that reaches 70% of peak", 40,
    [](CLI::App& app) {
      auto c = std::make_shared<MatmulCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      add_list_option(app, "--dtypes", o.dtypes, dtype_from_string,
                      "comma list of fp32, tf32, fp16, bf16, fp8 (e4m3 in, bf16 out)");
      add_sizes_option(app, o.sizes,
                       "square sizes n (n x n x n): a list, powers (2^12) or ranges START:END[:STEP]; xF multiplies, "
                       "+D adds");
      add_parsed_option(app, "--shapes", o.shapes, parse_shapes, "",
                        "explicit shapes 'm,n,k;m,n,k' instead of --sizes")
          ->type_name("LIST");
      add_method_option(app, o.method, "timing: auto (graph replay for GEMMs under 1 ms, events above), events, spin, graph, wall");
      app.add_flag("--cold", o.cold, "flush the L2 before each sample (one call per sample); default hot");
      app.add_option("--samples", o.samples, "timed samples per point (median reported)")->default_val(o.samples);
      app.add_option("--warmup", o.warmup, "untimed calls before sampling")->default_val(o.warmup);
      app.add_option("--tune", o.tune_candidates,
                     "cuBLASLt algorithms timed per shape, fastest kept (1 = cuBLASLt's first choice)")
          ->default_val(o.tune_candidates);
      app.add_option("--ceilings", o.ceilings,
                     "measured ceilings: auto (cached only), measure (if not cached, tens of seconds), refresh, none")
          ->default_val(o.ceilings);
      app.add_option("--svg-prefix", c->svg_prefix,
                     "write PREFIX-rate.svg (TFLOP/s vs size) and PREFIX-roofline.svg")->type_name("PREFIX");
      app.add_flag("--quick", o.quick, "short run: n = 512, 2048, 8192 and 10 samples");
      c->exports.add_to(app);
      return [c] {
        measure_and_export(c->exports, c->options.device,
                           [&](std::FILE* out) { return run_matmul_printed(c->options, out, c->svg_prefix).records; });
        return 0;
      };
    }});

}  // namespace
}  // namespace ridge::cli
