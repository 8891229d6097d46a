#include "history/sqlite.hpp"

#include <sqlite3.h>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::history_detail {

namespace {

// What a user can do about each kind of failure, beside SQLite's own words.
std::string advice(int primary) {
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process held the database longer than the busy timeout; retry, or raise busy_timeout_s";
    case SQLITE_FULL: return "the disk is full; free space and retry (the database was left as it was)";
    case SQLITE_READONLY: return "the file or its folder is read-only; the history needs write access";
    case SQLITE_CANTOPEN: return "the path cannot be opened (missing folder, permissions?)";
    case SQLITE_IOERR: return "an I/O error; check the disk (a network disk must support file locks)";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return "the file is damaged or not a ridge history; restore it from a copy";
    default: return "";
  }
}

}  // namespace

void check(int rc, sqlite3* db, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  const int primary = rc & 0xff;
  const std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const std::string hint = advice(primary);
  const std::string text = fmt::format("history: {} failed: {} ({}){}{}", what, message, sqlite3_errstr(primary),
                                       hint.empty() ? "" : ": ", hint);
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) throw UsageError(text);
  throw Error(text);
}

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db), sql_(sql) {
  check(sqlite3_prepare_v2(db, sql_.c_str(), static_cast<int>(sql_.size()), &statement_, nullptr), db,
        "preparing a statement");
}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement& Statement::bind(int index, std::string_view text) {
  check(sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT), db_,
        "binding a value");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  check(sqlite3_bind_double(statement_, index, value), db_, "binding a value");
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  check(sqlite3_bind_int64(statement_, index, value), db_, "binding a value");
  return *this;
}

Statement& Statement::bind_blob(int index, std::span<const unsigned char> bytes) {
  // A null pointer would bind NULL: a zero-length BLOB gets sqlite3_bind_zeroblob.
  const int rc = bytes.empty() ? sqlite3_bind_zeroblob(statement_, index, 0)
                               : sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  check(rc, db_, "binding a value");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(statement_);
  check(rc, db_, "running a statement");
  return rc == SQLITE_ROW;
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  check(sqlite3_reset(statement_), db_, "resetting a statement");
  check(sqlite3_clear_bindings(statement_), db_, "clearing bindings");
}

std::string Statement::text(int column) const {
  const unsigned char* value = sqlite3_column_text(statement_, column);
  return value ? std::string(reinterpret_cast<const char*>(value),
                             static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
               : std::string();
}

std::string_view Statement::text_view(int column) const {
  const unsigned char* value = sqlite3_column_text(statement_, column);
  return value ? std::string_view(reinterpret_cast<const char*>(value),
                                  static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
               : std::string_view();
}

std::span<const unsigned char> Statement::blob(int column) const {
  const auto* value = static_cast<const unsigned char*>(sqlite3_column_blob(statement_, column));
  return value ? std::span<const unsigned char>(value, static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
               : std::span<const unsigned char>();
}

bool Statement::is_null(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }

double Statement::real(int column) const { return sqlite3_column_double(statement_, column); }

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(statement_, column); }

Connection::Connection(const std::filesystem::path& path, bool create, int busy_timeout_ms)
    : busy_timeout_ms_(busy_timeout_ms) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    // A failed open still returns a handle to read the message from; close it either way.
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    const std::string text = fmt::format("history {}: cannot open it: {}: {}", path.string(), message, advice(rc & 0xff));
    if ((rc & 0xff) == SQLITE_CANTOPEN) throw UsageError(text);  // the path given is at fault
    throw Error(text);
  }
  try {
    check(sqlite3_extended_result_codes(db_, 1), db_, "enabling extended result codes");
    check(sqlite3_busy_timeout(db_, busy_timeout_ms), db_, "setting the busy timeout");
  } catch (...) {
    sqlite3_close(db_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

// Every statement is finalized by then (Statement objects never outlive a call), so close succeeds.
Connection::~Connection() { sqlite3_close(db_); }

void Connection::execute(std::string_view sql, std::string_view what) {
  const std::string text(sql);
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);  // sqlite3_errmsg still holds the same message for check()
  check(rc, db_, what);
}

std::int64_t Connection::integer_value(std::string_view sql) {
  Statement s(db_, sql);
  return s.step() ? s.integer(0) : 0;
}

std::string Connection::text_value(std::string_view sql) {
  Statement s(db_, sql);
  return s.step() ? s.text(0) : std::string();
}

std::int64_t Connection::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

Transaction::Transaction(Connection& connection, bool read_only) : connection_(connection) {
  if (read_only)
    connection_.execute("BEGIN", "starting a read transaction");
  else
    connection_.execute("BEGIN IMMEDIATE", "starting a write transaction");
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);  // best effort while unwinding
}

void Transaction::commit() {
  connection_.execute("COMMIT", "committing");
  open_ = false;
}

}  // namespace ridge::history_detail
