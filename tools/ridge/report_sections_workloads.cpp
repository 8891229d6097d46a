// The report sections that run the sweeps, the decode workload and the profile (orders 40-70).
#include <cstdio>

#include <fmt/format.h>

#include "commands.hpp"
#include "report_sections.hpp"
#include "ridge/format.hpp"
#include "ridge/sweep.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

SectionOutput bandwidth_section(ReportContext& ctx) {
  BandwidthOptions o;
  o.device = ctx.device;
  o.quick = ctx.quick;
  o.ops = "add";
  o.svg.clear();
  ResultSet set = run_bandwidth(o, ctx.log);
  SectionOutput out;
  out.records = set.records;
  out.svgs.push_back(rate_vs_size_svg("bandwidth.svg", "x + y (fp32, 12 bytes per element)", set.records, "n", false));
  const Record* best = nullptr;
  std::int64_t largest = 0;
  for (const auto& r : set.records) largest = std::max<std::int64_t>(largest, r.params.value("n", std::int64_t{0}));
  for (const auto& r : set.records)
    if (r.params.value("n", std::int64_t{0}) == largest && (!best || r.bytes_per_s() > best->bytes_per_s())) best = &r;
  std::string& md = out.markdown;
  md += "The bandwidth-sweep exercise: `x + y` in fp32 (reads 8 bytes and writes 4 per element) from 2^10 to 2^28 "
        "elements, every kernel variant checked before it is timed, launch-free timing for short runs.\n\n";
  md += "![GB/s against size](bandwidth.svg)\n\n";
  if (best) {
    ctx.measured[prediction::add_tb_per_s] = best->bytes_per_s() / 1e12;
    md += fmt::format("At {} elements the best variant ({}) moves **{}**", largest,
                      best->params.value("variant", std::string("?")), format_bytes_per_s(best->bytes_per_s()));
    if (ctx.datasheet && ctx.datasheet->bandwidth_bytes_per_s > 0) {
      const double f = best->bytes_per_s() / ctx.datasheet->bandwidth_bytes_per_s;
      ctx.measured[prediction::add_fraction_of_datasheet] = f;
      md += fmt::format(", {:.0f}% of the datasheet's {}", 100 * f, format_bytes_per_s(ctx.datasheet->bandwidth_bytes_per_s));
    }
    md += ".\n\n";
  }
  md += records_markdown(set.records);
  md += warnings_markdown(set.records);
  return out;
}

SectionOutput matmul_section(ReportContext& ctx) {
  MatmulOptions o;
  o.device = ctx.device;
  o.quick = ctx.quick;
  ResultSet set = run_matmul(o, ctx.log);
  SectionOutput out;
  out.records = set.records;
  out.svgs.push_back(rate_vs_size_svg("matmul.svg", "BF16 matmul, n x n x n", set.records, "n", true));
  std::string& md = out.markdown;
  md += "The speed-at-a-size exercise: square BF16 GEMMs through cuBLASLt (the fastest of its top heuristic "
        "choices), each checked against an fp64 reference before it is timed.\n\n";
  md += "![TFLOP/s against size](matmul.svg)\n\n";
  std::vector<RatePoint> points;
  for (const auto& r : set.records)
    if (r.params.contains("n")) points.push_back({r.params["n"].get<double>(), r.flops_per_s()});
  const double peak = ctx.peak_flops.count("bf16") ? ctx.peak_flops.at("bf16") : 0;
  if (peak > 0 && !points.empty()) {
    const auto knee = find_knee(points, peak, 0.7);
    if (knee) {
      ctx.measured[prediction::matmul_70pct_n] = *knee;
      md += fmt::format("BF16 reaches 70% of the {} ceiling ({}) at **n ≈ {:.0f}**.\n\n", ctx.ceilings_source,
                        format_flops(peak), *knee);
    } else {
      md += fmt::format("BF16 never reaches 70% of the {} ceiling ({}) in this sweep.\n\n", ctx.ceilings_source,
                        format_flops(peak));
    }
  }
  md += records_markdown(set.records);
  md += warnings_markdown(set.records);
  return out;
}

