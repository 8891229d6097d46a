// The CUPTI collector's activity records: the buffers CUPTI fills, and each record in them
// (kernels, copies, memsets, API calls, waits, NVTX markers, external correlations, devices)
// turned into an event of the trace model (collector_state.hpp).
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "trace/cupti/collector_state.hpp"
#include "trace/model/record_times.hpp"

namespace ridge::detail::collector {

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  const std::size_t bytes = state().buffer_bytes.load();
  state().buffers_requested.fetch_add(1, std::memory_order_relaxed);
  // Zeroed memory (fresh pages from calloc), so CUPTI need not clear it on the traced thread.
  *buffer = static_cast<uint8_t*>(std::calloc(1, bytes));
  *size = *buffer != nullptr ? bytes : 0;  // a zero-size buffer makes CUPTI count drops, never crash
  *max_records = 0;
}

std::uint32_t api_name(State& s, bool runtime, std::uint32_t cbid) {
  auto& ids = runtime ? s.runtime_ids : s.driver_ids;
  auto it = ids.find(cbid);
  if (it != ids.end()) return it->second;
  const auto& names = runtime ? s.runtime_names : s.driver_names;
  std::string name = cbid < names.size() && !names[cbid].empty() ? names[cbid]
                                                                  : fmt::format("{}_api_{}", runtime ? "cuda" : "cu", cbid);
  const std::uint32_t id = s.trace.strings.intern(name);
  ids.emplace(cbid, id);
  return id;
}

namespace {

trace::MemcpyKind memcpy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return trace::MemcpyKind::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return trace::MemcpyKind::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return trace::MemcpyKind::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return trace::MemcpyKind::host_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return trace::MemcpyKind::peer_to_peer;
    default: return trace::MemcpyKind::unknown;
  }
}

trace::SyncKind sync_kind(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return trace::SyncKind::event_synchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return trace::SyncKind::stream_wait_event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return trace::SyncKind::stream_synchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return trace::SyncKind::context_synchronize;
    default: return trace::SyncKind::unknown;
  }
}

/// Whether a GPU record's times make a span; a record without them is counted as incomplete, one
/// that ends before it begins as rejected.
bool complete(trace::Trace& t, Nanoseconds start, Nanoseconds end) {
  switch (classify_record_times(start, end)) {
    case RecordTimes::complete: return true;
    case RecordTimes::missing: ++t.incomplete_records; return false;
    case RecordTimes::reversed: t.count_rejected(reversed_gpu_records); return false;
  }
  return false;
}

/// A host record's end; one before its start is counted and kept with zero duration (its
/// correlation id still joins a launch to its kernel).
Nanoseconds host_record_end(trace::Trace& t, Nanoseconds start, Nanoseconds end) {
  if (end >= start) return end;
  t.count_rejected(reversed_host_records);
  return start;
}

/// The fields a copy or fill record shares; false (counted as incomplete) when CUPTI left it
/// without timestamps.
template <typename Record, typename Event>
bool read_transfer(State& s, const Record* r, Event& e) {
  if (!complete(s.trace, r->start, r->end)) return false;
  e.bytes = r->bytes;
  e.device = r->deviceId;
  e.stream = r->streamId;
  e.start = r->start;
  e.end = r->end;
  e.correlation = r->correlationId;
  s.context_device[r->contextId] = r->deviceId;
  return true;
}

