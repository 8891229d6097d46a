// Perfetto's protobuf trace format (https://perfetto.dev/docs/reference/synthetic-track-event):
// one TracePacket per slice begin and end, on a TrackDescriptor per host thread and GPU stream,
// with names, categories and argument names interned once. About a quarter of the Chrome JSON's
// size and read seven times faster (results/cpu/trace_scale); Perfetto's UI and trace processor
// open it natively.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/trace/perfetto.hpp"
#include "ridge/writers.hpp"
#include "trace/model/chrome_metadata.hpp"
#include "trace/model/chunked_file.hpp"
#include "trace/model/event_fields.hpp"
#include "trace/model/protobuf_wire.hpp"

namespace ridge::trace {

namespace {

using wire::Field;
using wire::MessageReader;
using wire::MessageWriter;
using wire::WireType;

// Field numbers of Perfetto's protos (protos/perfetto/trace/trace.proto, trace_packet.proto,
// track_event/track_event.proto, track_descriptor.proto, process_descriptor.proto,
// thread_descriptor.proto, debug_annotation.proto, interned_data/interned_data.proto).
namespace pf {
constexpr std::uint32_t trace_packet = 1;  // Trace.packet
constexpr std::uint32_t packet_timestamp = 8, packet_sequence_id = 10, packet_track_event = 11,
                        packet_interned_data = 12, packet_sequence_flags = 13, packet_track_descriptor = 60;
constexpr std::uint32_t track_uuid = 1, track_name = 2, track_process = 3, track_thread = 4, track_parent_uuid = 5;
constexpr std::uint32_t process_pid = 1, process_name = 6;
constexpr std::uint32_t thread_pid = 1, thread_tid = 2, thread_name = 5;
constexpr std::uint32_t event_category_iids = 3, event_debug_annotations = 4, event_type = 9, event_name_iid = 10,
                        event_track_uuid = 11, event_name = 23, event_flow_ids = 47, event_terminating_flow_ids = 48;
constexpr std::uint32_t interned_event_categories = 1, interned_event_names = 2, interned_debug_annotation_names = 3;
constexpr std::uint32_t interned_iid = 1, interned_name = 2;  // EventCategory, EventName, DebugAnnotationName
constexpr std::uint32_t annotation_name_iid = 1, annotation_bool = 2, annotation_uint = 3, annotation_int = 4,
                        annotation_double = 5, annotation_string = 6;
constexpr std::uint64_t slice_begin = 1, slice_end = 2, instant = 3;  // TrackEvent.Type
constexpr std::uint32_t incremental_state_cleared = 1, needs_incremental_state = 2;  // TracePacket.SequenceFlags
}  // namespace pf

/// The one packet sequence ridge writes (Perfetto interns per sequence).
constexpr std::uint32_t sequence_id = 1;

/// Event categories and argument (debug annotation) names: the Chrome trace's
/// (src/trace/model/event_fields.hpp). Their interned ids are their index + 1.
using Category = detail::EventCategory;
using Arg = detail::EventArg;
constexpr std::uint64_t first_counter_arg_iid = detail::perfetto_arg_count + 1;

std::uint64_t iid_of(Category c) { return static_cast<std::uint64_t>(c) + 1; }
std::uint64_t iid_of(Arg a) { return static_cast<std::uint64_t>(a) + 1; }

std::string dim3_text(Dim3 d) { return fmt::format("[{},{},{}]", d.x, d.y, d.z); }

/// Which event a slice or instant is: its list in the Trace and its index there.
enum class EventKind : std::uint8_t { kernel, memcpy, memset, api, sync, range, metadata };

struct Record {
  Nanoseconds ts;
  std::uint64_t track;
  std::uint32_t index;
  EventKind kind;
  std::uint8_t type;  // pf::slice_begin, slice_end, instant
};

class PerfettoWriter {
 public:
  explicit PerfettoWriter(const Trace& t) : trace_(t), origin_(t.origin()) {}

  std::string run() {
    out_.reserve(64 + t_events() * 90);
    // First a packet of 4 bytes that only starts the sequence: files begin 0a 04, which no JSON does.
    end_packet(begin_packet(pf::incremental_state_cleared));
    write_interned_data();
    const std::uint64_t metadata_track = named_track("ridge metadata", 0);
    place_events();
    write_flows_index();
    std::stable_sort(records_.begin(), records_.end(), [](const Record& a, const Record& b) { return a.ts < b.ts; });
    // The metadata first, at the origin: readers find the counters without reading the events.
    write_record({origin_, metadata_track, 0, EventKind::metadata, static_cast<std::uint8_t>(pf::instant)});
    for (const Record& r : records_) write_record(r);
    return std::move(out_);
  }

 private:
  std::size_t t_events() const { return trace_.event_count(); }

  // ---- packets ----
  std::size_t begin_packet(std::uint32_t flags) {
    MessageWriter root(out_);
    const std::size_t mark = root.begin_nested(pf::trace_packet);
    root.uint_field(pf::packet_sequence_id, sequence_id);
    if (flags != 0) root.uint_field(pf::packet_sequence_flags, flags);
    return mark;
  }
  void end_packet(std::size_t mark) { MessageWriter(out_).end_nested(mark); }

