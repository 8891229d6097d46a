#pragma once
// Shared plumbing of the `ridge` subcommands. Each cmd_*.cpp registers itself with
// RIDGE_REGISTER_COMMAND; main.cpp parses, dispatches and maps errors to exit codes.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ridge/result.hpp"

namespace ridge::cli {

/// A subcommand: `setup` adds its options and returns the function that runs it.
struct Command {
  std::string name;
  std::string summary;
  int order = 100;  ///< position in --help
  std::function<std::function<int()>(CLI::App&)> setup;
  /// The library's field names whose option is not --field-with-dashes: {"batches", "--batch"}.
  std::vector<std::pair<std::string, std::string>> renamed_fields = {};
};

bool register_command(Command command);

/// The library's usage errors name the field or argument, not a flag ("samples must be >= 1"),
/// as Python users see them too. For the command line this appends the option that sets the
/// field the message starts with: "samples must be >= 1, got 0 (option --samples)". The option
/// is --field-with-dashes when `app` has it, else the command's renamed_fields entry; a message
/// that names no field, or already names the option, is returned as it is.
std::string naming_option(const std::string& message, const CLI::App& app, const Command& command);
std::vector<Command>& commands();

#define RIDGE_CONCAT_INNER(a, b) a##b
#define RIDGE_CONCAT(a, b) RIDGE_CONCAT_INNER(a, b)
#define RIDGE_REGISTER_COMMAND(...) \
  static const bool RIDGE_CONCAT(ridge_registered_, __LINE__) = ::ridge::cli::register_command(__VA_ARGS__)

/// The process's argv, for result-file context.
void set_argv(int argc, char** argv);
const std::vector<std::string>& argv();

/// --json/--csv/--markdown FILE ('-' for stdout).
struct ExportOptions {
  std::string json, csv, markdown;
  void add_to(CLI::App& app);
  bool any() const { return !json.empty() || !csv.empty() || !markdown.empty(); }
  /// True when any export goes to stdout (then human-readable output goes to stderr).
  bool uses_stdout() const { return json == "-" || csv == "-" || markdown == "-"; }
  void write(const ResultSet& set) const;
  /// Checks each path as the writer will treat it (a folder or block device is a usage error),
  /// so a bad path fails before the run, not after it.
  void check() const;
};

/// A result set whose context holds argv, version, time, and (when device >= 0) the device and
/// its clocks at start.
ResultSet new_result_set(int device);
/// Reads the clocks at the end of the run into the context.
void finish_result_set(ResultSet& set, int device);

/// Human output: stdout, or stderr when stdout carries an export.
std::FILE* human_stream(const ExportOptions& exports);

/// The action of a measuring command: run(options, human stream), then write the exports it asked
/// for; exit code 0 (failures throw). `command` holds `options` and `exports`.
template <typename Command, typename Run>
std::function<int()> run_and_export(std::shared_ptr<Command> command, Run run) {
  return [command, run] {
    command->exports.check();
    const ResultSet set = run(command->options, human_stream(command->exports));
    command->exports.write(set);
    return 0;
  };
}

/// A measuring command's result set around its run: the exports are checked (a bad path fails
/// before the run), the context stamped (argv, version, device, clocks at the start),
/// `records(human stream)` run, the clocks read again, and the exports written.
template <typename Records>
void measure_and_export(const ExportOptions& exports, int device, Records records) {
  exports.check();
  ResultSet set = new_result_set(device);
  set.records = records(human_stream(exports));
  finish_result_set(set, device);
  exports.write(set);
}

/// Progress line on stderr, only when stderr is a terminal.
void progress(const std::string& line);
void progress_done();

/// Adds `--device N` (default 0).
void add_device_option(CLI::App& app, int& device);

/// A validator for options read into unsigned integers: CLI11 reads them with strtoull, which
/// turns "-1" into 18446744073709551615. This refuses a leading minus sign (exit 2, naming the
/// option's value). Attach it with ->check(cli::non_negative_integer()).
CLI::Validator non_negative_integer();

/// Attaches non_negative_integer() to every option of `app` (and its subcommands) whose type is
/// unsigned (CLI11 type name UINT), so no command can forget it. main() calls it once, after
/// every command has declared its options. An option whose type name was replaced with
/// ->type_name() must attach the validator itself.
void reject_negative_unsigned(CLI::App& app);

}  // namespace ridge::cli
