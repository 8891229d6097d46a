// Integer fields of a trace's JSON. nlohmann's get<int-type>() casts a float to the integer type,
// which is undefined outside the type's range (a fuzzer found 1.8e21 in collection_start_ns), so
// every integer read from a trace file goes through integer_field.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"

namespace ridge::trace::detail {

/// `j[key]` as T, or `fallback` when j has no such key. Anything but an integer that fits T is a
/// UsageError naming `where.key`.
template <typename T>
T integer_field(const nlohmann::json& j, const char* key, T fallback, const char* where) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_number_unsigned()) {
    const auto v = it->get<std::uint64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  } else if (it->is_number_integer()) {
    const auto v = it->get<std::int64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  }
  std::string shown = it->dump();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  throw UsageError(fmt::format("not a trace ridge can read: {}.{} must be an integer from {} to {}, not {}", where,
                               key, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), shown));
}

}  // namespace ridge::trace::detail