  void write_interned_data() {
    const std::size_t packet = begin_packet(pf::needs_incremental_state);
    MessageWriter w(out_);
    const std::size_t interned = w.begin_nested(pf::packet_interned_data);
    auto entry = [&](std::uint32_t list, std::uint64_t iid, std::string_view name) {
      const std::size_t m = w.begin_nested(list);
      w.uint_field(pf::interned_iid, iid);
      w.bytes_field(pf::interned_name, name);
      w.end_nested(m);
    };
    for (std::size_t c = 0; c < static_cast<std::size_t>(Category::count); ++c)
      entry(pf::interned_event_categories, c + 1, detail::event_category_names[c]);
    for (std::size_t a = 0; a < detail::perfetto_arg_count; ++a)
      entry(pf::interned_debug_annotation_names, a + 1, detail::event_arg_fields[a].name);
    for (std::size_t i = 0; i < trace_.counters.metrics.size(); ++i)
      entry(pf::interned_debug_annotation_names, first_counter_arg_iid + i, trace_.counters.metrics[i]);
    // Event names: the trace's strings, then the names ridge gives copies, memsets, waits and metadata.
    for (std::size_t i = 0; i < trace_.strings.size(); ++i)
      entry(pf::interned_event_names, i + 1, trace_.strings.at(static_cast<std::uint32_t>(i)));
    std::uint64_t next = trace_.strings.size() + 1;
    for (auto kind : {MemcpyKind::unknown, MemcpyKind::host_to_device, MemcpyKind::device_to_host,
                      MemcpyKind::device_to_device, MemcpyKind::host_to_host, MemcpyKind::peer_to_peer}) {
      memcpy_name_iid_[static_cast<std::size_t>(kind)] = next;
      entry(pf::interned_event_names, next++, "Memcpy " + to_string(kind));
    }
    memset_name_iid_ = next;
    entry(pf::interned_event_names, next++, "Memset");
    for (auto kind : {SyncKind::unknown, SyncKind::event_synchronize, SyncKind::stream_wait_event,
                      SyncKind::stream_synchronize, SyncKind::context_synchronize}) {
      sync_name_iid_[static_cast<std::size_t>(kind)] = next;
      entry(pf::interned_event_names, next++, to_string(kind));
    }
    metadata_name_iid_ = next;
    entry(pf::interned_event_names, next++, "ridge metadata");
    w.end_nested(interned);
    end_packet(packet);
  }

  // ---- tracks ----
  std::uint64_t write_track(std::string_view name, std::uint64_t parent, const std::function<void(MessageWriter&)>& more) {
    const std::uint64_t uuid = next_track_++;
    const std::size_t packet = begin_packet(0);
    MessageWriter w(out_);
    const std::size_t d = w.begin_nested(pf::packet_track_descriptor);
    w.uint_field(pf::track_uuid, uuid);
    if (parent != 0) w.uint_field(pf::track_parent_uuid, parent);
    if (!name.empty()) w.bytes_field(pf::track_name, name);
    if (more) more(w);
    w.end_nested(d);
    end_packet(packet);
    return uuid;
  }
  std::uint64_t named_track(std::string_view name, std::uint64_t parent) { return write_track(name, parent, {}); }

  std::uint64_t host_process_track(std::int64_t pid) {
    auto [it, added] = process_tracks_.try_emplace(pid, 0);
    if (!added) return it->second;
    const std::string name =
        static_cast<std::uint32_t>(pid) == trace_.process_id
            ? fmt::format("host: {} (pid {})", trace_.command.empty() ? std::string("process") : trace_.command.substr(0, 120), pid)
            : fmt::format("process {}", pid);
    it->second = write_track("", 0, [&](MessageWriter& w) {
      const std::size_t p = w.begin_nested(pf::track_process);
      w.int_field(pf::process_pid, pid);
      w.bytes_field(pf::process_name, name);
      w.end_nested(p);
    });
    return it->second;
  }

  /// The track of lane `lane` of a (kind, a, b) track: lane 0 is the thread or stream itself,
  /// further lanes hold slices that overlap without nesting (Perfetto nests slices of a track).
  std::uint64_t lane_track(int kind, std::int64_t a, std::int64_t b, std::size_t lane) {
    const auto key = std::make_tuple(kind, a, b, lane);
    if (auto it = lane_tracks_.find(key); it != lane_tracks_.end()) return it->second;
    std::uint64_t uuid = 0;
    if (lane > 0) {
      const std::uint64_t base = lane_track(kind, a, b, 0);
      uuid = named_track(fmt::format("{} (overlapping {})", track_names_[base], lane), base);
    } else if (kind == 0) {  // a host thread: pid a, tid b
      const std::uint64_t process = host_process_track(a);
      const std::string name = fmt::format("thread {}", b);
      uuid = write_track("", process, [&](MessageWriter& w) {
        const std::size_t t = w.begin_nested(pf::track_thread);
        w.int_field(pf::thread_pid, a);
        w.int_field(pf::thread_tid, b);
        w.bytes_field(pf::thread_name, name);
        w.end_nested(t);
      });
      track_names_[uuid] = name;
    } else {  // a GPU stream (kind 1) or the host's waits on one (kind 2): device a, stream b
      auto [it, added] = device_tracks_.try_emplace(a, 0);
      if (added) {
        const auto named = trace_.device_names.find(static_cast<std::uint32_t>(a));
        it->second = named_track(
            fmt::format("GPU {}{}", a, named != trace_.device_names.end() ? ": " + named->second : std::string()), 0);
      }
      const std::string name = kind == 1 ? fmt::format("stream {}", b)
                               : b < 0   ? std::string("host waits: context/event sync")
                                         : fmt::format("host waits: stream {}", b);
      uuid = named_track(name, it->second);
      track_names_[uuid] = name;
    }
    lane_tracks_.emplace(key, uuid);
    return uuid;
  }

