// CountedWork's JSON form: what records keep under extra.counters and what a pickled Python
// Measurement carries.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"
#include "ridge/measure.hpp"

namespace ridge {

nlohmann::json to_json(const CountedWork& c) {
  return {{"metric_set", c.metric_set},
          {"kernels", c.kernels},
          {"passes", c.passes},
          {"dram_read_bytes", c.work.dram_read_bytes},
          {"dram_write_bytes", c.work.dram_write_bytes},
          {"l2_bytes", c.work.l2_bytes},
          {"flops", c.work.flops},
          {"profiled_duration_ns", c.work.profiled_duration_ns},
          {"profiled_sm_mhz", c.work.profiled_sm_hz / 1e6},
          {"missing", c.work.missing},
          {"metrics_not_offered", c.metrics_not_offered}};
}

CountedWork counted_work_from_json(const nlohmann::json& j) {
  CountedWork c;
  try {
    c.metric_set = j.value("metric_set", c.metric_set);
    c.kernels = j.at("kernels").get<std::uint64_t>();
    c.passes = j.value("passes", std::size_t{0});
    c.work.dram_read_bytes = j.at("dram_read_bytes").get<double>();
    c.work.dram_write_bytes = j.at("dram_write_bytes").get<double>();
    c.work.l2_bytes = j.value("l2_bytes", 0.0);
    c.work.flops = j.value("flops", std::map<std::string, double>{});
    c.work.profiled_duration_ns = j.value("profiled_duration_ns", 0.0);
    c.work.profiled_sm_hz = j.value("profiled_sm_mhz", 0.0) * 1e6;
    c.work.missing = j.value("missing", std::vector<std::string>{});
    c.metrics_not_offered = j.value("metrics_not_offered", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("counters: malformed counted work ({})", e.what()));
  }
  return c;
}

}  // namespace ridge
