// CollectionOptions: its names, checks and the environment through which `ridge trace` hands it
// to the injection library (src/trace/cupti/inject_env.hpp).
#include "ridge/trace/collection.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"
#include "trace/cupti/inject_env.hpp"

namespace ridge::trace {

std::string to_string(ApiCalls calls) {
  switch (calls) {
    case ApiCalls::none: return "none";
    case ApiCalls::selected: return "selected";
    case ApiCalls::most: return "most";
    case ApiCalls::all: return "all";
  }
  return "selected";
}

ApiCalls api_calls_from_string(std::string_view text) {
  for (ApiCalls c : {ApiCalls::none, ApiCalls::selected, ApiCalls::most, ApiCalls::all})
    if (text == to_string(c)) return c;
  throw UsageError(fmt::format("api calls must be none, selected, most or all, got '{}'", text));
}

CollectionOptions CollectionOptions::for_program() {
  CollectionOptions o;
  o.synchronization = false;
  o.buffer_bytes = std::size_t{32} << 20;
  return o;
}

void CollectionOptions::validate() const {
  if (buffer_bytes < min_buffer_bytes || buffer_bytes > max_buffer_bytes)
    throw UsageError(fmt::format("the CUPTI buffer size must be within [{}, {}] MiB, got {} bytes", min_buffer_bytes >> 20,
                                 max_buffer_bytes >> 20, buffer_bytes));
  if (counters) {
    if (!nvtx && counters->steps) throw UsageError("nvtx is off, so no NVTX step range can choose the counted steps");
    counters->validate();
  }
  if (schedule) {
    if (!nvtx) throw UsageError("nvtx is off, so no NVTX step range can count the schedule's steps");
    schedule->validate();
  }
  check_one_step_range(schedule ? &*schedule : nullptr, counters ? &*counters : nullptr);
}

}  // namespace ridge::trace

namespace ridge::detail::inject_env {

namespace {
const char* flag(bool on) { return on ? "1" : "0"; }
std::string value_of(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}
nlohmann::json json_of(const char* name, const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw UsageError(fmt::format("{} is not JSON", name));
  return j;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> collection_environment(const trace::CollectionOptions& o) {
  return {
      {api, trace::to_string(o.api_calls)},
      {sync, flag(o.synchronization)},
      {launch_calls, flag(o.launch_calls)},
      {nvtx, flag(o.nvtx)},
      {memcpy, flag(o.memcpy)},
      {buffer_bytes, fmt::format("{}", o.buffer_bytes)},
      {counters, o.counters ? trace::to_json(*o.counters).dump() : std::string()},
      {schedule, o.schedule ? trace::to_json(*o.schedule).dump() : std::string()},
  };
}

trace::CollectionOptions collection_from_environment() {
  // Unset variables keep the defaults of a traced program.
  trace::CollectionOptions o = trace::CollectionOptions::for_program();
  if (auto s = value_of(api); !s.empty()) o.api_calls = trace::api_calls_from_string(s);
  if (auto s = value_of(sync); !s.empty()) o.synchronization = s == "1";
  if (auto s = value_of(launch_calls); !s.empty()) o.launch_calls = s == "1";
  if (auto s = value_of(nvtx); !s.empty()) o.nvtx = s != "0";
  if (auto s = value_of(memcpy); !s.empty()) o.memcpy = s != "0";
  if (auto s = value_of(buffer_bytes); !s.empty()) {
    try {
      o.buffer_bytes = std::stoull(s);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{} must be a number of bytes, got '{}'", buffer_bytes, s));
    }
  }
  if (auto s = value_of(counters); !s.empty()) o.counters = trace::counter_options_from_json(json_of(counters, s));
  if (auto s = value_of(schedule); !s.empty()) o.schedule = trace::trace_schedule_from_json(json_of(schedule, s));
  o.validate();
  return o;
}

}  // namespace ridge::detail::inject_env
