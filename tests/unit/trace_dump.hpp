// Every field of a Trace as text, one event a line: tests compare traces read two ways (the
// Chrome JSON and Perfetto readers, a stored trace against what an earlier reader gave) with it.
#pragma once
#include <string>

#include <fmt/format.h>

#include "ridge/trace/events.hpp"
#include "ridge/writers.hpp"

inline std::string describe_trace(const ridge::trace::Trace& t) {
  using namespace ridge::trace;
  std::string s;
  auto o = std::back_inserter(s);
  auto name = [&](std::uint32_t id) { return t.strings.at(id); };
  fmt::format_to(o, "process {} command '{}' window '{}' dropped {} incomplete {} collection {}..{}\n", t.process_id,
                 t.command, t.window, t.dropped_records, t.incomplete_records, t.collection_start, t.collection_stop);
  fmt::format_to(o, "distributed rank {} world {} local {} backend '{}' launcher '{}' job '{}' host '{}'\n",
                 t.distributed.rank, t.distributed.world_size, t.distributed.local_rank, t.distributed.backend,
                 t.distributed.launcher, t.distributed.job, t.distributed.host);
  for (const auto& [id, n] : std::map<std::uint32_t, std::string>(t.device_names.begin(), t.device_names.end()))
    fmt::format_to(o, "device {} '{}'\n", id, n);
  for (const auto& r : t.rejected_events) fmt::format_to(o, "rejected {} '{}'\n", r.count, r.reason);
  fmt::format_to(o, "counters {}\n", t.counters.metrics.empty() ? std::string("none") : ridge::json_text(to_json(t.counters), -1));
  for (const auto& k : t.kernels)
    fmt::format_to(o, "kernel '{}' dev {} stream {} {}..{} grid {},{},{} block {},{},{} corr {} ext {} regs {} smem {} graph {} queued {}\n",
                   name(k.name), k.device, k.stream, k.start, k.end, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y,
                   k.block.z, k.correlation, k.external_id, k.registers_per_thread, k.shared_memory_bytes, k.graph_id, k.queued);
  for (const auto& m : t.memcpys)
    fmt::format_to(o, "memcpy {} {} B dev {} stream {} {}..{} corr {} ext {}\n", to_string(m.kind), m.bytes, m.device,
                   m.stream, m.start, m.end, m.correlation, m.external_id);
  for (const auto& m : t.memsets)
    fmt::format_to(o, "memset {} B dev {} stream {} {}..{} corr {} ext {}\n", m.bytes, m.device, m.stream, m.start, m.end,
                   m.correlation, m.external_id);
  for (const auto& a : t.api_calls)
    fmt::format_to(o, "api {} '{}' {}/{} {}..{} corr {} ext {}\n", a.domain == ApiDomain::runtime ? "runtime" : "driver",
                   name(a.name), a.process, a.thread, a.start, a.end, a.correlation, a.external_id);
  for (const auto& y : t.syncs)
    fmt::format_to(o, "sync {} dev {} stream {} {}..{} corr {}\n", to_string(y.kind), y.device, y.stream, y.start, y.end,
                   y.correlation);
  for (const auto& r : t.ranges)
    fmt::format_to(o, "range '{}' {}/{} {}..{} depth {} marker {}\n", name(r.name), r.process, r.thread, r.start, r.end,
                   r.depth, r.marker);
  return s;
}
