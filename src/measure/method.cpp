#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/errors.hpp"
#include "ridge/measure.hpp"

namespace ridge {

std::string to_string(Method m) {
  switch (m) {
    case Method::cpu_wall: return "cpu_wall";
    case Method::wall_naive: return "wall_naive";
    case Method::wall_sync: return "wall_sync";
    case Method::cuda_events: return "cuda_events";
    case Method::spin_hold: return "spin_hold";
    case Method::graph_replay: return "graph_replay";
    case Method::cupti_trace: return "cupti_trace";
    case Method::none: return "none";
  }
  return "unknown";
}

bool is_timer(Method m) { return m != Method::cupti_trace && m != Method::none; }

void require_timer(Method m, const char* field) {
  if (is_timer(m)) return;
  std::vector<std::string> timers;
  for (Method t : all_methods)
    if (is_timer(t)) timers.push_back(to_string(t));
  throw UsageError(fmt::format("{}: {} is not a timer ({}); use one of {}", field, to_string(m), describe(m),
                               fmt::join(timers, ", ")));
}

const std::vector<std::pair<std::string, Method>>& method_names() {
  static const std::vector<std::pair<std::string, Method>> names = {
      {"cpu_wall", Method::cpu_wall},       {"wall_naive", Method::wall_naive},  {"naive", Method::wall_naive},
      {"wall_sync", Method::wall_sync},     {"wall", Method::wall_sync},         {"sync", Method::wall_sync},
      {"cuda_events", Method::cuda_events}, {"events", Method::cuda_events},     {"spin_hold", Method::spin_hold},
      {"spin", Method::spin_hold},          {"graph_replay", Method::graph_replay}, {"graph", Method::graph_replay}};
  return names;
}

Method method_from_string(const std::string& name) {
  for (const auto& [known, method] : method_names())
    if (name == known) return method;
  throw UsageError(fmt::format("unknown timing method '{}': use one of naive, wall, events, spin, graph", name));
}

std::string describe(Method m) {
  switch (m) {
    case Method::cpu_wall: return "wall clock around CPU work";
    case Method::wall_naive:
      return "wall clock with no synchronization: measures how long it took to queue the work, not the work";
    case Method::wall_sync:
      return "wall clock with the GPU synchronized before and after: what a caller waits, including launch and sync costs";
    case Method::cuda_events:
      return "CUDA events around each sample on the GPU's clock; includes the host's launch latency when the GPU was idle";
    case Method::spin_hold:
      return "CUDA events with the stream held by a spin kernel until the sample was queued: GPU time without host launch latency";
    case Method::graph_replay:
      return "repetitions captured in one CUDA graph and replayed behind a held stream: GPU time per call, launch gaps minimized";
    case Method::cupti_trace:
      return "kernel durations read from a CUPTI activity trace: GPU time of each kernel, without launch gaps";
    case Method::none: return "no timing: a check that carries no time";
  }
  return "";
}

}  // namespace ridge
