// The report's testing aid that slows chosen records after measurement (detail::RecordSlowdown).
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "report/sections/sections.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"

namespace ridge::detail {

void RecordSlowdown::validate() const {
  if (selector.find_first_not_of(" \t") == std::string::npos)
    throw UsageError("slow_records needs a selector: the record's name, method, dtype or params as key=value");
  if (!(relative >= 0) || !std::isfinite(relative) || relative > 100)
    throw UsageError(fmt::format("the slowdown's relative part must be within [0, 100] (0.1 = 10%), got {}", relative));
  if (!(added_us >= 0) || !std::isfinite(added_us) || added_us > 1e7)
    throw UsageError(fmt::format("the slowdown's added time must be within [0, 1e7] us, got {}", added_us));
  if (relative == 0 && added_us == 0)
    throw UsageError("the slowdown is zero: give a relative part (0.1 = 10%) or microseconds to add");
}

bool RecordSlowdown::selects(const Record& r) const {
  std::istringstream words(selector);
  std::string word;
  bool any = false;
  while (words >> word) {
    any = true;
    if (word == r.name || word == to_string(r.method) || (r.dtype && word == to_string(*r.dtype))) continue;
    const auto equals = word.find('=');
    if (equals == std::string::npos) return false;
    const auto param = r.params.find(word.substr(0, equals));
    if (param == r.params.end()) return false;
    const std::string value = param->is_string() ? param->get<std::string>() : param->dump();
    if (value != word.substr(equals + 1)) return false;
  }
  return any;
}

std::size_t RecordSlowdown::apply(std::vector<Record>& records) const {
  std::size_t slowed = 0;
  for (Record& r : records) {
    if (!selects(r) || r.method == Method::none) continue;
    for (double& sample : r.samples_ms) sample = sample * (1 + relative) + added_us * 1e-3;
    finalize(r);
    r.warnings.push_back(fmt::format("deliberately slowed after measurement by a testing aid: each sample x {:g} + "
                                     "{:g} us; not a measurement",
                                     1 + relative, added_us));
    ++slowed;
  }
  return slowed;
}

}  // namespace ridge::detail
