// `ridge report`: the main job. Runs the suite on one GPU and writes one folder of results.
#include <filesystem>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/device.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

struct ReportCommand {
  int device = 0;
  std::string out_dir;
  bool quick = false;
};

std::string default_folder() {
  std::string ts = utc_timestamp_now();
  for (auto& c : ts)
    if (c == ':') c = '-';
  return "runs/report-" + ts;
}

int run_report(const ReportCommand& c) {
  const std::string folder = c.out_dir.empty() ? default_folder() : c.out_dir;
  std::filesystem::create_directories(folder);
  ResultSet all = new_result_set(device_count() > c.device ? c.device : -1);
  std::string markdown = "# ridge report\n\n";
  if (device_count() <= c.device) {
    markdown += fmt::format("Model-only report: no usable GPU ({}).\n", no_gpu_reason());
    fmt::print(stderr, "ridge report: no usable GPU ({}); writing a model-only report\n", no_gpu_reason());
  } else {
    progress("report: device info");
    run_info(c.device, stdout);
    TimingOptions timing;
    timing.device = c.device;
    if (c.quick) timing.samples = 10;
    ResultSet t = run_timing(timing, stdout);
    all.records.insert(all.records.end(), t.records.begin(), t.records.end());
    markdown += to_markdown(t);
  }
  finish_result_set(all, device_count() > c.device ? c.device : -1);
  write_text(folder + "/results.json", to_json(all).dump(2) + "\n");
  write_text(folder + "/report.md", markdown);
  fmt::print("\nreport written to {}/ (report.md, results.json)\n", folder);
  return 0;
}

RIDGE_REGISTER_COMMAND(Command{"report", "the main job: run the suite on one GPU and write one report folder", 90,
                               [](CLI::App& app) {
                                 auto c = std::make_shared<ReportCommand>();
                                 add_device_option(app, c->device);
                                 app.add_option("-o,--output", c->out_dir,
                                                "report folder (default runs/report-<UTC timestamp>)");
                                 app.add_flag("--quick", c->quick, "a short run");
                                 return std::function<int()>([c] { return run_report(*c); });
                               }});

}  // namespace
}  // namespace ridge::cli
