// The history schema, version 3. One SQLite file (WAL journal), PRAGMA application_id =
// history_application_id and PRAGMA user_version = the schema version.
//
//   runs         one row per run added: its content hash (unique: a run adds once), commit,
//                branch, run time, added time, machine, GPU (name, uuid), driver, ridge version
//                and build, source path, and the result file's context as JSON (records left out).
//   records      one row per record of a run, in file order: what change detection reads, and
//                nothing it does not: its identity (name, method, dtype, params as canonical
//                JSON), what the gate and verdict need (verification, gate informational and
//                min_threshold), median, SM clocks at start and end, its raw samples (ms per
//                operation) in samples_ms: one BLOB of IEEE 754 binary64 values, little-endian,
//                8 bytes each, in order (encode_samples; zero bytes: no samples), its `extra`
//                object as JSON in extra_json, and its work per call (flops, bytes; 0 = not
//                counted), by which runs of another launch shape are compared (work_scale).
//   record_json  one row per record (record_id = records.id): the record as JSON without its
//                samples and summary, `extra` included (load_run and export read it).
//
// Version 1 kept the samples in a table of their own, `samples` (record_id, position, ms), one
// row per sample, and the record JSON in records.record_json: at 10,000 runs x 100 records x 20
// samples, `history check` read 20 million sample rows and 880 MB of JSON it did not need.
// migrate_to_2 moves both out (needs SQLite 3.35 for ALTER TABLE DROP COLUMN).
//
// Version 2 left the work per call in the record JSON only, so detection compared a tuned ceiling
// probe's runs of 3/4 the work as a 25% speed-up; migrate_to_3 copies it into two columns.
//
// A new version adds a migrate_to_N step below and bumps history_schema_version; a file is
// migrated forward in one transaction when a newer ridge opens it.
#include "history/schema.hpp"

#include <sqlite3.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/errors.hpp"
#include "ridge/history_store.hpp"

namespace ridge::history_detail {

namespace {

constexpr const char* schema_v1 = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  content_hash TEXT NOT NULL UNIQUE,
  commit_sha TEXT NOT NULL,
  branch TEXT NOT NULL,
  run_time_utc TEXT NOT NULL,
  added_utc TEXT NOT NULL,
  machine TEXT NOT NULL,
  gpu TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  driver_version INTEGER NOT NULL,
  ridge_version TEXT NOT NULL,
  ridge_build TEXT NOT NULL,
  source TEXT NOT NULL,
  context_json TEXT NOT NULL
);
CREATE INDEX runs_by_time ON runs(run_time_utc, id);
CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  method TEXT NOT NULL,
  dtype TEXT NOT NULL,
  params_json TEXT NOT NULL,
  verification TEXT NOT NULL,
  gate_informational INTEGER NOT NULL,
  gate_min_threshold REAL NOT NULL,
  median_ms REAL NOT NULL,
  sm_mhz_start REAL NOT NULL,
  sm_mhz_end REAL NOT NULL,
  record_json TEXT NOT NULL,
  UNIQUE (run_id, position)
);
CREATE INDEX records_by_identity ON records(name, method, dtype, params_json);
CREATE TABLE samples (
  record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  ms REAL NOT NULL,
  PRIMARY KEY (record_id, position)
) WITHOUT ROWID;
)sql";

void migrate_to_1(Connection& c) { c.execute(schema_v1, "creating the history tables"); }