  struct Slice {
    Nanoseconds start, end;
    std::uint32_t index;
    EventKind kind;
  };

  void place_events() {
    std::map<std::tuple<int, std::int64_t, std::int64_t>, std::vector<Slice>> tracks;
    auto span_end = [](Nanoseconds s, Nanoseconds e) { return e > s ? e : s; };
    auto pid_of = [&](std::uint32_t process) {
      return static_cast<std::int64_t>(process == 0 ? trace_.process_id : process);
    };
    for (std::uint32_t i = 0; i < trace_.api_calls.size(); ++i) {
      const auto& a = trace_.api_calls[i];
      tracks[{0, pid_of(a.process), a.thread}].push_back({a.start, span_end(a.start, a.end), i, EventKind::api});
    }
    for (std::uint32_t i = 0; i < trace_.ranges.size(); ++i) {
      const auto& r = trace_.ranges[i];
      if (r.marker) {
        records_.push_back({r.start, lane_track(0, pid_of(r.process), r.thread, 0), i, EventKind::range,
                            static_cast<std::uint8_t>(pf::instant)});
        continue;
      }
      tracks[{0, pid_of(r.process), r.thread}].push_back({r.start, span_end(r.start, r.end), i, EventKind::range});
    }
    for (std::uint32_t i = 0; i < trace_.kernels.size(); ++i) {
      const auto& k = trace_.kernels[i];
      tracks[{1, k.device, k.stream}].push_back({k.start, span_end(k.start, k.end), i, EventKind::kernel});
    }
    for (std::uint32_t i = 0; i < trace_.memcpys.size(); ++i) {
      const auto& m = trace_.memcpys[i];
      tracks[{1, m.device, m.stream}].push_back({m.start, span_end(m.start, m.end), i, EventKind::memcpy});
    }
    for (std::uint32_t i = 0; i < trace_.memsets.size(); ++i) {
      const auto& m = trace_.memsets[i];
      tracks[{1, m.device, m.stream}].push_back({m.start, span_end(m.start, m.end), i, EventKind::memset});
    }
    for (std::uint32_t i = 0; i < trace_.syncs.size(); ++i) {
      const auto& s = trace_.syncs[i];
      const std::int64_t stream = s.stream == 0xffffffffu ? -1 : static_cast<std::int64_t>(s.stream);
      tracks[{2, s.device, stream}].push_back({s.start, span_end(s.start, s.end), i, EventKind::sync});
    }
    for (auto& [key, slices] : tracks) place_on_lanes(key, slices);
  }

