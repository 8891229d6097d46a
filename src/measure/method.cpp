#include <fmt/format.h>

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
  }
  return "unknown";
}

Method method_from_string(const std::string& name) {
  if (name == "cpu_wall") return Method::cpu_wall;
  if (name == "wall_naive" || name == "naive") return Method::wall_naive;
  if (name == "wall_sync" || name == "wall" || name == "sync") return Method::wall_sync;
  if (name == "cuda_events" || name == "events") return Method::cuda_events;
  if (name == "spin_hold" || name == "spin") return Method::spin_hold;
  if (name == "graph_replay" || name == "graph") return Method::graph_replay;
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
  }
  return "";
}

}  // namespace ridge