// records.record_json moves to a table of its own (its `extra` copied into records.extra_json),
// and the samples table's rows become one BLOB per record (records.samples_ms), read in key order
// (record, position) so each record's samples arrive together; then the old table and column go.
void migrate_to_2(Connection& c) {
  c.execute("CREATE TABLE record_json (\n"
            "  record_id INTEGER PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,\n"
            "  record_json TEXT NOT NULL\n"
            ");\n"
            "INSERT INTO record_json (record_id, record_json) SELECT id, record_json FROM records;\n"
            "ALTER TABLE records ADD COLUMN samples_ms BLOB NOT NULL DEFAULT x'';\n"
            "ALTER TABLE records ADD COLUMN extra_json TEXT NOT NULL DEFAULT '{}';\n"
            "UPDATE records SET extra_json = json_extract(record_json, '$.extra')\n"
            "  WHERE json_type(record_json, '$.extra') = 'object';",
            "moving the record JSON to its own table (migrating to schema version 2)");
  {
    Statement rows(c.get(), "SELECT record_id, ms FROM samples ORDER BY record_id, position");
    Statement update(c.get(), "UPDATE records SET samples_ms = ?2 WHERE id = ?1");
    std::vector<double> samples;
    std::int64_t current = 0;
    const auto flush = [&] {
      if (samples.empty()) return;
      update.bind(1, current).bind_blob(2, encode_samples(samples)).run();
      samples.clear();
    };
    while (rows.step()) {
      if (const std::int64_t id = rows.integer(0); id != current) {
        flush();
        current = id;
      }
      samples.push_back(rows.real(1));
    }
    flush();
  }  // both statements finalized before their tables change
  c.execute("DROP TABLE samples; ALTER TABLE records DROP COLUMN record_json;",
            "dropping the version 1 samples table and record column (migrating to schema version 2)");
}

// The work per call (record.flops, record.bytes), which detection reads, in columns of its own.
void migrate_to_3(Connection& c) {
  c.execute("ALTER TABLE records ADD COLUMN flops REAL NOT NULL DEFAULT 0;\n"
            "ALTER TABLE records ADD COLUMN bytes REAL NOT NULL DEFAULT 0;\n"
            "UPDATE records SET\n"
            "  flops = coalesce((SELECT json_extract(record_json, '$.flops') FROM record_json WHERE record_id = records.id), 0),\n"
            "  bytes = coalesce((SELECT json_extract(record_json, '$.bytes') FROM record_json WHERE record_id = records.id), 0);",
            "copying each record's work per call into columns (migrating to schema version 3)");
}

// Step N brings a file from version N - 1 to N; index 0 is creation from nothing.
using Migration = void (*)(Connection&);
constexpr std::array<Migration, history_schema_version> migrations = {migrate_to_1, migrate_to_2, migrate_to_3};

