#pragma once
// A record carried over from an earlier measurement (the measured ceilings' cache) instead of
// measured in the run that holds it. Every report on one GPU carries the same cached ceiling
// records byte for byte, so comparing them judges nothing: `ridge compare` and `ridge history
// check` show such a record and never judge it. Stored in the record's extra under
// extra_key::carried_over as {"source": ..., "measured_at_utc": ...}; read and written only here.
#include <optional>
#include <string>

#include "ridge/record_keys.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Where a carried-over record came from.
struct CarriedOver {
  std::string source;           ///< e.g. the ceilings cache file it was read from
  std::string measured_at_utc;  ///< when it was measured (ISO 8601); "" unknown
};

/// The record's carried-over marker; none when it was measured in its own run. A marker that is
/// not an object (a damaged file) still counts as carried over, with an unknown source: a record
/// that says it was not measured is never judged.
inline std::optional<CarriedOver> carried_over(const Record& r) {
  const std::optional<nlohmann::json> marker = extra_key::carried_over.find(r);
  if (!marker) return std::nullopt;
  CarriedOver from;
  if (marker->is_object()) {
    from.source = marker->value("source", std::string());
    from.measured_at_utc = marker->value("measured_at_utc", std::string());
  }
  return from;
}

/// Marks `r` as carried over from `from`.
inline void mark_carried_over(Record& r, const CarriedOver& from) {
  extra_key::carried_over.set(r, {{"source", from.source}, {"measured_at_utc", from.measured_at_utc}});
}

}  // namespace ridge
