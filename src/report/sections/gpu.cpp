// The GPU sections of `ridge report` (they run only with a usable GPU), in report order.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/device.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/roofline.hpp"
#include "ridge/timing.hpp"

namespace ridge::detail {

namespace {

std::string cuda_version(int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : "unknown"; }

}  // namespace

// ---- 10: device info ---------------------------------------------------------------------------

SectionOutput info_section(ReportContext& ctx) {
  const DeviceInfo info = device_info(ctx.device);
  const auto& d = info.device;
  const auto& clocks = info.clocks;
  SectionOutput out;
  std::string& md = out.markdown;
  md += "| property | value |\n|---|---|\n";
  md += fmt::format("| device | {} (index {}) |\n| UUID | `{}` |\n", d.name, d.index, d.uuid);
  md += fmt::format("| compute capability | {}.{} |\n| SMs | {} |\n", d.compute_capability_major,
                    d.compute_capability_minor, d.sm_count);
  md += fmt::format("| L2 cache | {} |\n| memory | {}, {}-bit bus |\n", format_bytes(double(d.l2_bytes)),
                    format_bytes(double(d.memory_bytes)), d.memory_bus_bits);
  md += fmt::format("| max clocks | SM {:.0f} MHz, memory {:.0f} MHz |\n", d.max_sm_clock_mhz, d.max_memory_clock_mhz);
  if (clocks.source == "nvml") {
    md += fmt::format("| clocks at start | SM {:.0f} MHz, memory {:.0f} MHz; {:.0f} W, {:.0f} C; limits: {} |\n",
                      clocks.sm_mhz, clocks.memory_mhz, clocks.power_w, clocks.temperature_c,
                      info.clock_limits.empty() ? "none" : info.clock_limits);
  } else {
    md += fmt::format("| clocks at start | unavailable: NVML {} |\n", info.nvml_status);
  }
  md += fmt::format("| driver / runtime | CUDA {} / CUDA {} |\n", cuda_version(d.driver_version),
                    cuda_version(d.runtime_version));
  if (ctx.datasheet) {
    const auto& e = *ctx.datasheet;
    const double bf16 = e.ceilings.peak_flops("bf16");
    md += fmt::format("| datasheet entry | {} (`{}`): {} HBM, {} dense BF16 |\n", e.name, e.key,
                      format_bytes_per_s(e.ceilings.memory_bytes_per_s), bf16 > 0 ? format_flops(bf16) : "n/a");
    if (!e.source.empty()) md += fmt::format("| datasheet source | {} |\n", e.source);
  } else {
    md += "| datasheet entry | none matched: percentages of datasheet figures are left out |\n";
  }
  md += "\n";
  return out;
}

// ---- 20: the timing demo -----------------------------------------------------------------------

namespace {

std::string timing_table(const TimingCase& c) {
  std::string md = "| method | median | min | max | TFLOP/s | SM clock | what the number means |\n"
                   "|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& m : c.methods) {
    const Record& r = m.record;
    const std::string clock = !m.clocks.known() ? "-"
                              : fmt::format("{:.0f} MHz{}", m.clocks.median_sm_mhz,
                                            m.clocks.reduced_count > 0 ? " (some samples reduced)" : "");
    md += fmt::format("| `{}` | {} | {} | {} | {:.2f} | {} | {} |\n", to_string(r.method), format_ms(r.summary.median),
                      format_ms(r.summary.min), format_ms(r.summary.max), r.flops_per_s() / 1e12, clock, m.meaning);
  }
  md += "\nThe methods took their samples in turns (one of each, round-robin), so a clock change hits them alike; "
        "SM clock is each row's median over its samples.\n";
  for (const auto& finding : c.clock_findings) md += fmt::format("\n> **Clocks:** {}\n", finding);
  return md + "\n";
}
}  // namespace

