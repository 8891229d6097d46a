// What ridge keeps beside a trace's events, shared by its two file formats: the "ridge" metadata
// object (clock origin, command, collection, devices, counters) and the "distributedInfo" that
// Holistic Trace Analysis reads (src/trace/model/chrome_json.cpp).
#pragma once
#include <cstdint>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "ridge/trace/events.hpp"

namespace ridge::detail {

/// The "ridge" object: the clock's `origin` (times in the file are relative to it), the host
/// process's id as the file shows it (`host_pid`), and how the trace was collected.
nlohmann::json ridge_metadata_json(const trace::Trace& trace, trace::Nanoseconds origin, std::int64_t host_pid);
/// {rank, world_size, backend}.
nlohmann::json distributed_info_json(const trace::DistributedInfo& info);

/// What read_ridge_metadata finds beside the fields it sets in the Trace.
struct RidgeMetadata {
  trace::Nanoseconds origin = 0;
  std::int64_t host_pid = -1;
};
/// Reads a "ridge" object into `trace`; throws (UsageError, nlohmann) when it is malformed.
RidgeMetadata read_ridge_metadata(const nlohmann::json& metadata, trace::Trace& trace);
/// Reads a "distributedInfo" object into trace.distributed, where it is well formed.
void read_distributed_info(const nlohmann::json& info, trace::Trace& trace);

/// The launch call of each correlation id (the runtime call where both a runtime and a driver
/// call carry it): where the trace draws an arrow from a call to the GPU work it queued.
std::unordered_map<std::uint32_t, const trace::ApiCall*> launch_calls_by_correlation(const trace::Trace& trace);

/// parse_chrome_json reading every event through a DOM instead of straight from its tokens: what
/// the tests and the fuzzer compare the fast reader against (both must give the same trace or
/// the same error).
trace::Trace parse_chrome_json_through_dom(const std::string& text, const std::string& source = "the trace");

}  // namespace ridge::detail
