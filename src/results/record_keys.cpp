#include "ridge/record_keys.hpp"

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/result.hpp"

namespace ridge {

namespace detail {

const nlohmann::json* find_extra(const Record& record, const char* key) {
  if (!record.extra.is_object()) return nullptr;
  const auto it = record.extra.find(key);
  return it == record.extra.end() || it->is_null() ? nullptr : &*it;
}

nlohmann::json& extra_slot(Record& record, const char* key) {
  if (record.extra.is_null()) record.extra = nlohmann::json::object();
  return record.extra[key];
}

void throw_wrong_extra_type(const Record& record, const char* key, const char* expected, const nlohmann::json& got) {
  throw UsageError(fmt::format("record '{}': extra '{}' should be {}, not {} {}", record.name, key, expected,
                               got.type_name(), got.dump().substr(0, 60)));
}

}  // namespace detail

namespace extra_key {

std::string knee_elements(double fraction) { return fmt::format("knee_{:.0f}_elements", fraction * 100); }

std::string knee_of_peak_n(double fraction, const std::string& ceiling_label) {
  return fmt::format("knee_{:.0f}_of_{}_peak_n", fraction * 100, ceiling_label);
}

}  // namespace extra_key

}  // namespace ridge
