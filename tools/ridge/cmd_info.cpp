// `ridge info`: prints device_info() (ridge/device.hpp): properties, the datasheet entry it
// matched, clocks and NVML state.
#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/device.hpp"
#include "ridge/format.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {
namespace {

DeviceInfo run_info(int device, std::FILE* out) {
  const DeviceInfo info = device_info(device);
  const auto& d = info.device;
  const auto& c = info.clocks;
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
    fmt::print(out, "  clock limits now    {}\n", info.clock_limits.empty() ? "none" : info.clock_limits);
  } else {
    fmt::print(out, "  current clocks      unavailable: NVML {}\n", info.nvml_status);
  }
  fmt::print(out, "  driver / runtime    CUDA {} / CUDA {}\n", cuda(d.driver_version), cuda(d.runtime_version));
  if (const auto& entry = info.datasheet) {
    fmt::print(out, "  datasheet entry     {} (`{}`): {} memory bandwidth", entry->name, entry->key,
               format_bytes_per_s(entry->ceilings.memory_bytes_per_s));
    for (const char* t : {"fp32", "tf32", "bf16", "fp8_e4m3"})
      if (double p = entry->ceilings.peak_flops(t); p > 0) fmt::print(out, ", {} {}", t, format_flops(p));
    fmt::print(out, " (dense)\n  datasheet source    {}\n", entry->source);
  } else {
    fmt::print(out, "  datasheet entry     none matched: ridge works from measured ceilings (`ridge roofline`)\n");
  }
  return info;
}


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
        const DeviceInfo info = run_info(opts->device, opts->json == "-" ? stderr : stdout);
        ResultSet set = new_result_set(opts->device);
        set.context.device = info.device;  // with its catalog key
        set.context.clocks_start = info.clocks;
        finish_result_set(set, opts->device);
        if (!opts->json.empty()) write_json(opts->json, to_json(set));
        return 0;
      });
    }});

}  // namespace
}  // namespace ridge::cli