void add_record(State& s, const CUpti_Activity* record) {
  trace::Trace& t = s.trace;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      // Later CUPTI versions only append fields, so the CUDA 13.0 layout reads newer records too.
      const auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      // A kernel replayed for its counters comes without GPU times: collector_stop places it.
      const bool replayed = s.options.counters && classify_record_times(r->start, r->end) == RecordTimes::missing;
      if (!replayed && !complete(t, r->start, r->end)) return;
      trace::Kernel k;
      auto it = s.kernel_names.find(r->name);
      if (it == s.kernel_names.end()) it = s.kernel_names.emplace(r->name, t.strings.intern(trace::demangle(r->name))).first;
      k.name = it->second;
      k.device = r->deviceId;
      k.stream = r->streamId;
      k.start = r->start;
      k.end = r->end;
      k.grid = {r->gridX, r->gridY, r->gridZ};
      k.block = {r->blockX, r->blockY, r->blockZ};
      k.correlation = r->correlationId;
      k.registers_per_thread = r->registersPerThread;
      k.shared_memory_bytes = static_cast<std::uint32_t>(r->staticSharedMemory + r->dynamicSharedMemory);
      k.graph_id = r->graphId;
      // Host and GPU times share CUPTI's clock; a queue time after the start would be a bad record.
      if (r->queued != 0 && r->queued != CUPTI_TIMESTAMP_UNKNOWN && r->queued <= r->start) k.queued = r->queued;
      s.context_device[r->contextId] = r->deviceId;
      (replayed ? s.replayed_kernels : t.kernels).push_back(k);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      trace::Memcpy m;
      if (!read_transfer(s, r, m)) return;
      m.kind = memcpy_kind(r->copyKind);
      t.memcpys.push_back(m);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      trace::Memset m;
      if (!read_transfer(s, r, m)) return;
      t.memsets.push_back(m);
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      // Gated, the collector records the profiler calls itself (on_callback): CUPTI's own record
      // of them depends on when in the call collection was switched, so it is left out.
      if (s.gated.load(std::memory_order_relaxed) && is_profiler_call(runtime, r->cbid)) return;
      trace::ApiCall a;
      a.domain = runtime ? trace::ApiDomain::runtime : trace::ApiDomain::driver;
      a.name = api_name(s, runtime, r->cbid);
      a.process = r->processId;
      a.thread = r->threadId;
      a.start = r->start;
      a.end = host_record_end(t, r->start, r->end);
      a.correlation = r->correlationId;
      t.api_calls.push_back(a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      trace::Sync y;
      y.kind = sync_kind(r->type);
      y.stream = r->streamId;
      y.start = r->start;
      y.end = host_record_end(t, r->start, r->end);
      y.correlation = r->correlationId;
      t.syncs.push_back(y);
      s.sync_contexts.push_back(r->contextId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      std::uint32_t process = 0, thread = 0;
      if (r->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || r->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
        process = r->objectId.pt.processId;
        thread = r->objectId.pt.threadId;
      }
      if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        trace::NvtxRange m;
        m.name = t.strings.intern(r->name ? r->name : "(unnamed)");
        m.process = process;
        m.thread = thread;
        m.start = m.end = r->timestamp;
        m.marker = true;
        t.ranges.push_back(m);
      } else if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        s.open_ranges[r->id] = PendingRange{t.strings.intern(r->name ? r->name : "(unnamed)"), process, thread, r->timestamp};
      } else if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = s.open_ranges.find(r->id);
        if (it == s.open_ranges.end()) return;  // began before the trace started
        trace::NvtxRange range;
        range.name = it->second.name;
        range.process = it->second.process;
        range.thread = it->second.thread;
        range.start = it->second.start;
        range.end = host_record_end(t, range.start, r->timestamp);
        t.ranges.push_back(range);
        s.open_ranges.erase(it);
      }
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* r = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      t.external_correlations.push_back({r->correlationId, r->externalId, static_cast<std::uint32_t>(r->externalKind)});
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* r = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      if (r->name != nullptr) t.device_names[r->id] = r->name;
      return;
    }
    default:
      return;
  }
}

}  // namespace

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  State& s = state();
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t records = 0;
  {
    std::lock_guard<std::mutex> lock(s.data);
    CUpti_Activity* record = nullptr;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      add_record(s, record);
      ++records;
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) s.trace.dropped_records += dropped;
  }
  std::free(buffer);
  s.records.fetch_add(records, std::memory_order_relaxed);
  s.buffers_completed.fetch_add(1, std::memory_order_relaxed);
  if (static_cast<pid_t>(syscall(SYS_gettid)) == s.start_thread) s.completions_on_start_thread.fetch_add(1, std::memory_order_relaxed);
  s.completion_ns.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - t0).count()),
                            std::memory_order_relaxed);
}

}  // namespace ridge::detail::collector
