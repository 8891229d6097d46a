// The report folder's life: checked before any work, built as DEST.partial-PID beside the
// destination (marked INCOMPLETE from the start), and moved into place only when every section ran,
// so an interrupted or killed report never leaves a half-written DEST or mixes old and new files.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/report.hpp"

namespace ridge {

namespace fs = std::filesystem;

namespace {

constexpr const char* incomplete_file = "INCOMPLETE";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The destination as an absolute path without a trailing separator, so "out/" and "." name a folder
/// whose parent can hold the partial one.
fs::path absolute_destination(const fs::path& destination) {
  fs::path p = fs::absolute(destination).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p;
}

void write_incomplete(const fs::path& folder, const std::string& text) {
  std::ofstream f(folder / incomplete_file, std::ios::trunc);
  f << text;
  f.flush();
  if (!f) throw Error(fmt::format("cannot write {}: {}", (folder / incomplete_file).string(), std::strerror(errno)));
}

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT (Ctrl-C)";
  if (signal == SIGTERM) return "SIGTERM";
  return fmt::format("signal {}", signal);
}

}  // namespace

bool is_report_file(const std::string& name) {
  if (name == "report.md" || name == "report.html" || name == "results.json" || name == incomplete_file) return true;
  if (name.rfind("trace", 0) == 0 && ends_with(name, ".json")) return true;
  return name.size() > 4 && ends_with(name, ".svg");
}

void check_report_destination(const fs::path& destination, bool force) {
  std::error_code ec;
  const auto status = fs::status(destination, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status))
    throw UsageError(fmt::format("report folder {}: exists and is not a folder; give a folder for the report", destination.string()));
  if (force || fs::is_empty(destination, ec)) return;
  throw UsageError(fmt::format(
      "report folder {}: exists and is not empty; a report never mixes old and new files. Choose another folder, "
      "or set force to replace ridge's own files in it (other files are kept)",
      destination.string()));
}

fs::path make_partial_report_folder(const fs::path& destination) {
  const fs::path dest = absolute_destination(destination);
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message()));
  // The PID makes it ours; a suffix avoids a stale folder left by an earlier process with the same PID.
  const std::string base = fmt::format("{}.partial-{}", dest.filename().string(), ::getpid());
  fs::path partial = dest.parent_path() / base;
  for (int i = 2; fs::exists(partial); ++i) partial = dest.parent_path() / fmt::format("{}-{}", base, i);
  if (!fs::create_directory(partial, ec) || ec)
    throw Error(fmt::format("cannot create the report folder {}: {}", partial.string(), ec.message()));
  write_incomplete(partial, fmt::format(
                                "This report is incomplete: `ridge report` (pid {}) is still writing it, or was "
                                "killed before it finished. When it finishes it moves this folder to {}.\n",
                                ::getpid(), dest.string()));
  return partial;
}

void mark_report_incomplete(const fs::path& partial, int signal, const std::vector<std::string>& finished,
                            const std::vector<std::string>& not_run) {
  const auto list = [](const std::vector<std::string>& v) { return v.empty() ? std::string("none") : fmt::format("{}", fmt::join(v, ", ")); };
  write_incomplete(partial, fmt::format(
                                "This report is incomplete: `ridge report` was stopped by {} between sections.\n"
                                "Sections finished (in report.md and results.json): {}\n"
                                "Sections not run: {}\n"
                                "The destination folder was not touched. Run `ridge report` again for a full report.\n",
                                signal_name(signal), list(finished), list(not_run)));
}

std::vector<std::string> finalize_report_folder(const fs::path& partial, const fs::path& destination) {
  std::error_code ec;
  fs::remove(partial / incomplete_file, ec);
  std::vector<std::string> kept;
  if (!fs::exists(destination)) {
    fs::rename(partial, destination, ec);
    if (ec)
      throw Error(fmt::format("cannot move the finished report {} to {}: {}; it is complete where it is",
                              partial.string(), destination.string(), ec.message()));
    return kept;
  }
  // An existing folder (empty, or --force): ridge's own files go, the user's stay.
  std::vector<fs::directory_entry> entries(fs::directory_iterator(destination), fs::directory_iterator{});
  for (const auto& e : entries) {
    const std::string name = e.path().filename().string();
    const bool file = e.is_regular_file() || e.is_symlink();
    if (file && is_report_file(name))
      fs::remove(e.path());
    else
      kept.push_back(name);
  }
  std::sort(kept.begin(), kept.end());
  std::vector<fs::directory_entry> finished(fs::directory_iterator(partial), fs::directory_iterator{});
  for (const auto& e : finished) {
    fs::rename(e.path(), destination / e.path().filename(), ec);
    if (ec)
      throw Error(fmt::format("cannot move {} into {}: {}; the rest of the report is in {}", e.path().string(),
                              destination.string(), ec.message(), partial.string()));
  }
  fs::remove(partial, ec);
  return kept;
}

}  // namespace ridge
