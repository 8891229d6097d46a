// Integer fields of a trace's JSON. nlohmann's get<int-type>() casts a float to the integer type,
// which is undefined outside the type's range (a fuzzer found 1.8e21 in collection_start_ns), so
// every integer read from a trace file goes through integer_field or id_field.
#pragma once
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"

namespace ridge::detail {

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

/// An id or count of a Chrome trace event (pid, tid, correlation, bytes, ...), as the writers of
/// such traces spell it: an integer (unsigned above 2^63 wraps, as ids may), a whole double, or a
/// string whose first digits are the number (PyTorch's "stream 7" tids). `fallback` when absent or
/// without digits; UsageError when the number does not fit 64 bits.
inline std::int64_t id_field(const nlohmann::json& j, const char* key, std::int64_t fallback) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!(d >= -9.2e18 && d <= 9.2e18))  // the cast is undefined outside int64's range (and for NaN)
      throw UsageError(fmt::format("not a trace ridge can read: \"{}\" is {}, not an integer id", key, d));
    return static_cast<std::int64_t>(d);
  }
  if (it->is_string()) {
    const std::string_view text = it->get_ref<const std::string&>();
    const auto digit = text.find_first_of("0123456789");
    if (digit == std::string_view::npos) return fallback;
    std::int64_t v = 0;
    if (std::from_chars(text.data() + digit, text.data() + text.size(), v).ec != std::errc())
      throw UsageError(fmt::format("not a trace ridge can read: \"{}\" is too large a number", key));
    return v;
  }
  return fallback;
}

}  // namespace ridge::detail
