#include "ridge/checks.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"

namespace ridge {

Record to_record(const Measurement& m, const std::string& name, std::optional<DType> dtype, nlohmann::json params,
                 double bytes, double flops) {
  Record r;
  r.name = name;
  r.method = m.method;
  r.dtype = dtype;
  r.params = std::move(params);
  r.samples_ms = m.samples_ms;
  r.summary = m.summary;
  r.repeats_per_sample = m.repeats_per_sample;
  r.l2_flushed = m.l2_flushed;
  r.bytes = bytes;
  r.flops = flops;
  if (!m.stop_reason.empty()) extra_key::stop_reason.set(r, m.stop_reason);
  if (!m.sample_sm_mhz.empty()) extra_key::sample_sm_mhz.set(r, m.sample_sm_mhz);
  if (m.throttled_samples_dropped > 0) extra_key::throttled_samples_dropped.set(r, m.throttled_samples_dropped);
  if (m.rest_before_sample_s > 0) extra_key::rest_before_sample_s.set(r, m.rest_before_sample_s);
  if (m.settle_ms > 0) {
    extra_key::settle_ms.set(r, m.settle_ms);
    extra_key::settled_sm_mhz.set(r, m.settled_sm_mhz);
  }
  r.warnings = measurement_warnings(m);
  if (m.counted) {
    extra_key::counters.set(r, to_json(*m.counted));
    for (const auto& f : compare_counted_work(bytes, flops, *m.counted)) r.warnings.push_back(f.text);
  }
  return r;
}

namespace {

std::string flops_by_precision(const trace::LaunchWork& w) {
  std::vector<std::string> parts;
  for (const auto& [precision, f] : w.flops)
    if (f > 0) parts.push_back(fmt::format("{} {:.4g}", precision, f));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

bool lacks_any(const trace::LaunchWork& w, std::initializer_list<const char*> metrics) {
  for (const char* m : metrics)
    if (std::find(w.missing.begin(), w.missing.end(), m) != w.missing.end()) return true;
  return false;
}

}  // namespace

std::vector<WorkCountFinding> compare_counted_work(double stated_bytes, double stated_flops, const CountedWork& c,
                                                   double tolerance) {
  if (!(tolerance >= 0 && std::isfinite(tolerance)))
    throw UsageError(fmt::format("tolerance must be a finite fraction >= 0, got {}", tolerance));
  std::vector<WorkCountFinding> findings;
  auto not_comparable = [&](const char* quantity, double stated, const std::string& why) {
    findings.push_back({quantity, stated, 0, 0, false, fmt::format("cannot check the {} you count ({:.4g}): {}",
                                                                   quantity, stated, why)});
  };
  auto disagrees = [&](double ratio) { return !(std::abs(ratio - 1) <= tolerance); };
  if (stated_bytes > 0) {
    const double counted = c.work.dram_bytes();
    if (c.kernels == 0) {
      not_comparable("bytes", stated_bytes, "the counted call launched no kernel");
    } else if (lacks_any(c.work, {"dram__bytes_read.sum", "dram__bytes_write.sum"})) {
      not_comparable("bytes", stated_bytes,
                     fmt::format("this GPU gave no DRAM counters ({})", fmt::join(c.work.missing, ", ")));
    } else if (const double ratio = counted / stated_bytes; disagrees(ratio)) {
      findings.push_back(
          {"bytes", stated_bytes, counted, ratio, true,
           fmt::format("counted bytes disagree: you count {:.4g} bytes ({}), the DRAM moved {:.2f}x that ({:.4g} bytes: "
                       "read {:.4g}, written {:.4g}; over {} kernel{}). {}",
                       stated_bytes, format_bytes(stated_bytes), ratio, counted, c.work.dram_read_bytes,
                       c.work.dram_write_bytes, c.kernels, c.kernels == 1 ? "" : "s",
                       ratio < 1 ? "Less than you count: the L2 served part of it (warm data), or the work is smaller "
                                   "than you think"
                                 : "More than you count: extra passes over the data, temporaries, or reads you "
                                   "left out")});
    }
  }
  if (stated_flops > 0) {
    const double counted = c.work.total_flops();
    if (c.kernels == 0) {
      not_comparable("flops", stated_flops, "the counted call launched no kernel");
    } else if (const double ratio = counted / stated_flops; disagrees(ratio)) {
      findings.push_back(
          {"flops", stated_flops, counted, ratio, true,
           fmt::format("counted FLOPs disagree: you count {:.4g} FLOPs, the counters saw {:.2f}x that ({:.4g}: {}). "
                       "They count every floating-point instruction the kernels ran (an FMA as 2) and every tensor-core "
                       "operation, not the arithmetic you have in mind: PyTorch's add computes a + alpha*b, one FMA "
                       "(2 FLOPs) per element where you count 1; a GEMM's epilogue adds one FMA per output; integer "
                       "and conversion work counts nothing",
                       stated_flops, ratio, counted, flops_by_precision(c.work))});
    }
  }
  return findings;
}

std::vector<std::string> measurement_warnings(const Measurement& m) {
  std::vector<std::string> warnings;
  if (m.settle_ms > 0 && !m.settle_reached_steady)
    warnings.push_back(fmt::format("the SM clock was still moving after {:.0f} ms of settling (last read {:.0f} MHz): "
                                   "samples may span a clock ramp",
                                   m.settle_ms, m.settled_sm_mhz));
  if (auto w = launch_bound_warning(m)) warnings.push_back(std::move(*w));
  return warnings;
}

std::optional<std::string> launch_bound_warning(const Measurement& m) {
  if (m.method != Method::cuda_events || !(m.host_queue_ms > 0) || !(m.summary.median > 0)) return std::nullopt;
  const double share = m.host_queue_ms / m.summary.median;
  if (share < host_latency_dominant_share) return std::nullopt;
  return fmt::format(
      "launch-bound: the host took {} per call to queue the work, {:.0f}% of the {} measured, so the GPU waited on "
      "the launches and this is the host's launch rate, not the work's time; time it launch-free (spin_hold or "
      "graph_replay)",
      format_ms(m.host_queue_ms), share * 100, format_ms(m.summary.median));
}

bool includes_host_latency(const Record& r) {
  return r.repeats_per_sample == 1 && (r.method == Method::cuda_events || r.method == Method::wall_sync);
}

std::optional<RecordGate> host_latency_gate(const Record& r, double host_latency_ms) {
  if (!(host_latency_ms > 0) || !(r.summary.median > 0)) return std::nullopt;
  const double share = std::min(1.0, host_latency_ms / r.repeats_per_sample / r.summary.median);
  RecordGate g;
  if (share >= host_latency_dominant_share) {
    g.informational = true;
    g.reason = fmt::format("host launch latency ({}) is {:.0f}% of this number and moves from process to process",
                           format_ms(host_latency_ms), share * 100);
  } else {
    g.min_threshold = host_latency_run_to_run_spread * share;
    g.reason = fmt::format("host launch latency ({}) is {:.1f}% of this number; it moves up to {:.0f}% between runs",
                           format_ms(host_latency_ms), share * 100, host_latency_run_to_run_spread * 100);
  }
  return g;
}

std::optional<double> gate_by_host_latency(std::vector<Record*> same_case) {
  double events = -1, launch_free = -1;
  for (const Record* r : same_case) {
    if (r->method == Method::cuda_events && r->repeats_per_sample == 1)
      events = events < 0 ? r->summary.median : std::min(events, r->summary.median);
    if (r->method == Method::spin_hold || r->method == Method::graph_replay)
      launch_free = launch_free < 0 ? r->summary.median : std::min(launch_free, r->summary.median);
  }
  if (events <= 0 || launch_free <= 0) return std::nullopt;
  const double latency = std::max(0.0, events - launch_free);
  for (Record* r : same_case)
    if (includes_host_latency(*r))
      if (auto g = host_latency_gate(*r, latency)) r->gate = std::move(g);
  return latency;
}

double fastest_known_peak_flops(DType dtype) {
  // The highest dense datasheet peak of any device in the catalog (built-in and a user's file).
  // fp16/bf16 also take the fp16 figure of a part listed only with FP16 (and vice versa): both run
  // on the same tensor cores at the same rate.
  double best = 0;
  auto scan = [&](const std::vector<CatalogEntry>& entries) {
    for (const auto& e : entries) {
      if (auto p = e.peak(dtype)) best = std::max(best, *p);
      if (dtype == DType::fp16 || dtype == DType::bf16)
        for (DType other : {DType::fp16, DType::bf16})
          if (auto p = e.peak(other)) best = std::max(best, *p);
    }
  };
  scan(builtin_catalog());
  scan(catalog());
  return best;
}

std::vector<std::string> impossible_rate_findings(double flops_per_s, double bytes_per_s) {
  double fastest_flops = 0, fastest_bandwidth = 0;
  for (const auto* entries : {&builtin_catalog(), &catalog()})
    for (const auto& e : *entries) {
      fastest_flops = std::max(fastest_flops, e.ceilings.highest_peak_flops());
      fastest_bandwidth = std::max(fastest_bandwidth, e.ceilings.memory_bytes_per_s);
    }
  std::vector<std::string> findings;
  if (flops_per_s > 0 && fastest_flops > 0 && flops_per_s > fastest_flops * ceiling_slack)
    findings.push_back(fmt::format(
        "impossible: {:.4g} TFLOP/s is above the fastest peak of any GPU in ridge's catalog ({:.4g} TFLOP/s): the "
        "time is not the work's (a naive wall clock times the launch queue), or the FLOPs are overstated",
        flops_per_s / 1e12, fastest_flops / 1e12));
  const double bandwidth_limit = fastest_bandwidth * cache_bandwidth_multiple;
  if (bytes_per_s > 0 && bandwidth_limit > 0 && bytes_per_s > bandwidth_limit)
    findings.push_back(fmt::format(
        "impossible: {:.4g} GB/s is above {:g}x the fastest memory bandwidth in ridge's catalog ({:.4g} GB/s), "
        "beyond any cache: the time is not the work's, or the bytes are overstated",
        bytes_per_s / 1e9, cache_bandwidth_multiple, fastest_bandwidth / 1e9));
  return findings;
}

std::vector<std::string> add_plausibility_warnings(Record& r, const std::optional<DeviceCeilings>& ceilings,
                                                   double l2_bytes, double cv_limit) {
  std::vector<std::string> added;
  // The record's own dtype roof; without one the highest roof, so an unknown dtype never looks impossible.
  const double peak = !ceilings ? 0
                      : r.dtype && ceilings->peak(*r.dtype) ? *ceilings->peak(*r.dtype)
                                                            : ceilings->highest_peak_flops();
  if (ceilings && ceilings->memory_bytes_per_s > 0 && peak > 0 && r.summary.median > 0 &&
      (r.bytes > 0 || r.flops > 0)) {
    const double floor_s = roofline_floor_s(r.bytes, r.flops, peak, ceilings->memory_bytes_per_s);
    if (r.median_s() < floor_s / ceiling_slack)
      added.push_back(fmt::format(
          "impossible: {} is faster than the roofline floor {} ({}); you timed the launch queue, not the work",
          format_ms(r.summary.median), format_ms(floor_s * 1e3), ceilings->source_text));
  }
  if (r.summary.count > 2 && r.summary.cv > cv_limit)
    added.push_back(fmt::format("high spread: CV {:.1f}% (> {:.0f}%); take more samples or check for other load",
                                r.summary.cv * 100, cv_limit * 100));
  if (l2_bytes > 0 && r.params.contains(param_key::working_set_bytes) && !r.l2_flushed) {
    const double ws = r.params[param_key::working_set_bytes].get<double>();
    if (ws <= l2_bytes)
      added.push_back(fmt::format("cache-resident: working set {} fits in the {} L2; this measures the cache",
                                  format_bytes(ws), format_bytes(l2_bytes)));
  }
  const double a = r.clocks_start.sm_mhz, b = r.clocks_end.sm_mhz;
  if (const nlohmann::json d = extra_key::clocks_during.get(r); d.is_object() && d.value("readings", 0) > 0) {
    const double lo = d.value("sm_mhz_min", -1.0), hi = d.value("sm_mhz_max", -1.0);
    if (lo > 0 && hi > 0 && (hi - lo) / hi > 0.05)
      added.push_back(fmt::format("clocks moved during sampling: SM clock {:.0f}-{:.0f} MHz{}", lo, hi,
                                  d.value("throttle_reason_names", std::string()).empty()
                                      ? std::string()
                                      : " (" + d.value("throttle_reason_names", std::string()) + ")"));
  } else if (a > 0 && b > 0 && std::abs(a - b) / std::max(a, b) > 0.10) {
    added.push_back(fmt::format("clocks moved: SM clock {:.0f} MHz at start, {:.0f} MHz at end", a, b));
  }
  for (const auto& w : added) r.warnings.push_back(w);
  return added;
}

}  // namespace ridge
