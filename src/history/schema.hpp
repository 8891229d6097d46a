#pragma once
// The history file's schema: checking a file before it is opened, creating the tables, migrating
// older versions forward. Internal to src/history.
#include <filesystem>

#include "history/sqlite.hpp"

namespace ridge::history_detail {

/// Checks `path` without opening it through SQLite: a folder, a FIFO or device, a file that does
/// not start with SQLite's header, or one shorter than its header says is a UsageError naming
/// it. Returns false when the file does not exist or is empty (a new history).
bool inspect_file(const std::filesystem::path& path);

/// Makes the open file a history of history_schema_version: creates the tables in a new file,
/// migrates an older ridge history forward, and refuses (UsageError, nothing written) a newer
/// one or an SQLite database that is not a ridge history. `create`: an empty file may become one.
/// Returns the schema version.
int prepare_schema(Connection& connection, const std::filesystem::path& path, bool create);

}  // namespace ridge::history_detail
