#pragma once
// Reading and writing ridge's files. Every file ridge writes goes through write_text, and every
// JSON file it reads through parse_json; docs/results-schema.md says what they accept.
#include <filesystem>
#include <string>
#include <string_view>

#include "ridge/result.hpp"

namespace ridge {

/// A record's parameters as "key=value key=value" (strings unquoted), for tables and logs.
std::string params_text(const nlohmann::json& params);
/// CSV: a header and one row per record (times in ms, rates in the units named in the header).
std::string to_csv(const ResultSet& set);
/// Markdown: a context line and a table per record name (n, ms, rate) (the tables of a size sweep).
std::string to_markdown(const ResultSet& set);

/// How write_text delivers to an output path.
enum class OutputKind {
  standard_output,     ///< the path "-"
  in_place,            ///< a character device (/dev/null), a FIFO, or /dev/stdout-like paths: opened and written
  replace_atomically,  ///< a regular file, or one to create: temporary file beside it, then rename
};

/// Where an output path leads: `path` is the file that gets the content (a symlink's final target).
struct OutputTarget {
  OutputKind kind = OutputKind::replace_atomically;
  std::filesystem::path path;
};

/// Checks an output path without writing to it, so a command can refuse a bad one before a long
/// run. Throws UsageError (exit 2) naming the path for a folder, a block device, a socket, a
/// symlink loop, or a path that cannot be examined.
OutputTarget resolve_output(const std::string& path);

/// The one writer of every file ridge produces. "-" is stdout; a character device or FIFO is
/// written in place; a symlink is followed (its target gets the content, the link stays); a
/// regular file is replaced atomically (temporary file in the same folder, then rename; the old
/// file's permissions are kept), so a crash never leaves half a file; missing folders are
/// created; a folder is a UsageError. Throws Error when writing fails.
void write_text(const std::string& path, const std::string& content);

/// JSON text indented by `indent`; strings that are not valid UTF-8 (file names, argv) have the
/// invalid bytes replaced by U+FFFD instead of throwing.
std::string json_text(const nlohmann::json& j, int indent = 2);
/// write_text(path, json_text(j) + "\n").
void write_json(const std::string& path, const nlohmann::json& j);

/// Reads a whole file (a FIFO or device too); throws UsageError naming the path when it cannot
/// be read or is a folder.
std::string read_text(const std::filesystem::path& path);

/// Deepest nesting of objects and arrays parse_json accepts. ridge's own files nest at most 5
/// levels; nlohmann::json copies, prints and compares values recursively, so a file nested
/// 100,000 levels deep would otherwise overflow the stack.
inline constexpr int max_json_depth = 512;

/// Parses JSON text read from `source` (named in errors). Throws UsageError (exit 2) naming the
/// source on a syntax error or nesting deeper than max_json_depth; the depth is checked while
/// parsing, before any recursive step runs.
nlohmann::json parse_json(std::string_view text, const std::string& source);
/// parse_json(read_text(path), path).
nlohmann::json read_json_file(const std::filesystem::path& path);

/// Parses the text of a ridge JSON result file read from `source` (named in errors). Throws
/// UsageError (exit 2) naming the source and the JSON path of the first bad value (see
/// result_set_from_json).
ResultSet parse_result_text(std::string_view text, const std::string& source);
/// Reads a ridge JSON result file, gzip-compressed or not (or a folder holding results.json or
/// results.json.gz): parse_result_text of its text.
ResultSet load_result_file(const std::filesystem::path& path);

/// Writes the exports a user asked for; empty paths are skipped.
void export_results(const ResultSet& set, const std::string& json_path, const std::string& csv_path,
                    const std::string& markdown_path);

}  // namespace ridge