SectionOutput timing_section(ReportContext& ctx) {
  TimingDemoOptions options;
  options.device = ctx.device;
  if (ctx.quick) options.samples = 10;
  options.inject_slowdown_us = ctx.inject_slowdown_us;
  const TimingDemo demo = run_timing_demo(options, ctx.status);
  SectionOutput out;
  out.records = demo.records();

  std::string& md = out.markdown;
  md += fmt::format(
      "The three-clocks timing exercise: a {} {}x{}x{} matmul (cuBLASLt, random inputs, output checked against a "
      "reference before timing) timed three ways. {} samples each after {} warm-up calls; medians.\n\n",
      options.dtype == "fp32" ? "FP32" : options.dtype, options.n, options.n, options.n, options.samples,
      options.warmup);
  if (options.inject_slowdown_us > 0)
    md += fmt::format("> **Deliberately slowed run:** inject_slowdown_us = {} (a testing aid) added a GPU busy-wait "
                      "after every call of the large matmul. Use it only to test `ridge compare`.\n\n",
                      options.inject_slowdown_us);
  md += timing_table(demo.large);
  if (demo.wall_over_naive > 0) {
    const double ratio = 1 / demo.wall_over_naive;
    ctx.measured[prediction::naive_over_sync] = ratio;
    md += fmt::format(
        "The unsynchronized reading is {:.2g} of the synchronized one ({:.0f}x smaller): CUDA calls return once the "
        "work is queued.{}\n\n",
        ratio, demo.wall_over_naive,
        demo.naive_impossible
            ? fmt::format(" It implies {}, above the {} peak of any GPU ({}): **physically impossible**.",
                          format_flops(demo.naive_flops_per_s), to_string(demo.large.dtype),
                          format_flops(demo.impossible_above_flops_per_s))
            : "");
  }
  md += fmt::format("The synchronized wall clock and the events agree within {}.\n\n",
                    format_percent(demo.wall_vs_events_relative_difference));
  if (const Record* events = demo.large.find(Method::cuda_events); events && options.n == 4096 && options.dtype == "fp32")
    ctx.measured[prediction::matmul_fp32_4096_ms] = events->summary.median;

  md += fmt::format("Small case: a BF16 {0}x{0}x{0} matmul, where the host's launch latency is as large as the work.\n\n",
                    options.small_n);
  md += timing_table(demo.small);
  ctx.measured[prediction::launch_overhead_us] = demo.launch_overhead_ms * 1e3;
  md += fmt::format(
      "Per-sample events read {} more than the launch-free methods ({:.1f}x). A kernel has no speed, only a speed "
      "at a size.\n\n",
      format_ms(demo.launch_overhead_ms), demo.events_over_launch_free);
  md += warnings_markdown(out.records);
  return out;
}

// ---- 30: measured ceilings -----------------------------------------------------------------------

SectionOutput ceilings_section(ReportContext& ctx) {
  const CeilingsLookup lookup = ceilings_for(ctx.device, describe_device(ctx.device),
                                             ctx.remeasure_ceilings ? CeilingsMode::refresh : CeilingsMode::measure);
  const MeasuredCeilings& m = *lookup.measured;
  if (m.from_cache) ctx.ceilings_cached_at = m.measured_at_utc;
  const DeviceCeilings& c = m.ceilings;
  SectionOutput out;
  out.records = m.records;
  ctx.ceilings = c;  // later sections compare with the measured ceilings
  if (c.memory_bytes_per_s > 0) ctx.measured[prediction::hbm_tb_per_s] = c.memory_bytes_per_s / 1e12;
  if (const double bf16 = c.peak_flops("bf16"); bf16 > 0) {
    ctx.measured[prediction::bf16_tflop_per_s] = bf16 / 1e12;
    if (c.memory_bytes_per_s > 0) ctx.measured[prediction::ridge_point_bf16] = c.ridge_point("bf16");
  }
  out.markdown = ceilings_markdown(m, ctx.datasheet, ctx.ceilings, ctx.results->records);
  // A later sweep may beat a peak: the table is drawn again with the report's final figure.
  out.render_final = [m](const ReportContext& final_ctx) {
    SectionOutput again;
    again.markdown = ceilings_markdown(m, final_ctx.datasheet, final_ctx.ceilings, final_ctx.results->records);
    return again;
  };
  return out;
}

// ---- 55: the roofline with every measured point ------------------------------------------------

SectionOutput roofline_section(ReportContext& ctx) {
  // The records measured before this section; drawn again under the report's final ceilings.
  const std::size_t count = ctx.results->records.size();
  SectionOutput out = roofline_output(ctx.ceilings, ctx.results->records, count);
  out.render_final = [count](const ReportContext& final_ctx) {
    return roofline_output(final_ctx.ceilings, final_ctx.results->records, count);
  };
  return out;
}

}  // namespace ridge::detail
