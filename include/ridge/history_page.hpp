#pragma once
// The run history as one self-contained HTML page (`ridge history html`). CPU only.
// (Implementation: src/history/page.cpp, page_html.cpp.)
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "ridge/history_check.hpp"
#include "ridge/history_store.hpp"

namespace ridge {

/// What the history page shows (build_history_page, `ridge history html`).
struct HistoryPageOptions {
  CheckOptions check;  ///< how the changes it marks are found, as `ridge history check`
  std::string title = "ridge run history";
  /// Charts on the page, at most: of the series with a run on the axis, those with a change first
  /// (newest change first), then the rest in order of first appearance.
  std::size_t max_series = 500;
  /// Commits on each chart's axis: the newest this many (changes are still found over every run).
  std::size_t max_commits = 200;
  /// Changes listed in the summary at the top, newest first.
  std::size_t recent_changes = 20;
};

/// Throws UsageError naming the first bad field of `options` (its check options included).
void validate(const HistoryPageOptions& options);

/// A built history page and what it holds.
struct HistoryPage {
  std::string html;  ///< one self-contained document: no network, the data embedded as JSON
  std::size_t runs = 0, commits = 0, commits_shown = 0;
  std::size_t series = 0, series_shown = 0;
  std::size_t changes = 0, changes_listed = 0;
};

/// The data the page draws (schema "ridge.history_page"): the commits on the axis, each shown
/// series with its points (median, min, max, quartiles in ms; SM clock in MHz), its levels between
/// changes with the noise band the newest commit had to exceed, and the changes of `check`.
nlohmann::json history_page_data(std::span<const HistoryRun> runs, std::span<const RecordSeries> series,
                                 const HistoryCheck& check, const HistoryPageOptions& options);

/// The page around `data` (history_page_data): the JSON embedded so that no text in it can end
/// its script element (<, > and & are written as JSON escapes, everything else non-ASCII too), and
/// a small inline script that draws one SVG chart per series, the hover readout and the filters
/// (by GPU and record name; preset by the URL's hash, e.g. #gpu=NVIDIA%20H200&name=matmul).
std::string history_page_html(const nlohmann::json& data, const std::string& title);

/// Reads every run of `history`, finds its changes (options.check) and builds the page.
HistoryPage build_history_page(const History& history, const HistoryPageOptions& options = {});

/// build_history_page, written to `folder`/index.html (the folder is created when missing; the
/// file is replaced atomically). Returns what it wrote.
HistoryPage write_history_page(const History& history, const std::filesystem::path& folder,
                               const HistoryPageOptions& options = {});

}  // namespace ridge