std::vector<std::string> table_names(Connection& c) {
  Statement s(c.get(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
  std::vector<std::string> names;
  while (s.step()) names.push_back(s.text(0));
  return names;
}

// What the file is, read without writing: throws for a file this ridge must not touch; returns
// its version (0: an empty database, to be created).
int readable_version(Connection& c, const std::filesystem::path& path, bool create) {
  const auto application_id = static_cast<std::int32_t>(c.integer_value("PRAGMA application_id"));
  const auto version = static_cast<int>(c.integer_value("PRAGMA user_version"));
  const std::vector<std::string> tables = table_names(c);
  if (application_id != history_application_id) {
    if (tables.empty() && version == 0 && application_id == 0) {
      if (create) return 0;
      throw UsageError(fmt::format("history {}: an empty database, not a ridge history yet; add a run to it first",
                                   path.string()));
    }
    throw UsageError(fmt::format(
        "history {}: an SQLite database, but not a ridge history (application_id {}, tables: {}); give a ridge "
        "history file or a new path",
        path.string(), application_id, tables.empty() ? "none" : fmt::format("{}", fmt::join(tables, ", "))));
  }
  if (version > history_schema_version)
    throw UsageError(fmt::format("history {}: written by a newer ridge (schema version {}; this ridge reads up to "
                                 "version {}); use that ridge or a newer one",
                                 path.string(), version, history_schema_version));
  if (version < 1)
    throw UsageError(fmt::format("history {}: marked as a ridge history but has no schema version; the file is "
                                 "damaged",
                                 path.string()));
  return version;
}

}  // namespace

std::vector<unsigned char> encode_samples(std::span<const double> samples_ms) {
  std::vector<unsigned char> bytes(samples_ms.size() * 8);
  for (std::size_t i = 0; i < samples_ms.size(); ++i) {
    const auto bits = std::bit_cast<std::uint64_t>(samples_ms[i]);
    for (std::size_t b = 0; b < 8; ++b) bytes[i * 8 + b] = static_cast<unsigned char>(bits >> (8 * b));
  }
  return bytes;
}

UsageError damaged_samples(std::string_view where, std::size_t bytes) {
  return UsageError(fmt::format("{}: samples_ms holds {} bytes, not a whole number of 8-byte samples; the file is "
                                "damaged; restore it from a copy",
                                where, bytes));
}

bool decode_samples(std::span<const unsigned char> blob, std::vector<double>& out) {
  if (blob.size() % 8 != 0) return false;
  const std::size_t first = out.size();
  out.resize(first + blob.size() / 8);
  if constexpr (std::endian::native == std::endian::little) {
    if (!blob.empty()) std::memcpy(out.data() + first, blob.data(), blob.size());
  } else {
    for (std::size_t i = 0; i < blob.size() / 8; ++i) {
      std::uint64_t bits = 0;
      for (std::size_t b = 0; b < 8; ++b) bits |= std::uint64_t(blob[i * 8 + b]) << (8 * b);
      out[first + i] = std::bit_cast<double>(bits);
    }
  }
  return true;
}

bool inspect_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && status.type() != std::filesystem::file_type::not_found)
    throw UsageError(fmt::format("history {}: cannot examine it: {}", path.string(), ec.message()));
  if (status.type() == std::filesystem::file_type::not_found) return false;
  if (status.type() == std::filesystem::file_type::directory)
    throw UsageError(fmt::format("history {}: is a folder; give the path of a history file", path.string()));
  if (status.type() != std::filesystem::file_type::regular)
    throw UsageError(fmt::format("history {}: not a regular file (a FIFO, device or socket); give a history file",
                                 path.string()));
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw UsageError(fmt::format("history {}: cannot read its size: {}", path.string(), ec.message()));
  if (size == 0) return false;
  std::array<unsigned char, 100> header{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  const auto got = static_cast<std::size_t>(in.gcount());
  constexpr std::string_view magic("SQLite format 3\0", 16);
  if (got < header.size() || std::string_view(reinterpret_cast<const char*>(header.data()), magic.size()) != magic)
    throw UsageError(fmt::format("history {}: not an SQLite database ({} bytes without SQLite's header); give a "
                                 "ridge history file or a new path",
                                 path.string(), size));
  // The header's page size (1 means 65536) and page count, valid when the change counter matches
  // the version-valid-for number; without a WAL beside it the file must hold every page.
  const auto be32 = [&](std::size_t at) {
    return std::uint32_t(header[at]) << 24 | std::uint32_t(header[at + 1]) << 16 | std::uint32_t(header[at + 2]) << 8 |
           std::uint32_t(header[at + 3]);
  };
  const std::uint32_t raw_page = std::uint32_t(header[16]) << 8 | header[17];
  const std::uintmax_t page_size = raw_page == 1 ? 65536 : raw_page;
  const std::uintmax_t pages = be32(28);
  const bool count_valid = be32(24) == be32(92) && pages > 0;
  const bool wal_beside = std::filesystem::exists(path.string() + "-wal", ec);
  if (count_valid && !wal_beside && size < pages * page_size)
    throw UsageError(fmt::format("history {}: truncated ({} bytes of the {} its header says); restore it from a copy",
                                 path.string(), size, pages * page_size));
  return true;
}

namespace {

/// Switches the file to WAL. SQLite does not wait on its busy handler for this (the switch needs
/// every other connection out of the file), so writers creating one file at once retry here until
/// the busy timeout.
void use_wal(Connection& c) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.busy_timeout_ms());
  for (;;) {
    const int rc = sqlite3_exec(c.get(), "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline) {
      check(rc, c.get(), "switching to the WAL journal");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

int prepare_schema(Connection& c, const std::filesystem::path& path, bool create) {
  // The marks and the tables read in one snapshot: read one by one, another writer creating the
  // file could commit between them, and its tables would be seen without its marks.
  int found = 0;
  {
    Transaction snapshot(c, true);
    found = readable_version(c, path, create);
    snapshot.commit();
  }
  if (found == history_schema_version) {
    use_wal(c);
    return found;
  }
  // A new or older file: WAL first (it cannot change inside a transaction), then create or
  // migrate under the write lock, reading the version again (another writer may have done it).
  use_wal(c);
  Transaction transaction(c);
  int version = readable_version(c, path, create);
  for (; version < history_schema_version; ++version) migrations[static_cast<std::size_t>(version)](c);
  c.execute(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", history_application_id, version),
            "marking the file as a ridge history");
  transaction.commit();
  return version;
}

}  // namespace ridge::history_detail