  /// Begin and end records of one track's slices, each slice on the first lane where it nests.
  void place_on_lanes(const std::tuple<int, std::int64_t, std::int64_t>& key, std::vector<Slice>& slices) {
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& x, const Slice& y) {
      return x.start != y.start ? x.start < y.start : x.end > y.end;  // outer slices first
    });
    std::vector<std::vector<const Slice*>> lanes;  // open slices of each lane, innermost last
    std::vector<std::uint64_t> uuids;
    auto close_ended = [&](std::size_t lane, Nanoseconds now) {
      auto& open = lanes[lane];
      while (!open.empty() && open.back()->end <= now) {
        records_.push_back({open.back()->end, uuids[lane], open.back()->index, open.back()->kind,
                            static_cast<std::uint8_t>(pf::slice_end)});
        open.pop_back();
      }
    };
    for (const Slice& s : slices) {
      std::size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) {
          lanes.emplace_back();
          uuids.push_back(lane_track(std::get<0>(key), std::get<1>(key), std::get<2>(key), lane));
        }
        close_ended(lane, s.start);
        if (lanes[lane].empty() || s.end <= lanes[lane].back()->end) break;
      }
      records_.push_back({s.start, uuids[lane], s.index, s.kind, static_cast<std::uint8_t>(pf::slice_begin)});
      lanes[lane].push_back(&s);
    }
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) close_ended(lane, std::numeric_limits<Nanoseconds>::max());
  }

  // ---- flows: launch call -> GPU activity, one id per activity (as the Chrome trace draws them) ----
  void write_flows_index() {
    launch_of_ = detail::launch_calls_by_correlation(trace_);
    api_index_.reserve(trace_.api_calls.size());
    for (std::uint32_t i = 0; i < trace_.api_calls.size(); ++i) api_index_.emplace(&trace_.api_calls[i], i);
    flows_of_api_.assign(trace_.api_calls.size(), 0);
    auto count = [&](std::uint32_t correlation) {
      if (const ApiCall* a = launch(correlation)) ++flows_of_api_[api_index_.at(a)];
    };
    for (const auto& k : trace_.kernels) count(k.correlation);
    for (const auto& m : trace_.memcpys) count(m.correlation);
    for (const auto& m : trace_.memsets) count(m.correlation);
    first_flow_of_api_.resize(trace_.api_calls.size());
    std::uint64_t next = 1;
    for (std::size_t i = 0; i < flows_of_api_.size(); ++i) {
      first_flow_of_api_[i] = next;
      next += flows_of_api_[i];
    }
    used_flows_.assign(trace_.api_calls.size(), 0);
  }
  const ApiCall* launch(std::uint32_t correlation) const {
    if (correlation == 0) return nullptr;
    const auto it = launch_of_.find(correlation);
    return it == launch_of_.end() ? nullptr : it->second;
  }
  /// The flow id ending at a GPU activity of `correlation`, 0 when it has no launch call.
  std::uint64_t flow_to_gpu(std::uint32_t correlation) {
    const ApiCall* a = launch(correlation);
    if (a == nullptr) return 0;
    const std::uint32_t i = api_index_.at(a);
    return first_flow_of_api_[i] + used_flows_[i]++;
  }

  // ---- events ----
  void annotation_uint(MessageWriter& w, detail::IdArg name, std::uint64_t v) {
    const std::size_t m = w.begin_nested(pf::event_debug_annotations);
    w.uint_field(pf::annotation_name_iid, iid_of(name.arg));
    w.uint_field(pf::annotation_uint, v);
    w.end_nested(m);
  }
  void annotation_int(MessageWriter& w, detail::IdArg name, std::int64_t v) {
    const std::size_t m = w.begin_nested(pf::event_debug_annotations);
    w.uint_field(pf::annotation_name_iid, iid_of(name.arg));
    w.int_field(pf::annotation_int, v);
    w.end_nested(m);
  }
  void annotation_string(MessageWriter& w, std::uint64_t name_iid, std::string_view v) {
    const std::size_t m = w.begin_nested(pf::event_debug_annotations);
    w.uint_field(pf::annotation_name_iid, name_iid);
    w.bytes_field(pf::annotation_string, v);
    w.end_nested(m);
  }
  void annotation_dims(MessageWriter& w, detail::DimsArg name, Dim3 d) { annotation_string(w, iid_of(name.arg), dim3_text(d)); }
  void annotation_double(MessageWriter& w, std::uint64_t name_iid, double v) {
    const std::size_t m = w.begin_nested(pf::event_debug_annotations);
    w.uint_field(pf::annotation_name_iid, name_iid);
    w.double_field(pf::annotation_double, v);
    w.end_nested(m);
  }
  void gpu_args(MessageWriter& w, std::uint32_t device, std::uint32_t stream, std::uint32_t correlation,
                std::uint64_t external) {
    annotation_uint(w, Arg::device, device);
    annotation_uint(w, Arg::stream, stream);
    annotation_uint(w, Arg::correlation, correlation);
    if (external != 0) annotation_uint(w, Arg::external_id, external);
  }

  void counter_args(MessageWriter& w, const Kernel& k) {
    if (trace_.counters.rows.empty()) return;
    const CounterRow* row = counter_rows_.find(k);
    if (row == nullptr) return;
    const std::size_t m = w.begin_nested(pf::event_debug_annotations);
    w.uint_field(pf::annotation_name_iid, iid_of(Arg::profiled));
    w.uint_field(pf::annotation_bool, 1);
    w.end_nested(m);
    for (std::size_t i = 0; i < trace_.counters.metrics.size() && i < row->values.size(); ++i)
      if (std::isfinite(row->values[i])) annotation_double(w, first_counter_arg_iid + i, row->values[i]);
  }

  Nanoseconds rel(Nanoseconds t) const { return t >= origin_ ? t - origin_ : 0; }

  void write_record(const Record& r) {
    const bool begins = r.type != pf::slice_end;
    const std::size_t packet = begin_packet(begins ? pf::needs_incremental_state : 0);
    MessageWriter w(out_);
    w.uint_field(pf::packet_timestamp, rel(r.ts));
    const std::size_t event = w.begin_nested(pf::packet_track_event);
    w.uint_field(pf::event_type, r.type);
    w.uint_field(pf::event_track_uuid, r.track);
    if (begins) write_event_body(w, r);
    w.end_nested(event);
    end_packet(packet);
  }

  void write_event_body(MessageWriter& w, const Record& r) {
    auto head = [&](Category c, std::uint64_t name_iid) {
      w.uint_field(pf::event_category_iids, iid_of(c));
      w.uint_field(pf::event_name_iid, name_iid);
    };
    auto flow_end = [&](std::uint32_t correlation) {
      if (const std::uint64_t id = flow_to_gpu(correlation)) w.fixed64_field(pf::event_terminating_flow_ids, id);
    };
    switch (r.kind) {
      case EventKind::kernel: {
        const Kernel& k = trace_.kernels[r.index];
        head(Category::kernel, k.name + 1);
        gpu_args(w, k.device, k.stream, k.correlation, k.external_id);
        annotation_dims(w, Arg::grid, k.grid);
        annotation_dims(w, Arg::block, k.block);
        annotation_uint(w, Arg::registers, k.registers_per_thread);
        annotation_uint(w, Arg::shared_memory, k.shared_memory_bytes);
        if (k.graph_id != 0) annotation_uint(w, Arg::graph_id, k.graph_id);
        if (k.queued != 0 && k.queued <= k.start) annotation_uint(w, Arg::queued_before, k.start - k.queued);
        counter_args(w, k);
        flow_end(k.correlation);
        break;
      }
      case EventKind::memcpy: {
        const Memcpy& m = trace_.memcpys[r.index];
        head(Category::memcpy, memcpy_name_iid_[static_cast<std::size_t>(m.kind)]);
        gpu_args(w, m.device, m.stream, m.correlation, m.external_id);
        annotation_uint(w, Arg::bytes, m.bytes);
        flow_end(m.correlation);
        break;
      }
      case EventKind::memset: {
        const Memset& m = trace_.memsets[r.index];
        head(Category::memset, memset_name_iid_);
        gpu_args(w, m.device, m.stream, m.correlation, m.external_id);
        annotation_uint(w, Arg::bytes, m.bytes);
        flow_end(m.correlation);
        break;
      }
      case EventKind::api: {
        const ApiCall& a = trace_.api_calls[r.index];
        head(a.domain == ApiDomain::runtime ? Category::runtime : Category::driver, a.name + 1);
        annotation_uint(w, Arg::correlation, a.correlation);
        if (a.external_id != 0) annotation_uint(w, Arg::external_id, a.external_id);
        for (std::uint32_t f = 0; f < flows_of_api_[r.index]; ++f)
          w.fixed64_field(pf::event_flow_ids, first_flow_of_api_[r.index] + f);
        break;
      }
      case EventKind::sync: {
        const Sync& s = trace_.syncs[r.index];
        head(Category::sync, sync_name_iid_[static_cast<std::size_t>(s.kind)]);
        annotation_uint(w, Arg::device, s.device);
        annotation_int(w, Arg::stream, s.stream == 0xffffffffu ? -1 : static_cast<std::int64_t>(s.stream));
        annotation_uint(w, Arg::correlation, s.correlation);
        break;
      }
      case EventKind::range: head(Category::nvtx, trace_.ranges[r.index].name + 1); break;
      case EventKind::metadata: {
        head(Category::ridge, metadata_name_iid_);
        annotation_string(w, iid_of(Arg::ridge), json_text(detail::ridge_metadata_json(trace_, origin_, trace_.process_id), -1));
        if (trace_.distributed.known())
          annotation_string(w, iid_of(Arg::distributed), json_text(detail::distributed_info_json(trace_.distributed), -1));
        break;
      }
    }
  }

  const Trace& trace_;
  Nanoseconds origin_;
  std::string out_;
  std::vector<Record> records_;
  std::uint64_t next_track_ = 1;
  std::map<std::int64_t, std::uint64_t> process_tracks_, device_tracks_;
  std::map<std::tuple<int, std::int64_t, std::int64_t, std::size_t>, std::uint64_t> lane_tracks_;
  std::unordered_map<std::uint64_t, std::string> track_names_;
  std::uint64_t memcpy_name_iid_[6] = {}, sync_name_iid_[5] = {}, memset_name_iid_ = 0, metadata_name_iid_ = 0;
  std::unordered_map<std::uint32_t, const ApiCall*> launch_of_;
  std::unordered_map<const ApiCall*, std::uint32_t> api_index_;
  std::vector<std::uint32_t> flows_of_api_, used_flows_;
  std::vector<std::uint64_t> first_flow_of_api_;
  CounterRowIndex counter_rows_{trace_.counters};
};

