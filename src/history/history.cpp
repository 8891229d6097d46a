#include "ridge/history_store.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "history/parallel.hpp"
#include "history/schema.hpp"
#include "history/sqlite.hpp"
#include "ridge/dtype.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/resolution.hpp"
#include "ridge/writers.hpp"

namespace ridge {

using history_detail::Connection;
using history_detail::Statement;
using history_detail::Transaction;

struct History::State {
  std::filesystem::path path;
  Connection connection;
  int schema_version = 0;

  State(std::filesystem::path p, bool create, int busy_timeout_ms)
      : path(std::move(p)), connection(path, create, busy_timeout_ms) {}
};

namespace {

// Version of one exported line's layout ("ridge_history_run" key).
constexpr int json_line_version = 1;

int busy_timeout_ms(const HistoryOptions& options) {
  if (!(options.busy_timeout_s >= 0) || !std::isfinite(options.busy_timeout_s) || options.busy_timeout_s > 86400)
    throw UsageError(fmt::format("busy_timeout_s must be within [0, 86400] seconds, got {}", options.busy_timeout_s));
  return static_cast<int>(std::lround(options.busy_timeout_s * 1000));
}

// FNV-1a, 64 bits: a run's identity for deduplication (not a security boundary).
std::string content_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string single_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The first line git prints for `args` in `folder`; none when git fails or is missing.
std::optional<std::string> git_line(const std::filesystem::path& folder, const std::string& args) {
  const std::string command = fmt::format("git -C {} {} 2>/dev/null", single_quoted(folder.string()), args);
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  const int status = pclose(pipe);
  if (status != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.empty()) return std::nullopt;
  return out;
}

double gate_min_threshold(const Record& r) { return r.gate ? r.gate->min_threshold : 0.0; }

void insert_records(Connection& c, std::int64_t run_id, const ResultSet& run) {
  Statement record(c.get(),
                   "INSERT INTO records (run_id, position, name, method, dtype, params_json, verification, "
                   "gate_informational, gate_min_threshold, median_ms, sm_mhz_start, sm_mhz_end, samples_ms, extra_json, flops, "
                   "bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  Statement document(c.get(), "INSERT INTO record_json (record_id, record_json) VALUES (?1, ?2)");
  for (std::size_t i = 0; i < run.records.size(); ++i) {
    const Record& r = run.records[i];
    nlohmann::json without_samples = to_json(r);
    without_samples.erase("samples_ms");  // in the samples_ms column
    without_samples.erase("summary");     // derived from the samples when read back
    record.bind(1, run_id)
        .bind(2, static_cast<std::int64_t>(i))
        .bind(3, r.name)
        .bind(4, to_string(r.method))
        .bind(5, to_string(r.dtype))
        .bind(6, json_text(r.params, -1))
        .bind(7, r.verification)
        .bind_int(8, r.gate && r.gate->informational ? 1 : 0)
        .bind(9, gate_min_threshold(r))
        .bind(10, r.summary.median)
        .bind(11, r.clocks_start.sm_mhz)
        .bind(12, r.clocks_end.sm_mhz)
        .bind_blob(13, history_detail::encode_samples(r.samples_ms))
        .bind(14, json_text(r.extra, -1))
        .bind(15, r.flops)
        .bind(16, r.bytes);
    record.run();
    document.bind(1, c.last_insert_id()).bind(2, json_text(without_samples, -1)).run();
  }
}

// The run's row; its context as JSON without the records (they have their own tables).
std::int64_t insert_run(Connection& c, const ResultSet& run, const RunProvenance& provenance, const std::string& hash,
                        const std::string& added_utc, nlohmann::json context) {
  context["records"] = nlohmann::json::array();
  const RunContext& x = run.context;
  Statement s(c.get(),
              "INSERT INTO runs (content_hash, commit_sha, branch, run_time_utc, added_utc, machine, gpu, gpu_uuid, "
              "driver_version, ridge_version, ridge_build, source, context_json) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  s.bind(1, hash)
      .bind(2, provenance.commit)
      .bind(3, provenance.branch)
      .bind(4, x.timestamp_utc.empty() ? added_utc : x.timestamp_utc)
      .bind(5, added_utc)
      .bind(6, x.hostname)
      .bind(7, x.device ? x.device->name : std::string())
      .bind(8, x.device ? x.device->uuid : std::string())
      .bind_int(9, x.device ? x.device->driver_version : 0)
      .bind(10, x.tool_version)
      .bind(11, x.git_sha)
      .bind(12, provenance.source)
      .bind(13, json_text(context, -1));
  s.run();
  return c.last_insert_id();
}

AddResult add_run(History::State& state, const ResultSet& run, const RunProvenance& provenance,
                  const std::string& added_utc) {
  if (provenance.commit.empty())
    throw UsageError("commit: empty; give the commit the run measured, or add it from inside its git repository");
  nlohmann::json canonical = to_json(run);
  AddResult result;
  result.content_hash = content_hash(json_text(canonical, -1));
  Connection& c = state.connection;
  Transaction transaction(c);
  Statement existing(c.get(), "SELECT id FROM runs WHERE content_hash = ?1");
  existing.bind(1, result.content_hash);
  if (existing.step()) {
    result.run_id = existing.integer(0);
    return result;  // already there: the transaction rolls back having written nothing
  }
  result.run_id = insert_run(c, run, provenance, result.content_hash, added_utc, std::move(canonical));
  insert_records(c, result.run_id, run);
  transaction.commit();
  result.added = true;
  return result;
}


}  // namespace

std::optional<RunProvenance> git_revision(const std::filesystem::path& folder) {
  const auto commit = git_line(folder, "rev-parse HEAD");
  if (!commit) return std::nullopt;
  RunProvenance p;
  p.commit = *commit;
  // A detached checkout has no branch: symbolic-ref fails there.
  constexpr std::string_view heads = "refs/heads/";
  if (const auto ref = git_line(folder, "symbolic-ref HEAD"); ref && ref->rfind(heads, 0) == 0)
    p.branch = ref->substr(heads.size());
  return p;
}

RunProvenance resolve_provenance(RunProvenance given, const ResultSet& run, const std::filesystem::path& folder) {
  if (!given.commit.empty()) return given;
  if (const auto git = git_revision(folder)) {
    given.commit = git->commit;
    if (given.branch.empty()) given.branch = git->branch;
    return given;
  }
  given.commit = run.context.git_sha;
  return given;
}

History::History(std::unique_ptr<State> state) : state_(std::move(state)) {}
History::~History() = default;
History::History(History&&) noexcept = default;
History& History::operator=(History&&) noexcept = default;

History History::open_or_create(const std::filesystem::path& path, const HistoryOptions& options) {
  const int timeout = busy_timeout_ms(options);
  history_detail::inspect_file(path);
  auto state = std::make_unique<State>(path, true, timeout);
  state->schema_version = history_detail::prepare_schema(state->connection, path, true);
  state->connection.execute("PRAGMA foreign_keys = ON", "enabling foreign keys");
  return History(std::move(state));
}

History History::open_existing(const std::filesystem::path& path, const HistoryOptions& options) {
  const int timeout = busy_timeout_ms(options);
  if (!history_detail::inspect_file(path))
    throw UsageError(fmt::format("history {}: no such history (missing or empty file); add a run to create it",
                                 path.string()));
  auto state = std::make_unique<State>(path, false, timeout);
  state->schema_version = history_detail::prepare_schema(state->connection, path, false);
  state->connection.execute("PRAGMA foreign_keys = ON", "enabling foreign keys");
  return History(std::move(state));
}

const std::filesystem::path& History::path() const { return state_->path; }
int History::schema_version() const { return state_->schema_version; }

AddResult History::add(const ResultSet& run, const RunProvenance& provenance) {
  return add_run(*state_, run, provenance, utc_timestamp_now());
}

std::vector<HistoryRun> History::runs() const {
  Statement s(state_->connection.get(),
              "SELECT id, content_hash, commit_sha, branch, source, run_time_utc, added_utc, machine, gpu, gpu_uuid, "
              "driver_version, ridge_version, ridge_build, (SELECT count(*) FROM records WHERE run_id = runs.id), "
              "json_extract(context_json, '$.context.device.compute_capability') "
              "FROM runs ORDER BY run_time_utc, added_utc, id");
  std::vector<HistoryRun> runs;
  while (s.step()) {
    HistoryRun r;
    r.id = s.integer(0);
    r.content_hash = s.text(1);
    r.commit = s.text(2);
    r.branch = s.text(3);
    r.source = s.text(4);
    r.run_time_utc = s.text(5);
    r.added_utc = s.text(6);
    r.machine = s.text(7);
    r.gpu = s.text(8);
    r.gpu_uuid = s.text(9);
    r.driver_version = static_cast<int>(s.integer(10));
    r.ridge_version = s.text(11);
    r.ridge_build = s.text(12);
    r.records = static_cast<std::size_t>(s.integer(13));
    int major = 0, minor = 0;
    if (!s.is_null(14) && std::sscanf(s.text(14).c_str(), "%d.%d", &major, &minor) == 2)
      r.gpu_family = gpu_family(major, minor);
    runs.push_back(std::move(r));
  }
  return runs;
}

ResultSet History::load_run(std::int64_t run_id) const {
  sqlite3* db = state_->connection.get();
  Statement context(db, "SELECT context_json FROM runs WHERE id = ?1");
  context.bind(1, run_id);
  if (!context.step()) throw UsageError(fmt::format("run_id {}: no such run in {}", run_id, state_->path.string()));
  const std::string where = fmt::format("{} run {}", state_->path.string(), run_id);
  nlohmann::json j = parse_json(context.text(0), where);
  Statement records(db,
                    "SELECT j.record_json, r.samples_ms, r.id FROM records r LEFT JOIN record_json j ON j.record_id = r.id "
                    "WHERE r.run_id = ?1 ORDER BY r.position");
  records.bind(1, run_id);
  nlohmann::json& list = j["records"];
  std::vector<double> samples;
  while (records.step()) {
    if (records.is_null(0))
      throw UsageError(fmt::format("{}: record {} has no JSON (no row in record_json); the file is damaged; restore "
                                   "it from a copy",
                                   where, records.integer(2)));
    list.push_back(parse_json(records.text_view(0), where));
    samples.clear();
    if (const auto blob = records.blob(1); !history_detail::decode_samples(blob, samples))
      throw history_detail::damaged_samples(where, blob.size());
    list.back()["samples_ms"] = samples;
  }
  try {
    return result_set_from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: stored run does not read back: {}", where, e.what()));
  }
}

namespace {

// The stored names of an enum's values ("cuda_events"), matched without building a string a row.
template <typename T, std::size_t N>
std::vector<std::pair<std::string, T>> stored_names(const T (&all)[N]) {
  std::vector<std::pair<std::string, T>> names;
  for (const T value : all) names.emplace_back(to_string(value), value);
  return names;
}

// Summarizes every record (finalize) on every core: the lists are whole runs, independent.
void finalize_all(std::unordered_map<std::int64_t, std::vector<Record>>& by_run, const std::filesystem::path& path) {
  std::vector<std::pair<std::int64_t, std::vector<Record>*>> lists;
  lists.reserve(by_run.size());
  for (auto& [run_id, list] : by_run) lists.emplace_back(run_id, &list);
  history_detail::for_each_on_every_core(lists.size(), [&](std::size_t i) {
    for (Record& r : *lists[i].second) try {
        finalize(r);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("{} run {}: stored record {} does not read back: {}", path.string(),
                                     lists[i].first, r.name, e.what()));
      }
  });
}

}  // namespace

std::unordered_map<std::int64_t, std::vector<Record>> History::records_for_detection() const {
  sqlite3* db = state_->connection.get();
  // One query in key order: each run's rows arrive together, its samples in the same row. The
  // record JSON is in a table of its own, so the rows read here are a fifth of its size.
  Statement records(db,
                    "SELECT id, run_id, name, method, dtype, params_json, gate_informational, gate_min_threshold, "
                    "sm_mhz_start, sm_mhz_end, extra_json, samples_ms, flops, bytes FROM records ORDER BY run_id, position");
  static const auto methods = stored_names(all_methods);
  static const auto dtypes = stored_names(all_dtypes);
  std::unordered_map<std::int64_t, std::vector<Record>> by_run;
  std::unordered_map<std::string, nlohmann::json> params_of_text;  // a few distinct texts, parsed once each
  std::string params_text;                                          // the key looked up, reused
  const std::string where = fmt::format("{} records", state_->path.string());
  std::vector<Record>* list = nullptr;
  std::int64_t list_run = 0;
  while (records.step()) {
    const std::int64_t run_id = records.integer(1);
    if (!list || run_id != list_run) {
      const std::size_t previous_size = list ? list->size() : 0;
      list = &by_run[run_id];  // each run's rows come together (ORDER BY run_id): one lookup a run
      list->reserve(previous_size);  // runs usually hold the same records: no growing and moving
      list_run = run_id;
    }
    Record& r = list->emplace_back();
    r.name = records.text_view(2);
    // The columns hold to_string of the enums, as the record JSON does; "" dtype: none.
    const auto stored = [&](const auto& names, std::string_view text, const char* what) {
      for (const auto& [name, value] : names)
        if (name == text) return value;
      throw UsageError(fmt::format("{}: record {}: unknown {} '{}'", where, records.integer(0), what, text));
    };
    r.method = stored(methods, records.text_view(3), "method");
    if (const std::string_view dtype = records.text_view(4); !dtype.empty()) r.dtype = stored(dtypes, dtype, "dtype");
    params_text.assign(records.text_view(5));
    auto params = params_of_text.find(params_text);
    if (params == params_of_text.end()) params = params_of_text.emplace(params_text, parse_json(params_text, where)).first;
    r.params = params->second;
    const bool informational = records.integer(6) != 0;
    const double min_threshold = records.real(7);
    if (informational || min_threshold != 0) r.gate = RecordGate{informational, min_threshold, {}};
    r.clocks_start.sm_mhz = records.real(8);
    r.clocks_end.sm_mhz = records.real(9);
    r.flops = records.real(12);  // the work per call: runs of another launch shape compare by rate
    r.bytes = records.real(13);
    // Of `extra`, only what compare_results reads: the per-sample clocks, the bound and the
    // carried-over marker.
    if (const std::string_view extra_text = records.text_view(10); extra_text != "{}") {
      Record stored;  // read through the typed fields, so a value of the wrong type is named
      stored.name = r.name;
      stored.extra = parse_json(extra_text, where);
      if (auto v = extra_key::sample_sm_mhz.find(stored)) extra_key::sample_sm_mhz.set(r, *v);
      if (auto v = extra_key::bound.find(stored)) extra_key::bound.set(r, *v);
      if (auto v = extra_key::carried_over.find(stored)) extra_key::carried_over.set(r, *v);
    }
    if (const auto blob = records.blob(11); !history_detail::decode_samples(blob, r.samples_ms))
      throw history_detail::damaged_samples(fmt::format("{} run {} record {}", state_->path.string(), run_id, r.name),
                                            blob.size());
  }
  finalize_all(by_run, state_->path);
  return by_run;
}

std::string History::export_json_lines() const {
  std::string out;
  for (const HistoryRun& r : runs()) {
    const nlohmann::json line = {{"ridge_history_run", json_line_version},
                                 {"commit", r.commit},
                                 {"branch", r.branch},
                                 {"source", r.source},
                                 {"added_utc", r.added_utc},
                                 {"result", to_json(load_run(r.id))}};
    out += json_text(line, -1);
    out += '\n';
  }
  return out;
}

namespace {

struct ImportedRun {
  ResultSet run;
  RunProvenance provenance;
  std::string added_utc;
};

ImportedRun parse_json_line(std::string_view text, const std::string& where) {
  const nlohmann::json j = parse_json(text, where);
  if (!j.is_object() || !j.contains("ridge_history_run") || !j.contains("result"))
    throw UsageError(fmt::format("{}: not a ridge history line (an object with \"ridge_history_run\" and \"result\")",
                                 where));
  if (j["ridge_history_run"] != json_line_version)
    throw UsageError(fmt::format("{}: ridge_history_run {} (this ridge reads {})", where,
                                 j["ridge_history_run"].dump(), json_line_version));
  ImportedRun r;
  const auto text_of = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::string();
    if (!it->is_string()) throw UsageError(fmt::format("{}: {}: expected a string, got {}", where, key, it->dump()));
    return it->get<std::string>();
  };
  r.provenance.commit = text_of("commit");
  r.provenance.branch = text_of("branch");
  r.provenance.source = text_of("source");
  r.added_utc = text_of("added_utc");
  if (r.added_utc.empty()) r.added_utc = utc_timestamp_now();
  if (r.provenance.commit.empty()) throw UsageError(fmt::format("{}: commit: empty (every run needs one)", where));
  try {
    r.run = result_set_from_json(j["result"]);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: result: {}", where, e.what()));
  }
  return r;
}

}  // namespace

ImportResult History::import_json_lines(std::string_view text, const std::string& source) {
  std::vector<ImportedRun> runs;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    runs.push_back(parse_json_line(line, fmt::format("{} line {}", source, line_number)));
  }
  ImportResult result;
  for (const ImportedRun& r : runs) {
    if (add_run(*state_, r.run, r.provenance, r.added_utc).added) ++result.added;
    else ++result.already_present;
  }
  return result;
}

}  // namespace ridge
