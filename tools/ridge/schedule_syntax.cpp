// `--schedule wait=9,warmup=0,active=1,repeat=0,skip_first=10` into a TraceSchedule.
#include "schedule_syntax.hpp"

#include <charconv>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::cli {

trace::TraceSchedule parse_schedule(const std::string& text) {
  trace::TraceSchedule s;
  std::set<std::string, std::less<>> seen;
  std::string_view rest = text;
  while (true) {
    const std::string_view item = rest.substr(0, rest.find(','));
    const auto equals = item.find('=');
    const std::string_view key = item.substr(0, equals), value = equals == std::string_view::npos ? "" : item.substr(equals + 1);
    std::uint64_t* field = key == "skip_first" ? &s.skip_first
                           : key == "wait"     ? &s.wait
                           : key == "warmup"   ? &s.warmup
                           : key == "active"   ? &s.active
                           : key == "repeat"   ? &s.repeat
                                               : nullptr;
    if (field == nullptr || equals == std::string_view::npos)
      throw UsageError(fmt::format("--schedule '{}': '{}' is not KEY=N with KEY one of skip_first, wait, warmup, active, "
                                   "repeat (e.g. --schedule wait=9,active=1)",
                                   text, item));
    if (!seen.emplace(key).second) throw UsageError(fmt::format("--schedule '{}': {} is given twice", text, key));
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *field);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty())
      throw UsageError(fmt::format("--schedule '{}': {} must be a non-negative integer, got '{}'", text, key, value));
    if (item.size() == rest.size()) break;
    rest.remove_prefix(item.size() + 1);
  }
  return s;
}

}  // namespace ridge::cli
