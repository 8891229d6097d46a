// The catalog of a trace event's categories and argument names, each written once with the kind
// of its value, for every writer and reader of trace files: the Chrome writer and its two readers
// (src/trace/model/chrome_json.cpp) and the Perfetto writer and reader (src/trace/model/perfetto.cpp).
// The names are PyTorch's profiler's (Kineto's) where it has the field, so that trace tools made
// for PyTorch read ridge's files; changing one changes the file format.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ridge::detail {

/// An event's category ("cat"), which says what the event is: the list of the Trace it goes to.
enum class EventCategory : std::uint8_t { kernel, memcpy, memset, runtime, driver, sync, nvtx, ridge, count };

/// The name of each category, by EventCategory.
inline constexpr const char* event_category_names[] = {"kernel",      "gpu_memcpy", "gpu_memset",      "cuda_runtime",
                                                       "cuda_driver", "cuda_sync",  "user_annotation", "ridge"};
static_assert(std::size(event_category_names) == static_cast<std::size_t>(EventCategory::count));

constexpr const char* name_of(EventCategory c) { return event_category_names[static_cast<std::size_t>(c)]; }

/// The category named `name`; EventCategory::count when ridge does not know it.
constexpr EventCategory event_category_named(std::string_view name) {
  for (std::size_t c = 0; c < std::size(event_category_names); ++c)
    if (name == event_category_names[c]) return static_cast<EventCategory>(c);
  return EventCategory::count;
}

/// An argument of an event ("args" in Chrome JSON, a debug annotation in Perfetto).
enum class EventArg : std::uint8_t {
  // In both formats. Perfetto interns them in this order (its annotation name ids are index + 1).
  device, stream, correlation, external_id, grid, block, registers, shared_memory, graph_id, queued_before,
  bytes, profiled, ridge, distributed,
  // In Chrome JSON only (Perfetto has its own fields for them, or no reader reads them).
  bandwidth, counters, depth,
  count
};

/// What an argument's value is, as every writer writes it and every reader reads it.
enum class ArgKind : std::uint8_t {
  id,       ///< an integer: an id, a count, bytes or nanoseconds
  dims,     ///< a grid or block: [x,y,z] (a JSON array; a string "[x,y,z]" in Perfetto)
  number,   ///< a double
  flag,     ///< a boolean
  metrics,  ///< an object of metric name to value (a profiled launch's counters)
  json      ///< a JSON object (in Perfetto, its text)
};

struct EventArgField {
  const char* name;
  ArgKind kind;
};

/// Each argument's name and kind, by EventArg.
inline constexpr EventArgField event_arg_fields[] = {
    {"device", ArgKind::id},                 // the GPU (events on a GPU; default: the pid)
    {"stream", ArgKind::id},                 // the stream (default: the tid); -1 for a wait on no stream
    {"correlation", ArgKind::id},            // joins an API call and the GPU work it queued
    {"External id", ArgKind::id},            // a framework op's id (CUPTI external correlation)
    {"grid", ArgKind::dims},                 //
    {"block", ArgKind::dims},                //
    {"registers per thread", ArgKind::id},   //
    {"shared memory", ArgKind::id},          // bytes, static + dynamic
    {"graph id", ArgKind::id},               // the CUDA graph a kernel ran in (absent: none)
    {"queued ns before start", ArgKind::id}, // when the host queued a kernel, before its start
    {"bytes", ArgKind::id},                  // of a copy or memset
    {"profiled", ArgKind::flag},             // a launch whose counters were collected
    {"ridge", ArgKind::json},                // the metadata (a top-level key in Chrome JSON)
    {"distributedInfo", ArgKind::json},      // rank and world size (a top-level key in Chrome JSON)
    {"memory bandwidth (GB/s)", ArgKind::number},  // of a copy
    {"counters", ArgKind::metrics},          // a profiled launch's counters, for viewers to show
    {"depth", ArgKind::id},                  // an NVTX range's nesting level
};
static_assert(std::size(event_arg_fields) == static_cast<std::size_t>(EventArg::count));

/// The arguments Perfetto's files carry: the first ones of EventArg.
inline constexpr std::size_t perfetto_arg_count = static_cast<std::size_t>(EventArg::bandwidth);

constexpr const EventArgField& field_of(EventArg a) { return event_arg_fields[static_cast<std::size_t>(a)]; }
constexpr const char* name_of(EventArg a) { return field_of(a).name; }
constexpr ArgKind kind_of(EventArg a) { return field_of(a).kind; }

/// An argument whose values are of kind K, checked when the code is compiled: the writers and
/// readers take one, so that an argument written or read as another kind does not compile.
template <ArgKind K>
struct ArgOfKind {
  EventArg arg;
  consteval ArgOfKind(EventArg a) : arg(a) {  // NOLINT: implicit, so that call sites name only the argument
    if (kind_of(a) != K) throw "the argument's values are of another kind (src/trace/model/event_fields.hpp)";
  }
  const char* name() const { return name_of(arg); }
};
using IdArg = ArgOfKind<ArgKind::id>;
using DimsArg = ArgOfKind<ArgKind::dims>;
using JsonArg = ArgOfKind<ArgKind::json>;

/// The argument named `name`; EventArg::count when ridge does not read it.
constexpr EventArg event_arg_named(std::string_view name) {
  for (std::size_t a = 0; a < std::size(event_arg_fields); ++a)
    if (name == event_arg_fields[a].name) return static_cast<EventArg>(a);
  return EventArg::count;
}

}  // namespace ridge::detail
