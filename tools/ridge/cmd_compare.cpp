// `ridge compare BASE NEW`: per-record ratios of medians with a rank test on the raw samples;
// exits 5 on a significant regression beyond the threshold, 6 when nothing was compared and 9 when
// a record the baseline judges is missing from the new run, so a CI gate never passes on nothing.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli.hpp"
#include "ridge/compare.hpp"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

struct CompareCommand {
  std::vector<std::string> files;  // BASE... NEW
  std::string threshold = "5%";
  // The library's defaults (CompareOptions), written once there.
  double spread_factor = CompareOptions{}.spread_factor;
  double min_change_us = CompareOptions{}.min_change_us;
  bool ignore_clocks = false;
  bool fixed_resolution = !CompareOptions{}.per_method_resolution;
  bool allow_missing = CompareOptions{}.allow_missing;
  double alpha = CompareOptions{}.alpha;
  std::string detector{CompareOptions{}.level_detector->name()};
  std::string clock_tolerance = "10%";
  std::string json, markdown;
  std::string confirm;  // the suspects measured again in a fresh process
};

int run_compare(const CompareCommand& c) {
  // Output paths are checked first: a folder given to --json fails before any work.
  for (const std::string* path : {&c.json, &c.markdown})
    if (!path->empty()) resolve_output(*path);
  CompareOptions options;
  options.threshold = parse_threshold(c.threshold);
  options.clock_tolerance = parse_threshold(c.clock_tolerance);
  if (!(c.alpha > 0 && c.alpha < 1)) throw UsageError(fmt::format("--alpha must be in (0, 1), got {}", c.alpha));
  options.alpha = c.alpha;
  if (!(c.spread_factor >= 0) || !std::isfinite(c.spread_factor))
    throw UsageError(fmt::format("--spread-factor must be a number >= 0, got {}", c.spread_factor));
  options.spread_factor = c.spread_factor;
  if (!(c.min_change_us >= 0) || !std::isfinite(c.min_change_us))
    throw UsageError(fmt::format("--min-change-us must be a number >= 0, got {}", c.min_change_us));
  options.min_change_us = c.min_change_us;
  options.widen_by_clock = !c.ignore_clocks;
  options.per_method_resolution = !c.fixed_resolution;
  options.allow_missing = c.allow_missing;
  options.level_detector = make_level_detector(c.detector);
  if (c.files.size() < 2)
    throw UsageError("compare needs BASE [BASE...] NEW: at least one baseline and the new run (got one file)");
  // Every file is read before anything is printed, so a bad file never leaves half a table.
  const std::vector<std::string> base_paths(c.files.begin(), c.files.end() - 1);
  const std::string& next_path = c.files.back();
  std::vector<ResultSet> baselines;
  for (const auto& path : base_paths) baselines.push_back(load_result_file(path));
  const ResultSet next = load_result_file(next_path);
  Comparison comparison = compare_results(baselines, next, options, base_paths);
  if (!c.confirm.empty())
    comparison = confirm_suspects(std::move(comparison),
                                  compare_results(baselines, load_result_file(c.confirm), options, base_paths));
  comparison.base_label = base_paths.size() == 1
                              ? base_paths[0]
                              : fmt::format("{} and {} more baseline(s)", base_paths[0], base_paths.size() - 1);
  comparison.new_label = next_path;

  const bool to_stdout = c.json == "-" || c.markdown == "-";
  std::FILE* out = to_stdout ? stderr : stdout;
  fmt::print(out, "{}", to_text(comparison));
  if (!c.json.empty()) write_json(c.json, to_json(comparison));
  if (!c.markdown.empty()) write_text(c.markdown, to_markdown(comparison));
  if (comparison.nothing_compared()) {
    fmt::print(stderr, "ridge compare: error: {} (exit code 6)\n", nothing_compared_reason(comparison));
    return static_cast<int>(ExitCode::nothing_compared);
  }
  if (comparison.has_regression()) {
    fmt::print(stderr, "ridge compare: {} significant regression(s) beyond {:.1f}% (exit code 5)\n",
               comparison.regressions, options.threshold * 100);
    return static_cast<int>(ExitCode::regression);
  }
  if (comparison.suspects > 0)
    fmt::print(stderr,
               "ridge compare: {} suspect(s) beyond their band but within the {:g} us one process can jump: measure "
               "them again in a fresh process and pass that run with --confirm FILE\n",
               comparison.suspects, options.min_change_us);
  if (comparison.fails_on_missing()) {
    fmt::print(stderr,
               "ridge compare: {} record(s) the base judges are missing from the new run (exit code 9; "
               "--allow-missing accepts that)\n",
               comparison.missing_judged);
    return static_cast<int>(ExitCode::records_missing);
  }
  return 0;
}

