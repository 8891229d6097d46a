#pragma once
// Printing helpers the sweep commands (timing, bandwidth, matmul) share.
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"
#include "ridge/sweep.hpp"

namespace ridge::cli {

/// Callbacks that print each record with `print_record` on `out`, and show progress and status
/// on stderr when it is a terminal.
SweepCallbacks sweep_callbacks(const std::string& label, std::FILE* out,
                               std::function<void(std::FILE*, const Record&)> print_record);

/// The short tags of a record's serious warnings ("impossible", "high spread", "clocks moved"),
/// each followed by a space, for a table's notes column.
std::string warning_tags(const Record& record);

/// Findings, details indented under their headline.
void print_findings(std::FILE* out, const std::vector<Finding>& findings);

/// Renders `plot` as SVG and writes it to `path` (atomically), creating its folder.
void write_plot(const std::string& path, const Plot& plot);

// ---- options read from text into the library's types --------------------------------------------

/// Adds option `name` whose text `parse` turns into the typed `value` the library takes; --help
/// shows `default_text` (the option struct's default, written back as text). A UsageError from
/// `parse` comes back naming the option ("--ops: unknown op 'fma': ...").
template <typename T, typename Parse>
CLI::Option* add_parsed_option(CLI::App& app, const std::string& name, T& value, Parse parse,
                               const std::string& default_text, const std::string& help) {
  CLI::Option* option = app.add_option_function<std::string>(
      name,
      [&value, parse, name](const std::string& text) {
        try {
          value = parse(text);
        } catch (const UsageError& e) {
          throw UsageError(fmt::format("{}: {}", name, e.what()));
        }
      },
      help);
  if (!default_text.empty()) option->default_str(default_text);
  return option;
}

/// A comma list of names, each read by `from_string` (e.g. stream_op_from_string); --help shows
/// the default `values` written with to_string.
template <typename T>
CLI::Option* add_list_option(CLI::App& app, const std::string& name, std::vector<T>& values,
                             T (*from_string)(const std::string&), const std::string& help) {
  std::vector<std::string> names;
  for (const T& v : values) names.push_back(to_string(v));
  auto parse = [from_string](const std::string& text) {
    std::vector<T> out;
    for (const auto& item : parse_list(text, "the list")) out.push_back(from_string(item));
    return out;
  };
  return add_parsed_option(app, name, values, parse, fmt::format("{}", fmt::join(names, ",")), help)->type_name("LIST");
}

/// --sizes read by parse_sizes; --help shows the default as sizes_text writes it.
CLI::Option* add_sizes_option(CLI::App& app, std::vector<std::int64_t>& sizes, const std::string& help);

/// --method: "auto" (nullopt) or a method name, read by parse_method_option.
CLI::Option* add_method_option(CLI::App& app, std::optional<Method>& method, const std::string& help);

}  // namespace ridge::cli
