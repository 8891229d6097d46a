#pragma once
// A thin RAII layer over the SQLite C API for the history store: every call is checked, and a
// failure becomes a ridge error that says what failed and what to do. Internal to src/history.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace ridge::history_detail {

/// Throws for a SQLite result code that is not `ok` (SQLITE_OK, SQLITE_ROW, SQLITE_DONE pass):
/// UsageError for a damaged or foreign file, ridge::Error otherwise. `what` names the step
/// ("adding a run"), `db` (may be null) gives SQLite's own message.
void check(int rc, sqlite3* db, std::string_view what);

/// One prepared statement; columns and parameters are 0-based and 1-based as in SQLite.
class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::int64_t value);
  Statement& bind_int(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  /// Binds `bytes` as a BLOB (copied by SQLite; an empty span binds a zero-length BLOB, not NULL).
  Statement& bind_blob(int index, std::span<const unsigned char> bytes);
  /// Steps once: true when a row is ready, false when done.
  bool step();
  /// Runs a statement that returns no rows, then resets it for the next bindings.
  void run();
  void reset();

  std::string text(int column) const;
  /// The column's text without a copy: valid until the next step, reset or column call.
  std::string_view text_view(int column) const;
  /// The column's bytes as a BLOB without a copy: valid until the next step, reset or column call.
  std::span<const unsigned char> blob(int column) const;
  double real(int column) const;
  std::int64_t integer(int column) const;
  /// Whether the column is SQL NULL.
  bool is_null(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
  std::string sql_;
};

/// An open database connection, closed on destruction.
class Connection {
 public:
  /// Opens (creating it when `create`) the file at `path`; busy_timeout_ms is how long a call
  /// waits for another writer's lock before failing with SQLITE_BUSY.
  Connection(const std::filesystem::path& path, bool create, int busy_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  int busy_timeout_ms() const { return busy_timeout_ms_; }
  /// Runs one or more statements that return no rows.
  void execute(std::string_view sql, std::string_view what);
  /// The first column of the first row of a one-value query (a PRAGMA), as an integer.
  std::int64_t integer_value(std::string_view sql);
  std::string text_value(std::string_view sql);
  /// The rowid of the last row this connection inserted.
  std::int64_t last_insert_id() const;

 private:
  sqlite3* db_ = nullptr;
  int busy_timeout_ms_ = 0;
};

/// BEGIN IMMEDIATE (the write lock up front, so two writers never deadlock upgrading a read
/// lock), COMMIT on commit(), ROLLBACK when left without it.
class Transaction {
 public:
  /// A write transaction (BEGIN IMMEDIATE: the write lock at once), or with `read_only` a read
  /// transaction, whose reads all see one snapshot of the file.
  explicit Transaction(Connection& connection, bool read_only = false);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool open_ = true;
};

}  // namespace ridge::history_detail
