#include "ridge/checks.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ridge/catalog.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"

namespace ridge {

Record to_record(const Measurement& m, const std::string& name, const std::string& dtype, nlohmann::json params,
                 double bytes, double flops) {
  Record r;
  r.name = name;
  r.method = to_string(m.method);
  r.dtype = dtype;
  r.params = std::move(params);
  r.samples_ms = m.samples_ms;
  r.summary = m.summary;
  r.repeats_per_sample = m.repeats_per_sample;
  r.l2_flushed = m.l2_flushed;
  r.bytes = bytes;
  r.flops = flops;
  if (!m.stop_reason.empty()) r.extra["stop_reason"] = m.stop_reason;
  if (!m.sample_sm_mhz.empty()) r.extra["sample_sm_mhz"] = m.sample_sm_mhz;
  return r;
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

std::vector<std::string> add_plausibility_warnings(Record& r, const std::optional<DeviceCeilings>& ceilings,
                                                   double l2_bytes, double cv_limit) {
  std::vector<std::string> added;
  // The record's own dtype roof; without one the highest roof, so an unknown dtype never looks impossible.
  const double peak = !ceilings ? 0
                      : ceilings->peak_flops(r.dtype) > 0 ? ceilings->peak_flops(r.dtype)
                                                          : ceilings->highest_peak_flops();
  if (ceilings && ceilings->memory_bytes_per_s > 0 && peak > 0 && r.summary.median > 0 &&
      (r.bytes > 0 || r.flops > 0)) {
    const double floor_s = roofline_floor_s(r.bytes, r.flops, peak, ceilings->memory_bytes_per_s);
    // 5% slack: datasheet ceilings are rounded, and clocks can boost a little above them.
    if (r.median_s() < floor_s * 0.95)
      added.push_back(fmt::format(
          "impossible: {} is faster than the roofline floor {} ({}); you timed the launch queue, not the work",
          format_ms(r.summary.median), format_ms(floor_s * 1e3), ceilings->source_text));
  }
  if (r.summary.count > 2 && r.summary.cv > cv_limit)
    added.push_back(fmt::format("high spread: CV {:.1f}% (> {:.0f}%); take more samples or check for other load",
                                r.summary.cv * 100, cv_limit * 100));
  if (l2_bytes > 0 && r.params.contains("working_set_bytes") && !r.l2_flushed) {
    const double ws = r.params["working_set_bytes"].get<double>();
    if (ws <= l2_bytes)
      added.push_back(fmt::format("cache-resident: working set {} fits in the {} L2; this measures the cache",
                                  format_bytes(ws), format_bytes(l2_bytes)));
  }
  const double a = r.clocks_start.sm_mhz, b = r.clocks_end.sm_mhz;
  if (r.extra.contains("clocks_during") && r.extra["clocks_during"].value("readings", 0) > 0) {
    const auto& d = r.extra["clocks_during"];
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
