#pragma once
// The history file's schema: checking a file before it is opened, creating the tables, migrating
// older versions forward. Internal to src/history.
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "history/sqlite.hpp"
#include "ridge/errors.hpp"

namespace ridge::history_detail {

/// Checks `path` without opening it through SQLite: a folder, a FIFO or device, a file that does
/// not start with SQLite's header, or one shorter than its header says is a UsageError naming
/// it. Returns false when the file does not exist or is empty (a new history).
bool inspect_file(const std::filesystem::path& path);

/// A record's raw samples (ms) as stored in `records.samples_ms` (schema version 2): each sample
/// an IEEE 754 binary64 in little-endian byte order, 8 bytes, in sample order, nothing else.
std::vector<unsigned char> encode_samples(std::span<const double> samples_ms);

/// Appends the samples a `records.samples_ms` BLOB holds to `out`. False, `out` unchanged, for a
/// BLOB whose size is not a multiple of 8 (a damaged file: see damaged_samples).
[[nodiscard]] bool decode_samples(std::span<const unsigned char> blob, std::vector<double>& out);

/// The UsageError for a samples_ms BLOB decode_samples refused, naming `where` (file, run, record).
UsageError damaged_samples(std::string_view where, std::size_t bytes);

/// Makes the open file a history of history_schema_version: creates the tables in a new file,
/// migrates an older ridge history forward, and refuses (UsageError, nothing written) a newer
/// one or an SQLite database that is not a ridge history. `create`: an empty file may become one.
/// Returns the schema version.
int prepare_schema(Connection& connection, const std::filesystem::path& path, bool create);

}  // namespace ridge::history_detail