RIDGE_REGISTER_COMMAND(Command{
    "compare", "compare two result files (or report folders): ratios, significance, exit 5 on a regression, 6 if nothing matched", 95,
    [](CLI::App& app) {
      auto c = std::make_shared<CompareCommand>();
      app.description(
          "Matches records by name, method, dtype and params; prints new/base ratios of median times, a two-sided\n"
          "Mann-Whitney U test on the raw samples, a bootstrap 95% interval of the ratio and the geometric mean.\n"
          "A record is a REGRESSION when p < alpha and it is slower by more than its noise band: the threshold,\n"
          "or the minimum its producer recorded (the record's \"gate\"), or, with several baselines (repeated runs\n"
          "of the same code: BASE1 BASE2 ... NEW), --spread-factor x the spread of their medians. Records timed with\n"
          "wall_naive, and records their producer marked informational (host-latency-dominated numbers, method\n"
          "demonstrations), and records carried over from a cache (the measured ceilings) are shown but never\n"
          "judged. Different GPUs or SM clocks (> clock tolerance) are reported. A band's absolute term is the\n"
          "resolution between processes: 3x (--spread-factor) the spread of the record's timing method, measured on\n"
          "its GPU family (graph replay and spin hold on Hopper), else --min-change-us; with 3 or more baselines\n"
          "their own spread replaces it. A change\n"
          "beyond a band narrower than --min-change-us but within it is a suspect to measure again in a fresh\n"
          "process (--confirm NEW2 makes it a regression when it is seen again).\n"
          "Exit codes: 0 no significant regression beyond a record's noise band, 5 at least one,\n"
          "6 no record was compared (none matched, or only records that are never judged), 9 a record the base\n"
          "judges is missing from the new run (unless --allow-missing), 2 a file is missing or malformed (or a bad\n"
          "option).");
      app.add_option("FILES", c->files,
                     "BASE [BASE...] NEW: baseline(s), then the run to judge: ridge JSON result files or report "
                     "folders holding results.json; several baselines must be repeated runs of the same code on "
                     "one kind of GPU")
          ->required();
      app.add_option("--threshold", c->threshold,
                     "relative change of the median that counts, as a percentage (5%) or fraction (0.05)")
          ->default_val("5%");
      app.add_option("--alpha", c->alpha, "significance level of the two-sided rank test")->capture_default_str();
      app.add_option("--spread-factor", c->spread_factor,
                     "with several baselines, a change must exceed this many times the relative spread "
                     "of their medians")
          ->capture_default_str();
      app.add_option("--min-change-us", c->min_change_us,
                     "the resolution where the timing method's was never measured on the GPU family, and the most "
                     "one process was seen to jump: a change within it is at most a suspect")
          ->capture_default_str();
      app.add_option("--confirm", c->confirm,
                     "a second new run (the suspects measured again in a fresh process): a suspect beyond its band "
                     "again is a regression, any other is cleared")
          ->type_name("FILE");
      app.add_flag("--allow-missing", c->allow_missing,
                   "pass when records the base judges are missing from the new run (default: exit 9)");
      app.add_flag("--fixed-resolution", c->fixed_resolution,
                   "use --min-change-us for every record, not the timing method's measured resolution");
      app.add_flag("--ignore-clocks", c->ignore_clocks,
                   "do not widen a record's noise band by its SM clock change between the runs");
      app.add_option("--detector", c->detector,
                     fmt::format("how a level change is judged: {} (level_detector.hpp)", fmt::join(level_detector_names(), ", ")))
          ->capture_default_str();
      app.add_option("--clock-tolerance", c->clock_tolerance, "SM clock difference reported as a warning")
          ->default_val("10%");
      app.add_option("--json", c->json, "write the comparison as JSON to FILE ('-' for stdout)")->type_name("FILE");
      app.add_option("--markdown", c->markdown, "write the comparison as Markdown to FILE ('-' for stdout)")
          ->type_name("FILE");
      return std::function<int()>([c] { return run_compare(*c); });
    }});

}  // namespace
}  // namespace ridge::cli
