// Amdahl's law fed from a trace: what making one kernel S times faster would give.
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/roofline.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/what_if.hpp"

namespace ridge::trace {

namespace {

std::string t(Nanoseconds ns) { return format_ms(static_cast<double>(ns) / 1e6); }

}  // namespace

KernelWhatIf kernel_what_if(const Trace& trace, const std::string& kernel, double speedup) {
  if (!(speedup > 0)) throw UsageError(fmt::format("speedup must be > 0 (got {})", speedup));
  if (kernel.empty()) throw UsageError("kernel needs a kernel name (or part of one)");
  KernelWhatIf w;
  w.query = kernel;
  w.speedup = speedup;
  std::unordered_map<std::uint32_t, bool> matches;  // name id -> matched
  auto exact = trace.strings.find(kernel);
  bool any_exact = false;
  if (exact)
    for (const auto& k : trace.kernels)
      if (k.name == *exact) {
        any_exact = true;
        break;
      }
  for (const auto& k : trace.kernels) {
    auto [it, inserted] = matches.try_emplace(k.name, false);
    if (inserted) it->second = any_exact ? k.name == *exact : trace.strings.at(k.name).find(kernel) != std::string::npos;
    if (!it->second) continue;
    ++w.launches;
    w.kernel_time_ns += k.end > k.start ? k.end - k.start : 0;
  }
  for (const auto& [id, matched] : matches)
    if (matched) w.matched.push_back(trace.strings.at(id));
  std::sort(w.matched.begin(), w.matched.end());
  if (w.matched.empty()) {
    const Analysis a = analyze(trace, AnalysisOptions{.top = 5});
    std::string names;
    for (const auto& k : a.top_kernels) names += "\n  " + k.name;
    throw UsageError(fmt::format("no kernel in the trace matches \"{}\" ({} kernels, {} distinct). The top kernels by time:{}",
                                 kernel, a.kernel_count, a.distinct_kernels, names.empty() ? " none" : names));
  }
  std::vector<std::pair<Nanoseconds, Nanoseconds>> intervals;
  intervals.reserve(trace.kernels.size());
  for (const auto& k : trace.kernels) intervals.emplace_back(k.start, k.end);
  const Nanoseconds busy = union_length(std::move(intervals));
  const Nanoseconds span = trace.event_count() > 0 ? trace.last_end() - trace.origin() : 0;
  const double kt = static_cast<double>(w.kernel_time_ns);
  w.fraction_of_busy = busy > 0 ? std::min(1.0, kt / static_cast<double>(busy)) : 0;
  w.fraction_of_span = span > 0 ? std::min(1.0, kt / static_cast<double>(span)) : 0;
  w.overall_speedup_busy = amdahl_speedup(w.fraction_of_busy, speedup);
  w.overall_speedup_span = amdahl_speedup(w.fraction_of_span, speedup);
  w.busy_saved_ns = static_cast<Nanoseconds>(std::llround(kt * (1 - 1 / speedup)));
  w.explanation = fmt::format(
      "{} launch{} of {} kernel name{} took {} in total: {} of the GPU's busy time ({}) and {} of the traced wall span "
      "({}). Made {:g}x faster, the GPU's busy time shrinks {:.3f}x (Amdahl on busy time: the gain if the GPU is the "
      "bottleneck); the wall span shrinks at most {:.3f}x (Amdahl on the span: the gain if the host never waits for "
      "the GPU, less if the GPU was idle waiting for the host).",
      w.launches, w.launches == 1 ? "" : "es", w.matched.size(), w.matched.size() == 1 ? "" : "s", t(w.kernel_time_ns),
      format_percent(w.fraction_of_busy), t(busy), format_percent(w.fraction_of_span), t(span), speedup, w.overall_speedup_busy,
      w.overall_speedup_span);
  return w;
}

}  // namespace ridge::trace