// ---- reading ----

/// One debug annotation's value as ridge reads it.
struct ArgValue {
  bool present = false;
  std::int64_t integer = 0;
  std::string_view text;
};

class PerfettoReader {
 public:
  explicit PerfettoReader(const std::string& source) : source_(source) {}

  void packet(std::string_view bytes) {
    MessageReader r(bytes);
    Field f;
    Nanoseconds ts = 0;
    std::string_view event, descriptor, interned;
    while (r.next(f)) {
      switch (f.number) {
        case pf::packet_timestamp: ts = f.value; break;
        case pf::packet_track_event: event = f.bytes; break;
        case pf::packet_track_descriptor: descriptor = f.bytes; break;
        case pf::packet_interned_data: interned = f.bytes; break;
        case pf::packet_sequence_flags:
          if (f.value & pf::incremental_state_cleared) clear_interned();
          break;
        default: break;
      }
    }
    check(r, "a TracePacket");
    if (!interned.empty()) read_interned(interned);
    if (!descriptor.empty()) read_descriptor(descriptor);
    if (!event.empty()) read_event(event, ts);
    ++packets_;
  }

  bool metadata_read() const { return metadata_read_; }
  bool has_counters() const { return !trace_.counters.metrics.empty(); }

  Trace finish() {
    if (origin_ != 0) shift_all(origin_);
    for (const auto& [index, before] : queued_before_) {
      Kernel& k = trace_.kernels[index];
      k.queued = k.start > static_cast<Nanoseconds>(before) ? k.start - static_cast<Nanoseconds>(before) : 0;
    }
    // A slice without an end has no duration to analyse: dropped, and counted.
    std::vector<std::pair<EventKind, std::uint32_t>> dropped;
    for (const auto& [uuid, open] : open_)
      for (const auto& e : open)
        if (e.first != EventKind::metadata) dropped.push_back(e);
    if (!dropped.empty()) {
      trace_.count_rejected("dropped: Perfetto slices that never end", dropped.size());
      drop(dropped);
    }
    finalize(trace_);
    return std::move(trace_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: {} (packet {})", source_, what, packets_));
  }
  void check(const MessageReader& r, const char* message) const {
    if (r.error() != nullptr) fail(fmt::format("{} holds {}", message, r.error()));
  }

  void clear_interned() {
    names_.clear();
    categories_.clear();
    args_.clear();
  }

  void read_interned(std::string_view bytes) {
    MessageReader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.type != WireType::length_delimited) continue;
      MessageReader e(f.bytes);
      Field g;
      std::uint64_t iid = 0;
      std::string_view name;
      while (e.next(g)) {
        if (g.number == pf::interned_iid) iid = g.value;
        else if (g.number == pf::interned_name) name = g.bytes;
      }
      check(e, "an interned entry");
      if (f.number == pf::interned_event_names) {
        names_[iid] = trace_.strings.intern(name);
      } else if (f.number == pf::interned_event_categories) {
        categories_[iid] = detail::event_category_named(name);  // Category::count: unknown
      } else if (f.number == pf::interned_debug_annotation_names) {
        args_[iid] = detail::event_arg_named(name);  // Arg::count: unknown
      }
    }
    check(r, "InternedData");
  }

  struct TrackInfo {
    std::uint64_t parent = 0;
    bool thread = false;
    std::int64_t pid = 0, tid = 0;
  };

  void read_descriptor(std::string_view bytes) {
    MessageReader r(bytes);
    Field f;
    std::uint64_t uuid = 0;
    TrackInfo info;
    while (r.next(f)) {
      if (f.number == pf::track_uuid) uuid = f.value;
      else if (f.number == pf::track_parent_uuid) info.parent = f.value;
      else if (f.number == pf::track_thread && f.type == WireType::length_delimited) {
        MessageReader t(f.bytes);
        Field g;
        while (t.next(g)) {
          if (g.number == pf::thread_pid) info.pid = static_cast<std::int64_t>(g.value);
          else if (g.number == pf::thread_tid) info.tid = static_cast<std::int64_t>(g.value);
        }
        check(t, "a ThreadDescriptor");
        info.thread = true;
      }
    }
    check(r, "a TrackDescriptor");
    tracks_[uuid] = info;
  }

  /// The thread a track belongs to: its own, or its parent's (the lanes of overlapping slices).
  const TrackInfo* thread_of(std::uint64_t uuid) const {
    for (int hops = 0; hops < 8; ++hops) {
      const auto it = tracks_.find(uuid);
      if (it == tracks_.end()) return nullptr;
      if (it->second.thread) return &it->second;
      uuid = it->second.parent;
    }
    return nullptr;
  }

  /// A TrackEvent's fields, its interned name and category resolved.
  struct EventFields {
    std::uint64_t type = 0, track = 0;
    Category category = Category::count;
    std::uint32_t name = 0;
    bool named = false;
    ArgValue args[static_cast<std::size_t>(Arg::count)];
  };

  void parse_event(std::string_view bytes, EventFields& e) {
    MessageReader r(bytes);
    Field f;
    while (r.next(f)) {
      switch (f.number) {
        case pf::event_type: e.type = f.value; break;
        case pf::event_track_uuid: e.track = f.value; break;
        case pf::event_category_iids:
          if (const auto it = categories_.find(f.value); it != categories_.end()) e.category = it->second;
          break;
        case pf::event_name_iid:
          if (const auto it = names_.find(f.value); it != names_.end()) {
            e.name = it->second;
            e.named = true;
          }
          break;
        case pf::event_name:
          e.name = trace_.strings.intern(f.bytes);
          e.named = true;
          break;
        case pf::event_debug_annotations: read_annotation(f.bytes, e.args); break;
        default: break;
      }
    }
    check(r, "a TrackEvent");
  }

  void read_event(std::string_view bytes, Nanoseconds ts) {
    EventFields e;
    parse_event(bytes, e);
    const std::uint64_t type = e.type, track = e.track;
    const Category category = e.category;
    std::uint32_t name = e.name;
    const bool named = e.named;
    ArgValue* args = e.args;
    if (type == pf::slice_end) {
      auto& open = open_[track];
      if (open.empty()) fail(fmt::format("a slice ends on track {} where none began", track));
      set_end(open.back(), ts);
      open.pop_back();
      return;
    }
    if (type != pf::slice_begin && type != pf::instant) return;
    if (category == Category::count) {  // not ridge's: its end must still close it, not another slice
      if (type == pf::slice_begin) open_[track].emplace_back(EventKind::metadata, 0);
      return;
    }
    if (category == Category::ridge) {
      read_metadata(args);
      return;
    }
    auto arg = [&](detail::IdArg a, std::int64_t fallback) {
      const ArgValue& v = args[static_cast<std::size_t>(a.arg)];
      return v.present ? v.integer : fallback;
    };
    const auto correlation = static_cast<std::uint32_t>(arg(Arg::correlation, 0));
    const auto external = static_cast<std::uint64_t>(arg(Arg::external_id, 0));
    const auto device = static_cast<std::uint32_t>(arg(Arg::device, 0));
    const auto stream = static_cast<std::uint32_t>(arg(Arg::stream, 0));
    if (!named) name = trace_.strings.intern("");
    const std::string& text = trace_.strings.at(name);
    std::pair<EventKind, std::uint32_t> opened;
    auto place = [&](auto& activity) {
      activity.device = device;
      activity.stream = stream;
      activity.start = activity.end = ts;
      activity.correlation = correlation;
      activity.external_id = external;
    };
    switch (category) {
      case Category::kernel: {
        Kernel k;
        k.name = name;
        place(k);
        k.grid = dim3_arg(args, Arg::grid);
        k.block = dim3_arg(args, Arg::block);
        k.registers_per_thread = static_cast<std::uint32_t>(arg(Arg::registers, 0));
        k.shared_memory_bytes = static_cast<std::uint32_t>(arg(Arg::shared_memory, 0));
        k.graph_id = static_cast<std::uint32_t>(arg(Arg::graph_id, 0));
        opened = {EventKind::kernel, static_cast<std::uint32_t>(trace_.kernels.size())};
        // Set once the times are absolute (the queue time may come before the file's origin).
        if (const std::int64_t before = arg(Arg::queued_before, -1); before >= 0) queued_before_.emplace_back(opened.second, before);
        trace_.kernels.push_back(k);
        break;
      }
      case Category::memcpy: {
        Memcpy m;
        m.kind = memcpy_kind_from_string(text.rfind("Memcpy ", 0) == 0 ? text.substr(7, 4) : std::string());
        m.bytes = static_cast<std::uint64_t>(arg(Arg::bytes, 0));
        place(m);
        opened = {EventKind::memcpy, static_cast<std::uint32_t>(trace_.memcpys.size())};
        trace_.memcpys.push_back(m);
        break;
      }
      case Category::memset: {
        Memset m;
        m.bytes = static_cast<std::uint64_t>(arg(Arg::bytes, 0));
        place(m);
        opened = {EventKind::memset, static_cast<std::uint32_t>(trace_.memsets.size())};
        trace_.memsets.push_back(m);
        break;
      }
      case Category::runtime:
      case Category::driver: {
        const TrackInfo* thread = thread_of(track);
        ApiCall a;
        a.domain = category == Category::runtime ? ApiDomain::runtime : ApiDomain::driver;
        a.name = name;
        a.process = thread != nullptr ? static_cast<std::uint32_t>(thread->pid) : 0;
        a.thread = thread != nullptr ? static_cast<std::uint32_t>(thread->tid) : 0;
        a.start = a.end = ts;
        a.correlation = correlation;
        a.external_id = external;
        opened = {EventKind::api, static_cast<std::uint32_t>(trace_.api_calls.size())};
        trace_.api_calls.push_back(a);
        break;
      }
      case Category::sync: {
        Sync s;
        s.kind = sync_kind_from_string(text);
        s.device = device;
        const std::int64_t st = arg(Arg::stream, -1);
        s.stream = st < 0 ? 0xffffffffu : static_cast<std::uint32_t>(st);
        s.start = s.end = ts;
        s.correlation = correlation;
        opened = {EventKind::sync, static_cast<std::uint32_t>(trace_.syncs.size())};
        trace_.syncs.push_back(s);
        break;
      }
      case Category::nvtx: {
        const TrackInfo* thread = thread_of(track);
        NvtxRange range;
        range.name = name;
        range.process = thread != nullptr ? static_cast<std::uint32_t>(thread->pid) : 0;
        range.thread = thread != nullptr ? static_cast<std::uint32_t>(thread->tid) : 0;
        range.start = range.end = ts;
        range.marker = type == pf::instant;
        opened = {EventKind::range, static_cast<std::uint32_t>(trace_.ranges.size())};
        trace_.ranges.push_back(range);
        break;
      }
      default: return;
    }
    if (type == pf::slice_begin) open_[track].push_back(opened);
  }

  void read_annotation(std::string_view bytes, ArgValue* args) {
    MessageReader r(bytes);
    Field f;
    Arg name = Arg::count;
    ArgValue v;
    while (r.next(f)) {
      switch (f.number) {
        case pf::annotation_name_iid:
          if (const auto it = args_.find(f.value); it != args_.end()) name = it->second;
          break;
        case pf::annotation_uint:
        case pf::annotation_int:
        case pf::annotation_bool:
          v.present = true;
          v.integer = static_cast<std::int64_t>(f.value);
          break;
        case pf::annotation_string:
          v.present = true;
          v.text = f.bytes;
          break;
        default: break;
      }
    }
    check(r, "a DebugAnnotation");
    if (name != Arg::count) args[static_cast<std::size_t>(name)] = v;
  }

  Dim3 dim3_arg(const ArgValue* args, detail::DimsArg arg) const {
    const ArgValue& v = args[static_cast<std::size_t>(arg.arg)];
    const char* key = arg.name();
    if (!v.present) return {};
    // "[x,y,z]", as the writer spells it.
    std::int32_t d[3] = {};
    const char* p = v.text.data();
    const char* end = p + v.text.size();
    for (int i = 0; i < 3; ++i) {
      if (p == end || *p != (i == 0 ? '[' : ',')) fail(fmt::format("\"{}\" must be [x,y,z], not '{}'", key, v.text));
      const auto [next, ec] = std::from_chars(p + 1, end, d[i]);
      if (ec != std::errc() || d[i] < 0) fail(fmt::format("\"{}\" must be [x,y,z], not '{}'", key, v.text));
      p = next;
    }
    if (p == end || *p != ']') fail(fmt::format("\"{}\" must be [x,y,z], not '{}'", key, v.text));
    return Dim3{d[0], d[1], d[2]};
  }

  void read_metadata(const ArgValue* args) {
    metadata_read_ = true;
    auto json_of = [&](detail::JsonArg a) {
      return parse_json(args[static_cast<std::size_t>(a.arg)].text, source_ + " (" + a.name() + ")");
    };
    if (args[static_cast<std::size_t>(Arg::ridge)].present) {
      try {
        origin_ = detail::read_ridge_metadata(json_of(Arg::ridge), trace_).origin;
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("{}: ridge: malformed metadata: {}", source_, e.what()));
      }
    }
    if (args[static_cast<std::size_t>(Arg::distributed)].present) detail::read_distributed_info(json_of(Arg::distributed), trace_);
  }

  void set_end(std::pair<EventKind, std::uint32_t> e, Nanoseconds ts) {
    switch (e.first) {
      case EventKind::kernel: trace_.kernels[e.second].end = ts; break;
      case EventKind::memcpy: trace_.memcpys[e.second].end = ts; break;
      case EventKind::memset: trace_.memsets[e.second].end = ts; break;
      case EventKind::api: trace_.api_calls[e.second].end = ts; break;
      case EventKind::sync: trace_.syncs[e.second].end = ts; break;
      case EventKind::range: trace_.ranges[e.second].end = ts; break;
      case EventKind::metadata: break;
    }
  }

  /// Removes unterminated slices (indices into each list).
  void drop(std::vector<std::pair<EventKind, std::uint32_t>>& dropped) {
    std::sort(dropped.begin(), dropped.end());
    auto erase_from = [&](auto& list, EventKind kind) {
      std::vector<bool> gone(list.size(), false);
      for (const auto& [k, i] : dropped)
        if (k == kind) gone[i] = true;
      std::size_t i = 0;
      std::erase_if(list, [&](const auto&) { return gone[i++]; });
    };
    erase_from(trace_.kernels, EventKind::kernel);
    erase_from(trace_.memcpys, EventKind::memcpy);
    erase_from(trace_.memsets, EventKind::memset);
    erase_from(trace_.api_calls, EventKind::api);
    erase_from(trace_.syncs, EventKind::sync);
    erase_from(trace_.ranges, EventKind::range);
  }

  void shift_all(Nanoseconds by) {
    auto shift = [&](auto& list) {
      for (auto& e : list) {
        e.start += by;
        e.end += by;
      }
    };
    shift(trace_.kernels);
    shift(trace_.memcpys);
    shift(trace_.memsets);
    shift(trace_.api_calls);
    shift(trace_.syncs);
    shift(trace_.ranges);
  }

  const std::string& source_;
  Trace trace_;
  Nanoseconds origin_ = 0;
  bool metadata_read_ = false;
  std::size_t packets_ = 0;
  std::unordered_map<std::uint64_t, std::uint32_t> names_;
  std::unordered_map<std::uint64_t, Category> categories_;
  std::unordered_map<std::uint64_t, Arg> args_;
  std::unordered_map<std::uint64_t, TrackInfo> tracks_;
  std::unordered_map<std::uint64_t, std::vector<std::pair<EventKind, std::uint32_t>>> open_;
  std::vector<std::pair<std::uint32_t, std::int64_t>> queued_before_;  // kernel index, ns queued before its start
};

}  // namespace

std::string to_perfetto_trace(const Trace& trace) { return PerfettoWriter(trace).run(); }

void write_perfetto_trace(const Trace& trace, const std::string& path) { write_text(path, to_perfetto_trace(trace)); }

Trace parse_perfetto_trace(std::string_view bytes, const std::string& source) {
  PerfettoReader reader(source);
  MessageReader r(bytes);
  Field f;
  while (r.next(f))
    if (f.number == pf::trace_packet && f.type == WireType::length_delimited) reader.packet(f.bytes);
  if (r.error() != nullptr) throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: {}", source, r.error()));
  return reader.finish();
}

Trace load_perfetto_trace(const std::string& path) {
  PerfettoReader reader(path);
  detail::ChunkedFile file(path);
  std::string packet;
  while (detail::read_length_delimited(file, pf::trace_packet, packet)) reader.packet(packet);
  return reader.finish();
}

bool perfetto_trace_has_counters(const std::string& path) {
  try {
    PerfettoReader reader(path);
    detail::ChunkedFile file(path);
    std::string packet;
    while (!reader.metadata_read() && detail::read_length_delimited(file, pf::trace_packet, packet)) reader.packet(packet);
    return reader.has_counters();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace ridge::trace
