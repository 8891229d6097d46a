#pragma once
#include <filesystem>
#include <string>

#include "ridge/result.hpp"

namespace ridge {

/// A record's parameters as "key=value key=value" (strings unquoted), for tables and logs.
std::string params_text(const nlohmann::json& params);
/// CSV: a header and one row per record (times in ms, rates in the units named in the header).
std::string to_csv(const ResultSet& set);
/// Markdown: a context line and a table per record name (n, ms, rate) (the tables of a size sweep).
std::string to_markdown(const ResultSet& set);

/// Writes `content` to `path`, or to stdout when path is "-". Files are written atomically
/// (temporary file + rename) so a crash never leaves half a file. Throws Error on failure.
void write_text(const std::string& path, const std::string& content);

/// Reads a whole file; throws UsageError naming the path when it cannot be read.
std::string read_text(const std::filesystem::path& path);

/// Reads a ridge JSON result file (or a folder holding results.json).
ResultSet load_result_file(const std::filesystem::path& path);

/// Writes the exports a user asked for; empty paths are skipped.
void export_results(const ResultSet& set, const std::string& json_path, const std::string& csv_path,
                    const std::string& markdown_path);

}  // namespace ridge
