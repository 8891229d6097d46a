#include "cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <fmt/format.h>

#include "ridge/device.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

bool register_command(Command command) {
  commands().push_back(std::move(command));
  return true;
}

std::string naming_option(const std::string& message, const CLI::App& app, const Command& command) {
  std::size_t end = 0;
  while (end < message.size() && (std::islower(static_cast<unsigned char>(message[end])) || message[end] == '_')) ++end;
  if (end == 0 || (end < message.size() && message[end] != ' ' && message[end] != ':')) return message;
  const std::string field = message.substr(0, end);
  std::string option;
  for (const auto& [name, renamed] : command.renamed_fields)
    if (name == field) option = renamed;
  if (option.empty()) {
    std::string dashed = field;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    if (app.get_option_no_throw("--" + dashed)) option = "--" + dashed;
  }
  if (option.empty() || message.find(option) != std::string::npos) return message;
  return fmt::format("{} (option {})", message, option);
}

static std::vector<std::string> g_argv;
void set_argv(int argc, char** argv) { g_argv.assign(argv, argv + argc); }
const std::vector<std::string>& argv() { return g_argv; }

void ExportOptions::add_to(CLI::App& app) {
  app.add_option("--json", json, "write results as JSON to FILE ('-' for stdout)")->type_name("FILE");
  app.add_option("--csv", csv, "write results as CSV to FILE ('-' for stdout)")->type_name("FILE");
  app.add_option("--markdown", markdown, "write results as Markdown to FILE ('-' for stdout)")->type_name("FILE");
}

void ExportOptions::write(const ResultSet& set) const { export_results(set, json, csv, markdown); }

void ExportOptions::check() const {
  for (const std::string* path : {&json, &csv, &markdown})
    if (!path->empty()) resolve_output(*path);
}

ResultSet new_result_set(int device) {
  ResultSet set;
  std::vector<const char*> raw;
  for (const auto& a : g_argv) raw.push_back(a.c_str());
  set.context = make_context(static_cast<int>(raw.size()), raw.data());
  if (device >= 0 && device_count() > device) {
    set.context.device = describe_device(device);
    set.context.clocks_start = read_clocks(device);
  }
  return set;
}

void finish_result_set(ResultSet& set, int device) {
  if (device >= 0 && device_count() > device) set.context.clocks_end = read_clocks(device);
}

std::FILE* human_stream(const ExportOptions& exports) { return exports.uses_stdout() ? stderr : stdout; }

void progress(const std::string& line) {
  if (!isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
}

void progress_done() {
  if (!isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& value) {
        const auto first = value.find_first_not_of(" \t");
        if (first != std::string::npos && value[first] == '-')
          return "must be a whole number >= 0, got " + value;
        return std::string();
      },
      "");
}

void reject_negative_unsigned(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_type_name().rfind("UINT", 0) == 0) option->check(non_negative_integer());
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) reject_negative_unsigned(*sub);
}

void add_device_option(CLI::App& app, int& device) {
  app.add_option("--device", device, "CUDA device index")->default_val(0)->check(CLI::NonNegativeNumber);
}

}  // namespace ridge::cli
