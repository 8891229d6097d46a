#include "sweep_support.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

SweepCallbacks sweep_callbacks(const std::string& label, std::FILE* out,
                               std::function<void(std::FILE*, const Record&)> print_record) {
  SweepCallbacks callbacks;
  callbacks.on_record = [out, print_record](const Record& r) { print_record(out, r); };
  callbacks.on_progress = terminal_progress(label);
  callbacks.on_status = [](const std::string& line) {
    if (line.empty())
      progress_done();
    else
      progress(line);
  };
  return callbacks;
}

std::string warning_tags(const Record& r) {
  std::string tags;
  for (const auto& w : r.warnings)
    if (w.rfind("impossible", 0) == 0 || w.rfind("high spread", 0) == 0 || w.rfind("clocks moved", 0) == 0)
      tags += w.substr(0, w.find(':')) + " ";
  return tags;
}

void print_findings(std::FILE* out, const std::vector<Finding>& findings) {
  for (const auto& f : findings) fmt::print(out, "{}{}\n", f.level > 0 ? "  " : "", f.text);
}

void write_plot(const std::string& path, const Plot& plot) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  write_text(path, render_svg(plot));
}

CLI::Option* add_sizes_option(CLI::App& app, std::vector<std::int64_t>& sizes, const std::string& help) {
  auto parse = [](const std::string& text) { return parse_sizes(text); };
  return add_parsed_option(app, "--sizes", sizes, parse, sizes_text(sizes), help)->type_name("SIZES");
}

CLI::Option* add_method_option(CLI::App& app, std::optional<Method>& method, const std::string& help) {
  return add_parsed_option(app, "--method", method, parse_method_option, method_option_text(method), help)
      ->type_name("METHOD");
}

}  // namespace ridge::cli
