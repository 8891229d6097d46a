#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/catalog.hpp"
#include "ridge/device.hpp"
#include "ridge/format.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

ResultSet run_info(int device, std::FILE* out) {
  require_gpu(device);
  ResultSet set = new_result_set(device);
  const auto entry = match_device(*set.context.device);
  if (entry) set.context.device->catalog_key = entry->key;
  const auto& d = *set.context.device;
  const auto& c = set.context.clocks_start;
  auto cuda = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  fmt::print(out, "device {}: {}\n", d.index, d.name);
  fmt::print(out, "  uuid                {}\n", d.uuid);
  fmt::print(out, "  compute capability  {}.{}\n", d.compute_capability_major, d.compute_capability_minor);
  fmt::print(out, "  SMs                 {}\n", d.sm_count);
  fmt::print(out, "  L2 cache            {} ({} bytes)\n", format_bytes(double(d.l2_bytes)), d.l2_bytes);
  fmt::print(out, "  memory              {} ({} bytes), {}-bit bus\n", format_bytes(double(d.memory_bytes)),
             d.memory_bytes, d.memory_bus_bits);
  fmt::print(out, "  max clocks          SM {:.0f} MHz, memory {:.0f} MHz (device attributes)\n", d.max_sm_clock_mhz,
             d.max_memory_clock_mhz);
  if (c.source == "nvml") {
    fmt::print(out, "  current clocks      SM {:.0f} MHz, memory {:.0f} MHz (NVML)\n", c.sm_mhz, c.memory_mhz);
    fmt::print(out, "  power, temperature  {:.0f} W, {:.0f} C\n", c.power_w, c.temperature_c);
    const std::string reasons = throttle_reason_names(c.throttle_reasons);
    fmt::print(out, "  clock limits now    {}\n", reasons.empty() ? "none" : reasons);
  } else {
    fmt::print(out, "  current clocks      unavailable: NVML {}\n", nvml_status());
  }
  fmt::print(out, "  driver / runtime    CUDA {} / CUDA {}\n", cuda(d.driver_version), cuda(d.runtime_version));
  if (entry) {
    fmt::print(out, "  datasheet entry     {} (`{}`): {} memory bandwidth", entry->name, entry->key,
               format_bytes_per_s(entry->bandwidth_bytes_per_s));
    for (const char* t : {"fp32", "tf32", "bf16", "fp8_e4m3"})
      if (auto p = entry->peak_flops.find(t); p != entry->peak_flops.end())
        fmt::print(out, ", {} {}", t, format_flops(p->second));
    fmt::print(out, " (dense)\n  datasheet source    {}\n", entry->source);
  } else {
    fmt::print(out, "  datasheet entry     none matched: ridge works from measured ceilings (`ridge roofline`)\n");
  }
  return set;
}

namespace {

struct InfoCommand {
  int device = 0;
  std::string json;
};

RIDGE_REGISTER_COMMAND(Command{
    "info", "device properties, clocks, driver and runtime versions", 10, [](CLI::App& app) {
      auto opts = std::make_shared<InfoCommand>();
      add_device_option(app, opts->device);
      app.add_option("--json", opts->json, "write the device description as JSON to FILE ('-' for stdout)")
          ->type_name("FILE");
      return std::function<int()>([opts] {
        ResultSet set = run_info(opts->device, opts->json == "-" ? stderr : stdout);
        finish_result_set(set, opts->device);
        if (!opts->json.empty()) write_json(opts->json, to_json(set));
        return 0;
      });
    }});

}  // namespace
}  // namespace ridge::cli
