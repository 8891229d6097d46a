// `ridge bandwidth`: the bandwidth-sweep exercise. x + y (and copy, scale, triad, a read-only sum)
// over sizes 2^10..2^28: where launch overhead dominates, where the chip fills, and how much of
// the datasheet bandwidth the largest size reaches. The sweep and its analysis are
// run_bandwidth_sweep (ridge/bandwidth.hpp); this file prints them.
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
#include "ridge/bandwidth.hpp"
#include "ridge/format.hpp"
#include "sweep_support.hpp"

namespace ridge::cli {

namespace {

void print_setup(std::FILE* out, const BandwidthSetup& setup) {
  const auto& c = setup.ceilings;
  const auto& o = setup.plan.options;
  fmt::print(out, "ridge bandwidth on {} (L2 {}{})\n", setup.device.name, format_bytes(double(setup.device.l2_bytes)),
             datasheet_memory_bytes_per_s(c) > 0
                 ? fmt::format(", datasheet {} HBM", format_bytes_per_s(datasheet_memory_bytes_per_s(c)))
                 : ", not in the catalog");
  if (!c.note.empty()) fmt::print(out, "{}\n", c.note);
  if (measured_memory_bytes_per_s(c) > 0)
    fmt::print(out, "measured HBM ceiling {} ({}, {})\n", format_bytes_per_s(measured_memory_bytes_per_s(c)),
               c.measured->hbm_kernel, c.measured->measured_at_utc);
  fmt::print(out, "fp32, random inputs, bytes = reads + writes; {}; each kernel's output checked before timing\n",
             o.cold ? "cold: L2 flushed before each sample (one call per sample)" : "hot: L2 not flushed");
  if (!o.method)
    fmt::print(out, "timing: --method auto = CUDA graph replay (launch-free: the host's launch latency is not in the\n"
                    "number) for ops under 1 ms, CUDA events above; empty launch timed the same way at each point\n");
  else
    fmt::print(out, "timing: {}\n", method_label(*o.method, false));
  fmt::print(out, "\n{:<6} {:<12} {:>6} {:>9} {:>10} {:>10} {:>7} {:>7} {:>9}  {}\n", "op", "variant", "n", "bytes",
             "time", "GB/s", "%meas", "%sheet", "empty", "notes");
}

void print_record(std::FILE* out, const Record& r) {
  std::string notes;
  if (extra_key::launch_bound.get(r)) notes += "launch-bound ";
  if (extra_key::cache_resident.get(r)) notes += "L2-resident ";
  notes += warning_tags(r);
  const StreamPoint p = stream_point(r);
  fmt::print(out, "{:<6} {:<12} {:>6} {:>9} {:>10} {:>10.1f} {:>7} {:>7} {:>9}  {}\n", to_string(p.op),
             to_string(p.variant), size_label(p.n), format_bytes(r.bytes), format_ms(r.summary.median),
             r.bytes_per_s() / 1e9, format_percent(extra_key::fraction_of_measured_hbm.get(r)),
             format_percent(extra_key::fraction_of_datasheet.get(r)),
             format_ms(extra_key::empty_launch_ms.get(r)), notes);
  std::fflush(out);
}

void print_curves(std::FILE* out, const BandwidthSweep& sweep) {
  auto knee = [](const BandwidthCurve& c, std::size_t i) {
    if (i >= c.knees.size()) return std::string("-");
    const auto& size = c.knees[i].size;
    return size ? fmt::format("~{}", size_label(std::llround(*size))) : std::string("never");
  };
  fmt::print(out, "\n{:<6} {:<12} {:>16} {:>11} {:>8} {:>8} {:>10} {:>10}\n", "op", "variant", "launch-bound to",
             "largest", "%sheet", "%meas", "70% knee", "90% knee");
  for (const auto& c : sweep.curves)
    fmt::print(out, "{:<6} {:<12} {:>16} {:>11} {:>8} {:>8} {:>10} {:>10}\n", to_string(c.op), to_string(c.variant),
               c.launch_bound_up_to ? size_label(*c.launch_bound_up_to) : "none",
               format_bytes_per_s(c.largest_bytes_per_s), format_percent(c.fraction_of_datasheet),
               format_percent(c.fraction_of_measured), knee(c, 0), knee(c, 1));
}

struct BandwidthCommand {
  BandwidthSweepOptions options;
  std::string svg;  ///< GB/s vs size plot, written when non-empty
  ExportOptions exports;
};

BandwidthSweep run_bandwidth_printed(const BandwidthSweepOptions& options, std::FILE* out, const std::string& svg) {
  const BandwidthSetup setup = prepare_bandwidth_sweep(options);
  print_setup(out, setup);
  BandwidthSweep sweep = run_bandwidth_sweep(setup, sweep_callbacks("bandwidth", out, print_record));
  print_curves(out, sweep);
  fmt::print(out, "\n");
  print_findings(out, sweep.findings);
  if (!svg.empty()) {
    write_plot(svg, sweep.plot);
    fmt::print(out, "plot written to {}\n", svg);
  }
  fmt::print(out, "{} measurements in {:.1f} s\n", sweep.records.size(), sweep.seconds);
  return sweep;
}

RIDGE_REGISTER_COMMAND(Command{
    "bandwidth", "x + y, copy, scale, triad and a read-only sum over sizes: GB/s, % of ceilings, where launches dominate",
    30, [](CLI::App& app) {
      auto c = std::make_shared<BandwidthCommand>();
      auto& o = c->options;
      add_device_option(app, o.device);
      add_list_option(app, "--ops", o.ops, stream_op_from_string,
                      "comma list of add (c=a+b, 12 B/elem), copy (8 B), scale (8 B), triad (12 B), read (sum, 4 B)");
      add_list_option(app, "--variants", o.variants, stream_variant_from_string,
                      "comma list of kernel variants: scalar, vec4, grid_stride");
      add_sizes_option(app, o.sizes,
                       "elements per array: a list (1024,4096), powers (2^20) or ranges START:END[:STEP]; a bare STEP or "
                       "xF multiplies, +D adds (2^10:2^28:2 = every power of two)");
      add_method_option(app, o.method, "timing: auto (graph replay for ops under 1 ms, events above), events, spin, graph, wall");
      app.add_flag("--cold", o.cold, "flush the L2 before each sample (one call per sample); default hot");
      app.add_option("--samples", o.samples, "timed samples per point (median reported)")->default_val(o.samples);
      app.add_option("--warmup", o.warmup, "untimed calls before sampling")->default_val(o.warmup);
      app.add_option("--ceilings", o.ceilings,
                     "measured ceilings: auto (use the cached ones, never measure), measure (measure if not cached, "
                     "tens of seconds), refresh, none")
          ->default_val(o.ceilings);
      app.add_option("--svg", c->svg, "write a plot of GB/s vs size (log axes) per variant to FILE")->type_name("FILE");
      app.add_flag("--quick", o.quick, "short run: add only, 2^10..2^28 every 4x, 10 samples");
      c->exports.add_to(app);
      return [c] {
        measure_and_export(c->exports, c->options.device,
                           [&](std::FILE* out) { return run_bandwidth_printed(c->options, out, c->svg).records; });
        return 0;
      };
    }});

}  // namespace
}  // namespace ridge::cli
