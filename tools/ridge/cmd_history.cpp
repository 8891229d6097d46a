// `ridge history add|check|html|export|import|runs DB ...`: every run kept in one SQLite file, and the
// commits where a record's level changed (include/ridge/history.hpp). Built without SQLite, the
// command is still there and says how to get it (exit 1).
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"
#ifdef RIDGE_HAVE_HISTORY
#include "ridge/history.hpp"
#endif

namespace ridge::cli {

namespace {

#ifdef RIDGE_HAVE_HISTORY

struct HistoryCommand {
  std::string db;
  std::vector<std::string> runs;  // add: report folders or result files
  std::string commit, branch;
  std::string since, json, output = "-", file;
  std::string threshold = fmt::format("{}%", CheckOptions{}.compare.threshold * 100);
  std::size_t window = CheckOptions{}.window_runs;
  std::size_t max_window = CheckOptions{}.max_window_runs;
  std::string detector{CheckOptions{}.compare.level_detector->name()};
  HistoryPageOptions page;
};

CheckOptions check_options(const HistoryCommand& c) {
  CheckOptions options;
  options.compare.threshold = parse_threshold(c.threshold);
  options.window_runs = c.window;
  options.max_window_runs = c.max_window;
  options.since = c.since;
  options.compare.level_detector = make_level_detector(c.detector);
  return options;
}

int run_add(const HistoryCommand& c) {
  // Every file is read before anything is added: a bad one adds nothing.
  std::vector<ResultSet> sets;
  for (const auto& path : c.runs) sets.push_back(load_result_file(path));
  History history = History::open_or_create(c.db);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const RunProvenance provenance =
        resolve_provenance({c.commit, c.branch, c.runs[i]}, sets[i], std::filesystem::current_path());
    if (provenance.commit.empty())
      throw UsageError(fmt::format("{}: no commit: not in a git repository and the result file has no git sha; "
                                   "give one with --commit",
                                   c.runs[i]));
    const AddResult added = history.add(sets[i], provenance);
    if (added.added)
      fmt::print("{}: added as run {} (commit {}, {})\n", c.runs[i], added.run_id, provenance.commit, added.content_hash);
    else
      fmt::print("{}: already in {} as run {}; nothing changed\n", c.runs[i], c.db, added.run_id);
  }
  return 0;
}

int run_check(const HistoryCommand& c) {
  if (!c.json.empty()) resolve_output(c.json);
  const CheckOptions options = check_options(c);
  validate(options);  // before the file is opened: a bad option is named first
  const History history = History::open_existing(c.db);
  const HistoryCheck check = check_history(history, options);
  fmt::print(c.json == "-" ? stderr : stdout, "{}", to_text(check));
  if (!c.json.empty()) write_json(c.json, to_json(check));
  if (check.nothing_compared()) {
    fmt::print(stderr,
               "ridge history check: error: no series is long enough to judge ({} run(s); a commit needs {} run(s) "
               "before it) (exit code 6)\n",
               check.runs, options.min_runs_before);
    return static_cast<int>(ExitCode::nothing_compared);
  }
  if (check.regression_at_newest()) {
    fmt::print(stderr, "ridge history check: a regression at the newest commit {} (exit code 5)\n", check.newest_commit);
    return static_cast<int>(ExitCode::regression);
  }
  return 0;
}

int run_html(const HistoryCommand& c) {
  HistoryPageOptions options = c.page;
  options.check = check_options(c);
  validate(options);  // before the file is opened: a bad option is named first
  const History history = History::open_existing(c.db);
  const HistoryPage page = write_history_page(history, c.output, options);
  fmt::print("{}/index.html: {} of {} series over {} of {} commits, {} change(s) ({} listed), {} run(s)\n", c.output,
             page.series_shown, page.series, page.commits_shown, page.commits, page.changes, page.changes_listed,
             page.runs);
  return 0;
}

int run_export(const HistoryCommand& c) {
  resolve_output(c.output);
  const History history = History::open_existing(c.db);
  write_text(c.output, history.export_json_lines());
  return 0;
}

int run_import(const HistoryCommand& c) {
  const std::string text = read_text(c.file == "-" ? std::string("/dev/stdin") : c.file);
  History history = History::open_or_create(c.db);
  const ImportResult result = history.import_json_lines(text, c.file);
  fmt::print("{}: {} run(s) added, {} already in {}\n", c.file, result.added, result.already_present, c.db);
  return 0;
}

int run_list(const HistoryCommand& c) {
  const History history = History::open_existing(c.db);
  const std::vector<HistoryRun> runs = history.runs();
  fmt::print("{}", to_text(runs));
  return 0;
}

CLI::App* add_action(CLI::App& app, const char* name, const char* summary, std::shared_ptr<HistoryCommand> c) {
  CLI::App* sub = app.add_subcommand(name, summary);
  sub->add_option("DB", c->db, "the history file (SQLite)")->required();
  return sub;
}

std::function<int()> setup_history(CLI::App& app) {
  auto c = std::make_shared<HistoryCommand>();
  app.require_subcommand(1);
  CLI::App* add = add_action(app, "add", "add runs: report folders or result files", c);
  add->add_option("RUN", c->runs, "report folders (holding results.json) or ridge JSON result files")->required();
  add->add_option("--commit", c->commit,
                  "the commit measured (default: git rev-parse HEAD here, else the result file's git sha)");
  add->add_option("--branch", c->branch, "its branch (default: git's current branch here)");
  CLI::App* check = add_action(app, "check", "find the commits where a record's level changed", c);
  CLI::App* html = add_action(app, "html", "write a page of trend charts and recent changes: DIR/index.html", c);
  html->add_option("-o,--output", c->output, "the folder to write index.html into")->required()->type_name("DIR");
  html->add_option("--title", c->page.title, "the page's title")->capture_default_str();
  html->add_option("--max-series", c->page.max_series, "charts at most (series with a change first)")
      ->capture_default_str();
  html->add_option("--max-commits", c->page.max_commits, "the newest commits on each chart's axis")
      ->capture_default_str();
  for (CLI::App* judged : {check, html}) {
    judged->add_option("--threshold", c->threshold,
                       "relative change of the median that counts, as a percentage (5%) or fraction (0.05)")
        ->capture_default_str();
    judged->add_option("--window", c->window, "runs on each side of a candidate commit")->capture_default_str();
    judged->add_option("--max-window", c->max_window,
                       "a series whose own noise hides a --threshold step gets wider windows, up to N runs a side")
        ->capture_default_str();
    judged->add_option("--detector", c->detector, "how a level change between windows is judged (level_detector.hpp)")
        ->capture_default_str();
  }
  check->add_option("--since", c->since, "review only commits after COMMIT (a commit of a run in the history)")
      ->type_name("COMMIT");
  check->add_option("--json", c->json, "write the changes as JSON to FILE ('-' for stdout)")->type_name("FILE");
  CLI::App* out = add_action(app, "export", "write every run as JSON lines", c);
  out->add_option("-o,--output", c->output, "FILE, or '-' for stdout")->capture_default_str();
  CLI::App* in = add_action(app, "import", "add the runs of a JSON lines file (from export)", c);
  in->add_option("FILE", c->file, "JSON lines file, or '-' for stdin")->required();
  CLI::App* list = add_action(app, "runs", "list the runs, oldest first", c);
  return [c, add, check, html, out, in, list] {
    if (add->parsed()) return run_add(*c);
    if (check->parsed()) return run_check(*c);
    if (html->parsed()) return run_html(*c);
    if (out->parsed()) return run_export(*c);
    if (in->parsed()) return run_import(*c);
    if (list->parsed()) return run_list(*c);
    throw UsageError("history needs one of: add, check, html, export, import, runs");
  };
}

#else

std::function<int()> setup_history(CLI::App& app) {
  app.allow_extras();
  return [] () -> int {
    throw Error("history: this ridge was built without SQLite: install libsqlite3-dev and rebuild");
  };
}

#endif

RIDGE_REGISTER_COMMAND(Command{
    "history", "keep runs in a SQLite history and find the commit where a number changed (exit 5/6 as compare)", 96,
    [](CLI::App& app) {
      app.description(
          "ridge history add DB RUN...           add report folders or result files (a run already there is skipped)\n"
          "ridge history check DB [--since C]    each record's series (same machine and GPU) over commits: where its\n"
          "                                      level changed, by how much (95% interval), the p-value, clock/driver\n"
          "ridge history html DB -o DIR          DIR/index.html: a trend chart per series with its noise band and\n"
          "                                      changes, the recent changes on top, filters by GPU and record name\n"
          "ridge history export DB [-o FILE]     every run as JSON lines;  ridge history import DB FILE  adds them\n"
          "ridge history runs DB                 list the runs\n"
          "check judges each commit as `ridge compare` judges BASE... NEW: the runs before it against the runs from\n"
          "it on, a Mann-Whitney test at alpha / commits tested, and the record's noise band.\n"
          "Exit codes: 0 ok, 5 a regression at the newest commit, 6 no series long enough to judge, 2 a bad file or\n"
          "option, 1 a database error (or a ridge built without SQLite).");
      return setup_history(app);
    },
    {{"since", "--since"}, {"threshold", "--threshold"}, {"window_runs", "--window"}, {"max_window_runs", "--max-window"}, {"commit", "--commit"},
     {"title", "--title"}, {"max_series", "--max-series"}, {"max_commits", "--max-commits"}}});

}  // namespace
}  // namespace ridge::cli
