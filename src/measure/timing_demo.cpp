// The CPU side of the three-clocks timing exercise: option checks and the comparison of readings.
#include "ridge/timing.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"

namespace ridge {

void TimingDemoOptions::validate() const {
  if (n <= 0) throw UsageError(fmt::format("n must be > 0, got {}", n));
  if (small_n <= 0) throw UsageError(fmt::format("small_n must be > 0, got {}", small_n));
  if (samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", samples));
  if (warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", warmup));
  if (repeats < 1) throw UsageError(fmt::format("repeats must be >= 1, got {}", repeats));
  if (!(inject_slowdown_us >= 0) || !std::isfinite(inject_slowdown_us))
    throw UsageError(fmt::format("inject_slowdown_us must be a number of microseconds >= 0, got {}", inject_slowdown_us));
  dtype_from_string(dtype);
  dtype_from_string(small_dtype);
  gemm_backend_from_string(backend);
}

const Record* TimingCase::find(Method method) const {
  for (const auto& m : methods)
    if (m.record.method == method) return &m.record;
  return nullptr;
}

std::vector<Record> TimingDemo::records() const {
  std::vector<Record> out;
  for (const auto* c : {&large, &small})
    for (const auto& m : c->methods) out.push_back(m.record);
  return out;
}

namespace {

Record& reading(TimingCase& c, Method method, const char* which) {
  for (auto& m : c.methods)
    if (m.record.method == method) return m.record;
  throw Error(fmt::format("the timing exercise's {} case has no {} reading", which, to_string(method)));
}

// Each row's clocks into its record, and the table's findings: rows at different clocks, rows
// measured at reduced clocks.
void analyze_clocks(TimingCase& c, double rated_sm_mhz) {
  std::vector<std::string> labels;
  std::vector<RowClocks> rows;
  for (auto& m : c.methods) {
    m.clocks = record_clocks(m.record, rated_sm_mhz);
    if (annotate_clocks(m.record, m.clocks))
      c.clock_findings.push_back(fmt::format("{}: {} of {} samples ran at reduced clocks (below {:.0f} MHz)",
                                             to_string(m.record.method), m.clocks.reduced_count, m.clocks.sample_sm_mhz.size(),
                                             m.clocks.reduced_below_mhz));
    labels.push_back(to_string(m.record.method));
    rows.push_back(m.clocks);
  }
  if (auto spread = clock_spread_finding(labels, rows)) c.clock_findings.insert(c.clock_findings.begin(), *spread);
}

}  // namespace

void analyze_timing_demo(TimingDemo& d) {
  Record& naive = reading(d.large, Method::wall_naive, "large");
  Record& wall = reading(d.large, Method::wall_sync, "large");
  Record& events = reading(d.large, Method::cuda_events, "large");
  if (d.options.inject_slowdown_us > 0)
    for (Record* r : {&naive, &wall, &events})
      r->warnings.push_back(fmt::format(
          "deliberately slowed by inject_slowdown_us (a testing aid): {:.1f} us of GPU busy-wait per call",
          d.options.inject_slowdown_us));

  d.impossible_above_flops_per_s = fastest_known_peak_flops(d.large.dtype);
  d.naive_flops_per_s = naive.flops_per_s();
  d.naive_impossible = d.naive_flops_per_s > d.impossible_above_flops_per_s;
  if (d.naive_impossible)
    naive.warnings.push_back(fmt::format(
        "impossible: implies {} while the fastest GPU known peaks at {} for {}; this timed the launch queue, not the work",
        format_flops(d.naive_flops_per_s), format_flops(d.impossible_above_flops_per_s), to_string(d.large.dtype)));
  naive.warnings.push_back("wrong method: no synchronization, so the work had not run when the clock stopped");
  add_plausibility_warnings(wall, std::nullopt);
  add_plausibility_warnings(events, std::nullopt);
  d.wall_over_naive = wall.summary.median / naive.summary.median;
  d.wall_vs_events_relative_difference = std::abs(wall.summary.median - events.summary.median) / events.summary.median;
  extra_key::wall_sync_vs_events_relative_difference.set(events, d.wall_vs_events_relative_difference);
  extra_key::wall_sync_over_naive.set(naive, d.wall_over_naive);

  Record& small_events = reading(d.small, Method::cuda_events, "small");
  Record& spin = reading(d.small, Method::spin_hold, "small");
  Record& graph = reading(d.small, Method::graph_replay, "small");
  for (Record* r : {&small_events, &spin, &graph}) add_plausibility_warnings(*r, std::nullopt);
  const double launch_free = std::min(spin.summary.median, graph.summary.median);
  d.launch_overhead_ms = small_events.summary.median - launch_free;
  d.events_over_launch_free = small_events.summary.median / launch_free;

  // How compare may judge each row: the naive row demonstrates a wrong method; rows that carry the
  // host's launch latency gate by its share of their number (the small case's events: most of it).
  naive.gate = RecordGate{.informational = true,
                          .reason = "demonstrates the wrong method: it times the launch queue, not the work"};
  gate_by_host_latency({&small_events, &spin, &graph});
  for (Record* r : {&wall, &events})
    if (includes_host_latency(*r)) r->gate = host_latency_gate(*r, d.launch_overhead_ms);

  analyze_clocks(d.large, d.rated_sm_mhz);
  analyze_clocks(d.small, d.rated_sm_mhz);
}

}  // namespace ridge