SectionOutput decode_section(ReportContext& ctx) {
  DecodeOptions o = DecodeOptions::quick(ctx.device);
  if (ctx.bandwidth_bytes_per_s > 0) o.bandwidth_gb_per_s = ctx.bandwidth_bytes_per_s / 1e9;
  ResultSet set = run_decode(o, ctx.log);
  SectionOutput out;
  out.records = set.records;
  std::string& md = out.markdown;
  md += fmt::format("The reference workload: one GPT-2 small ({}) decode step with a KV cache, eager launches "
                    "against the whole step replayed as a CUDA graph, next to `decode_ceiling` at {} ({}).\n\n",
                    o.dtype, format_bytes_per_s(o.bandwidth_gb_per_s * 1e9), ctx.ceilings_source);
  md += "| batch | context | mode | method | ms/step | tokens/s | decode_ceiling tokens/s | % of ceiling |\n"
        "|---:|---:|---|---|---:|---:|---:|---:|\n";
  double best_fraction = 0, best_tokens = 0;
  for (const auto& r : set.records) {
    if (r.name != "decode") continue;
    const double f = r.extra.value("fraction_of_ceiling", 0.0);
    md += fmt::format("| {} | {} | {} | `{}` | {:.4f} | {:.0f} | {:.0f} | {:.1f}% |\n", r.params.value("batch", 0),
                      r.params.value("context", 0), r.params.value("mode", std::string()), r.method, r.summary.median,
                      r.extra.value("tokens_per_s", 0.0), r.extra.value("decode_ceiling_tokens_per_s", 0.0), 100 * f);
    if (r.params.value("batch", 0) == 1 && f > best_fraction) {
      best_fraction = f;
      best_tokens = r.extra.value("tokens_per_s", 0.0);
    }
  }
  md += "\n";
  if (best_tokens > 0) {
    ctx.measured[prediction::decode_tokens_per_s] = best_tokens;
    ctx.measured[prediction::decode_fraction_of_ceiling] = best_fraction;
  }
  md += warnings_markdown(set.records);
  return out;
}

SectionOutput profile_section(ReportContext& ctx) {
  ProfileOptions o;
  o.device = ctx.device;
  o.trace = (ctx.folder / "trace.json").string();
  ResultSet set = run_profile(o, ctx.log);
  SectionOutput out;
  out.records = set.records;
  std::string& md = out.markdown;
  md += "One GPT-2 small BF16 decode step (batch 1, 128 tokens) traced with ridge's CUPTI tracer, eager and as a "
        "graph replay. `trace.json` (eager) and `trace-graph.json` open in Perfetto.\n\n";
  md += "| | kernels | kernel span | GPU busy | idle (launch gaps) | idle waiting on the host |\n"
        "|---|---:|---:|---:|---:|---:|\n";
  std::string top;  // the eager step's top kernels, as a table after the per-mode one
  for (const auto& r : set.records) {
    const auto& a = r.extra["analysis"];
    const double span = a.value("kernel_span_ns", 0.0), busy = a.value("gpu_busy_ns", 0.0);
    const double idle = a.value("idle_time_ns", 0.0);
    md += fmt::format("| {} | {} | {} | {} | {:.0f}% | {:.0f}% |\n", r.params.value("mode", std::string()),
                      a.value("kernel_count", 0), format_ms(span / 1e6), format_ms(busy / 1e6),
                      span > 0 ? 100 * idle / span : 0.0, 100 * a.value("host_bound_fraction_of_idle", 0.0));
    if (r.params.value("mode", std::string()) == "eager") {
      ctx.measured[prediction::kernels_per_step] = a.value("kernel_count", 0.0);
      if (span > 0) ctx.measured[prediction::launch_gap_fraction] = idle / span;
      if (a.contains("top_kernels")) {
        top += "\nTop kernels (eager):\n\n| kernel | count | total | % of GPU time |\n|---|---:|---:|---:|\n";
        for (const auto& k : a["top_kernels"])
          top += fmt::format("| `{}` | {} | {} | {:.1f}% |\n", k.value("name", std::string()).substr(0, 80),
                            k["time"].value("count", 0), format_ms(k["time"].value("total_ns", 0.0) / 1e6),
                            k.value("percent_of_kernel_time", 0.0));
      }
    }
  }
  md += top + "\n";
  return out;
}

RIDGE_REGISTER_REPORT_SECTION(ReportSection{"bandwidth", "Bandwidth: x + y from 2^10 to 2^28", 40, SectionMode::gpu,
                                            bandwidth_section});
RIDGE_REGISTER_REPORT_SECTION(ReportSection{"matmul", "Matmul: BF16, speed at a size", 50, SectionMode::gpu,
                                            matmul_section});
RIDGE_REGISTER_REPORT_SECTION(ReportSection{"decode", "Decode: GPT-2 eager vs CUDA graph", 60, SectionMode::gpu,
                                            decode_section});
RIDGE_REGISTER_REPORT_SECTION(ReportSection{"profile", "Profile of one decode step", 70, SectionMode::gpu,
                                            profile_section});

}  // namespace
}  // namespace ridge::cli
