// The report sections that run the sweeps, the decode workload and the profile (orders 40-70).
#include <cstdio>

#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/matmul.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/sweep.hpp"
#include "ridge/writers.hpp"

namespace ridge::detail {

namespace {
/// The sweep's plot with the best variant's knees as key points: the first size measured at or
/// past 70% and 90% of the ceiling is labelled (a reader's question: from what size on?).
Plot plot_with_knees(const BandwidthSweep& sweep) {
  Plot plot = sweep.plot;
  for (std::size_t i : sweep.best_curve_per_op) {
    if (i >= plot.series.size()) continue;  // one series per curve, in curve order, before the ceilings
    for (const Knee& k : sweep.curves[i].knees) {
      if (!k.size) continue;
      PlotPoint* first = nullptr;
      for (auto& p : plot.series[i].points)
        if (p.x >= *k.size && (!first || p.x < first->x)) first = &p;
      if (!first || first->key) continue;
      first->key = true;
      first->label += fmt::format(" ({:.0f}% knee)", k.fraction * 100);
    }
  }
  return plot;
}
}  // namespace

SectionOutput bandwidth_section(ReportContext& ctx) {
  BandwidthSweepOptions o;
  o.device = ctx.device;
  o.quick = ctx.quick;
  o.ops = {StreamOp::add};
  const BandwidthSweep sweep = run_bandwidth_sweep(o, {.on_status = ctx.status});
  SectionOutput out;
  out.records = sweep.records;
  out.svgs.push_back({"bandwidth.svg", render_svg(plot_with_knees(sweep))});
  std::string& md = out.markdown;
  md += "The bandwidth-sweep exercise: `x + y` in fp32 (reads 8 bytes and writes 4 per element) from 2^10 to 2^28 "
        "elements, every kernel variant checked before it is timed, launch-free timing for short runs.\n\n";
  md += "![GB/s against size](bandwidth.svg)\n\n";
  if (!sweep.best_curve_per_op.empty()) {
    const BandwidthCurve& best = sweep.curves[sweep.best_curve_per_op.front()];
    ctx.measured[prediction::add_tb_per_s] = best.largest_bytes_per_s / 1e12;
    md += fmt::format("At {} elements the best variant ({}) moves **{}**", best.largest_n, to_string(best.variant),
                      format_bytes_per_s(best.largest_bytes_per_s));
    if (datasheet_memory_bytes_per_s(sweep.setup.ceilings) > 0) {
      ctx.measured[prediction::add_fraction_of_datasheet] = best.fraction_of_datasheet;
      md += fmt::format(", {} of the datasheet's {}", format_percent(best.fraction_of_datasheet, 0),
                        format_bytes_per_s(datasheet_memory_bytes_per_s(sweep.setup.ceilings)));
    }
    md += ".\n\n";
  }
  md += findings_markdown(sweep.findings);
  md += records_markdown(sweep.records);
  md += warnings_markdown(sweep.records);
  return out;
}

namespace {
/// This run's records so far and the sweep's: what may raise a measured peak.
std::vector<Record> with_records_so_far(const ReportContext& ctx, const std::vector<Record>& sweep) {
  std::vector<Record> all = ctx.results->records;
  all.insert(all.end(), sweep.begin(), sweep.end());
  return all;
}
}  // namespace

SectionOutput matmul_section(ReportContext& ctx) {
  MatmulSweepOptions o;
  o.device = ctx.device;
  o.quick = ctx.quick;
  const MatmulSweep sweep = run_matmul_sweep(o, {.on_status = ctx.status});
  SectionOutput out;
  out.records = sweep.records;
  out.svgs.push_back({"matmul.svg", render_svg(sweep.rate_plot)});
  std::string& md = out.markdown;
  md += "The speed-at-a-size exercise: square BF16 GEMMs through cuBLASLt (the fastest of its top heuristic "
        "choices), each checked against an fp64 reference before it is timed.\n\n";
  md += "![TFLOP/s against size](matmul.svg)\n\n";
  // The report's ceilings (measured when the ceilings section ran, else the datasheet's), raised
  // where this sweep beat a measured peak (the sweep's findings say so): one peak for the whole
  // report, the ceilings table included (drawn again at the end).
  const DeviceCeilings before = ctx.ceilings;
  const std::vector<Record> so_far = with_records_so_far(ctx, sweep.records);
  if (!raise_report_ceilings(ctx, so_far).empty())
    if (const std::string raised = raised_peak_note(before, ctx.ceilings, "bf16", so_far); !raised.empty())
      md += fmt::format("> **One BF16 peak for the whole report:** {}; the ceilings table, the roofline, the decode "
                        "ceiling and the summary use {}.\n\n",
                        raised, format_flops(ctx.ceilings.peak_flops("bf16")));
  const MatmulKnees knees = matmul_knees_against(sweep.records, DType::bf16, ctx.ceilings, "report");
  std::vector<Finding> findings = sweep.findings;
  if (!knees.knees.empty()) {
    if (knees.knees.front().size) ctx.measured[prediction::matmul_70pct_n] = *knees.knees.front().size;
    // Said once: the sweep's sentence against the same peak is left out.
    for (const auto& k : sweep.knees)
      if (k.dtype == knees.dtype && k.peak_flops_per_s == knees.peak_flops_per_s)
        std::erase_if(findings, [&](const Finding& f) { return f.text == knee_sentence(k); });
    md += "**" + knee_sentence(knees) + "**\n\n";
  }
  md += findings_markdown(findings);
  md += records_markdown(sweep.records);
  md += warnings_markdown(sweep.records);
  return out;
}

SectionOutput decode_section(ReportContext& ctx) {
  gpt2::DecodeOptions o = gpt2::DecodeOptions::quick(ctx.device);
  if (ctx.ceilings.memory_bytes_per_s > 0) o.bandwidth_bytes_per_s = ctx.ceilings.memory_bytes_per_s;
  const gpt2::DecodeRun run = gpt2::run_decode(o, {.on_progress = ctx.status});
  SectionOutput out;
  out.records = run.records;
  std::string& md = out.markdown;
  md += fmt::format("The reference workload: one GPT-2 small ({}) decode step with a KV cache, eager launches "
                    "against the whole step replayed as a CUDA graph, next to `decode_ceiling` at {} ({}).\n\n",
                    to_string(o.dtype), format_bytes_per_s(run.ceilings.memory_bytes_per_s), ctx.ceilings.source_text);
  md += "| batch | context | mode | method | ms/step | tokens/s | decode_ceiling tokens/s | % of ceiling |\n"
        "|---:|---:|---|---|---:|---:|---:|---:|\n";
  double best_fraction = 0, best_tokens = 0;
  for (const auto& r : run.records) {
    if (r.name != "decode") continue;
    const double f = extra_key::fraction_of_ceiling.get(r);
    md += fmt::format("| {} | {} | {} | `{}` | {:.4f} | {:.0f} | {:.0f} | {:.1f}% |\n",
                      r.params.value(param_key::batch, 0), r.params.value(param_key::context, 0),
                      r.params.value(param_key::mode, std::string()), to_string(r.method), r.summary.median,
                      extra_key::tokens_per_s.get(r),
                      extra_key::decode_ceiling_tokens_per_s.get(r), 100 * f);
    if (r.params.value(param_key::batch, 0) == 1 && f > best_fraction) {
      best_fraction = f;
      best_tokens = extra_key::tokens_per_s.get(r);
    }
  }
  md += "\n";
  if (best_tokens > 0) {
    ctx.measured[prediction::decode_tokens_per_s] = best_tokens;
    ctx.measured[prediction::decode_fraction_of_ceiling] = best_fraction;
  }
  md += warnings_markdown(run.records);
  return out;
}

namespace {

/// The eager step's kernels on the roofline by their hardware counters, and the step's measured
/// bytes and FLOPs against the model's.
std::string measured_roofline_markdown(const gpt2::ProfileRun& run) {
  if (!run.measured_roofline) return fmt::format("No measured roofline: {}\n\n", run.counters_note);
  const trace::CounterRoofline& r = *run.measured_roofline;
  std::string md = "### Measured roofline of the eager step\n\n";
  md += "Every kernel of one eager step profiled with CUPTI's range profiler (replayed, serialized); times from two "
        "untouched steps after it. Ranked by the time each kernel would save at its roof.\n\n";
  md += "| kernel | calls | time share | DRAM / call | FLOP / call | FLOP/byte | % DRAM BW | % peak | bound | win at "
        "the roof | whole step |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n";
  for (std::size_t i = 0; i < r.kernels.size() && i < 10; ++i) {
    const auto& k = r.kernels[i];
    md += fmt::format("| `{}` | {} | {:.1f}% | {} | {:.3g} | {:.2f} | {:.0f}% | {:.0f}% | {} | {} | {:.3f}x |\n",
                      k.name.substr(0, 70), k.calls, 100 * k.time_share, format_bytes(k.dram_bytes), k.flops, k.intensity,
                      100 * k.bytes_share_of_peak, 100 * k.flops_share_of_peak, to_string(k.bound),
                      format_ms(k.win_ns / 1e6), k.whole_speedup);
  }
  if (run.stated_bytes > 0 && run.stated_flops > 0)
    md += fmt::format("\nMeasured per step: {} of DRAM traffic and {:.3g} FLOP, against the model's {} and {:.3g} FLOP "
                      "({:.2f}x and {:.2f}x the model's).\n",
                      format_bytes(run.measured_dram_bytes), run.measured_flops, format_bytes(run.stated_bytes),
                      run.stated_flops, run.measured_dram_bytes / run.stated_bytes, run.measured_flops / run.stated_flops);
  for (const auto& n : r.notes) md += fmt::format("- {}\n", n);
  if (!run.counters_note.empty()) md += fmt::format("- {}\n", run.counters_note);
  md += "\n";
  return md;
}

}  // namespace

SectionOutput profile_section(ReportContext& ctx) {
  gpt2::ProfileOptions o;
  o.device = ctx.device;
  o.trace_path = (ctx.folder / "trace.json").string();
  o.counters = true;
  o.validate();
  ctx.status("tracing GPT-2 decode steps, eager and graph, and reading one step's hardware counters");
  const gpt2::ProfileRun run = gpt2::run_profile(o);
  ctx.status("");
  SectionOutput out;
  out.records = run.records;
  std::string& md = out.markdown;
  md += "One GPT-2 small BF16 decode step (batch 1, 128 tokens) traced with ridge's CUPTI tracer, eager and as a "
        "graph replay. `trace.json` (eager) and `trace-graph.json` open in Perfetto.\n\n";
  md += "| | kernels | kernel span | GPU busy | kernel times summed (overlap share) | idle (launch gaps) | idle "
        "waiting on the host | launch latency: queued / overhead (medians) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string top;  // the eager step's top kernels, as a table after the per-mode one
  for (const auto& p : run.profiles) {
    const trace::Analysis& a = p.analysis;
    md += fmt::format("| {} | {} | {} | {} | {} ({:.0f}%) | {:.0f}% | {:.0f}% | {} |\n", to_string(p.mode),
                      a.kernel_count, format_ms(a.kernel_span_ns / 1e6), format_ms(a.gpu_busy_ns / 1e6),
                      format_ms(a.kernel_time_ns / 1e6), 100 * a.kernel_overlap_fraction, 100 * p.launch_gap_fraction(),
                      100 * a.host_bound_fraction_of_idle, trace::launch_split_text(a));
    if (p.mode != gpt2::Mode::eager) continue;
    ctx.measured[prediction::kernels_per_step] = static_cast<double>(a.kernel_count);
    if (a.kernel_span_ns > 0) ctx.measured[prediction::launch_gap_fraction] = p.launch_gap_fraction();
    top += "\nTop kernels (eager)";
    if (a.kernel_times_overlap())
      top += fmt::format(" - kernels overlapped, so totals include time run alongside other kernels: they sum to {} "
                         "against {} of GPU busy time",
                         format_ms(a.kernel_time_ns / 1e6), format_ms(a.gpu_busy_ns / 1e6));
    top += ":\n\n| kernel | count | total | % of summed kernel time |\n|---|---:|---:|---:|\n";
    for (const auto& k : a.top_kernels)
      top += fmt::format("| `{}` | {} | {} | {:.1f}% |\n", k.name.substr(0, 80), k.time.count,
                         format_ms(k.time.total_ns / 1e6), k.percent_of_kernel_time);
  }
  md += top + "\n";
  for (const auto& p : run.profiles)
    for (const auto& f : p.analysis.findings) md += fmt::format("- {}: {}\n", to_string(p.mode), f);
  md += "\n";
  md += measured_roofline_markdown(run);
  if (run.measured_roofline && ctx.ceilings.memory_bytes_per_s > 0) {
    out.svgs.push_back({"measured_roofline.svg",
                        render_svg(trace::counter_roofline_plot(*run.measured_roofline, ctx.ceilings, 8,
                                                                "GPT-2 eager decode step: each kernel by its hardware counters"))});
    md += "![the eager step's kernels on the roofline by their counters, area by time share](measured_roofline.svg)\n\n";
  }
  return out;
}


}  // namespace ridge::detail
