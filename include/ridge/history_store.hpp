#pragma once
// The run history's store: every run kept in one SQLite file (ridge::History), with where each
// run's code came from. CPU only; built when CMake finds SQLite (Debian libsqlite3-dev).
// (Implementation: src/history/history.cpp, schema.cpp, sqlite.cpp; the schema is documented in
// src/history/schema.cpp and docs/architecture.md.) Detection over it: history_check.hpp; its
// page: history_page.hpp; all three: history.hpp.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/compare.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Schema version of the history file this ridge writes (`PRAGMA user_version`). Older files are
/// migrated forward when opened; a newer one is refused with both versions named.
inline constexpr int history_schema_version = 3;
/// `PRAGMA application_id` of a ridge history file ("RDGH"), which tells it from other SQLite files.
inline constexpr std::int32_t history_application_id = 0x52444748;

/// Where a run's code came from. Empty fields are filled by History::add from the run's context.
struct RunProvenance {
  std::string commit;  ///< the commit measured (a git sha, or any label that orders like one)
  std::string branch;
  std::string source;  ///< the file or folder it was read from
};

/// The commit and branch of the git repository holding `folder`; none when it is not in one or
/// git is not installed.
std::optional<RunProvenance> git_revision(const std::filesystem::path& folder);

/// Fills `commit` and `branch` where empty: from the git repository at `folder` when there is
/// one, else the commit from the result's context (the git sha of the ridge that wrote it).
RunProvenance resolve_provenance(RunProvenance given, const ResultSet& run, const std::filesystem::path& folder);

/// One run as the history lists it.
struct HistoryRun {
  std::int64_t id = 0;
  std::string content_hash;  ///< 16 hex digits, FNV-1a 64 of the run's canonical JSON: the same run adds once
  std::string commit, branch, source;
  std::string run_time_utc;  ///< ISO 8601, from the result file (its added time when it has none)
  std::string added_utc;     ///< when it entered this history (kept across export and import)
  std::string machine;       ///< host name
  std::string gpu;           ///< device name ("" when the run had no device)
  std::string gpu_uuid;
  int driver_version = 0;  ///< CUDA driver version, e.g. 13000; 0 unknown
  /// gpu_family() of the device's compute capability, as its result file recorded it ("" unknown).
  std::string gpu_family;
  std::string ridge_version, ridge_build;  ///< the ridge that measured it: version and git sha
  std::size_t records = 0;
};

/// What History::add did.
struct AddResult {
  bool added = false;  ///< false: the same run (same content hash) was already there; nothing changed
  std::int64_t run_id = 0;
  std::string content_hash;
};

/// What History::import_json_lines did.
struct ImportResult {
  std::size_t added = 0, already_present = 0;
};

struct HistoryOptions {
  /// How long a write waits for another writer's lock before failing, in seconds.
  double busy_timeout_s = 10;
};

/// A history file. Opening checks it before anything is written: a folder, a file that is not
/// SQLite, a truncated file, an SQLite file that is not a ridge history, or a history of a newer
/// schema is a UsageError naming the problem, and the file is left as it was. Writers on one
/// machine or on a shared disk with working locks may add at once (WAL, one transaction per run).
class History {
 public:
  /// Opens the history at `path`, creating it (and nothing else: not its folder) when missing.
  static History open_or_create(const std::filesystem::path& path, const HistoryOptions& options = {});
  /// Opens an existing history; a missing or empty file is a UsageError.
  static History open_existing(const std::filesystem::path& path, const HistoryOptions& options = {});
  ~History();
  History(History&&) noexcept;
  History& operator=(History&&) noexcept;

  const std::filesystem::path& path() const;
  /// The schema version of the open file (history_schema_version once opened).
  int schema_version() const;

  /// Adds one run (context, records, raw samples) in one transaction. `provenance` must have a
  /// commit (see resolve_provenance). Adding a run already present changes nothing.
  AddResult add(const ResultSet& run, const RunProvenance& provenance);
  /// Every run, oldest first (by run time, then by when it was added).
  std::vector<HistoryRun> runs() const;
  /// A stored run, as it was added.
  ResultSet load_run(std::int64_t run_id) const;
  /// Every run's records as change detection reads them, by run id, each run's in file order:
  /// name, method, dtype, params, gate (informational and min_threshold; no reason), SM clocks at
  /// start and end (sm_mhz only), work per call (flops, bytes), raw samples and their summary, and of `extra` only what
  /// compare_results reads (sample_sm_mhz, bound). Read from the columns in one streaming query
  /// and summarized on every core: no record's JSON is parsed whole (load_run does that, about 4x
  /// slower at scale).
  std::unordered_map<std::int64_t, std::vector<Record>> records_for_detection() const;

  /// Every run as JSON lines, oldest first: one object a line with its provenance and the result
  /// file's JSON, so import into another history reproduces it exactly.
  std::string export_json_lines() const;
  /// Adds each line's run (one transaction each; runs already present are counted, not added).
  /// Lines are all parsed first: a bad line is a UsageError naming `source` and the line number,
  /// and nothing is added then.
  ImportResult import_json_lines(std::string_view text, const std::string& source);

  /// Implementation detail (the open connection); public only so src/history can reach it.
  struct State;

 private:
  explicit History(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Plain text for a terminal: one line per run.
std::string to_text(std::span<const HistoryRun> runs);
/// A run's fields as one JSON object (keys as HistoryRun's members; `commit` for the commit).
nlohmann::json to_json(const HistoryRun& run);

}  // namespace ridge
