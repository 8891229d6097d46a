#pragma once
// `ridge report` as a library: run_report runs the report's sections (device, timing, ceilings,
// bandwidth, matmul, roofline, decode, profile; model-only ones without a GPU) in order and writes
// one folder: report.md, a self-contained report.html, the SVGs, results.json and trace.json.
// `ridge report` and Python's ridge.report() call it.
// Also its CPU-only building blocks: the user's predictions, reference LLM sizes for the
// decode-ceiling table, and the Markdown -> HTML conversion.
// (Implementation: src/report/report.cpp, src/report/markdown_html.cpp, src/report/report_folder.cpp,
// src/report/runner/ and the sections in src/report/sections/.)
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/compare.hpp"
#include "ridge/history.hpp"
#include "ridge/result.hpp"

namespace ridge {

// ---- running the report ------------------------------------------------------------------------------

struct ReportOptions {
  int device = 0;              ///< GPU to run on (when there is one)
  std::string folder;          ///< report folder; "" = runs/report-<UTC time> (made unique)
  bool quick = false;          ///< fewer samples and sizes: a short run
  std::string model = "h100-sxm";  ///< catalog device of the model-only report (no GPU)
  /// Numbers committed before the run, "KEY=VALUE" each (see prediction_keys()).
  std::vector<std::string> predictions;
  std::FILE* log = nullptr;    ///< each section's Markdown as it finishes; nullptr = not written
  /// The command line, for results.json's context and the report's last line.
  std::vector<std::string> argv;
  /// An existing, non-empty folder is refused (UsageError) unless this is set; then ridge's own
  /// files in it (is_report_file) are replaced at the end and every other file is kept.
  bool force = false;
  /// A run history (SQLite file, include/ridge/history.hpp) the finished report is added to, as
  /// one run; "" = none. Opened (or created) before any work, so a bad file is a UsageError then;
  /// a ridge built without SQLite throws Error. The commit and branch are resolve_provenance's
  /// (git at the current directory, else the results' git sha) unless given here.
  std::string history;
  RunProvenance history_provenance;
  /// Measure the ceilings again (CeilingsMode::refresh) instead of taking them from the per-GPU
  /// cache when it holds them; the report marks every number it took from the cache, with its date.
  bool remeasure_ceilings = false;
};

/// How one section went.
struct SectionRun {
  std::string key, title;
  double seconds = 0;
  std::size_t records = 0;
  std::string error;  ///< why it failed; "" = ok
  int exit_code = 0;  ///< the exit code its error maps to (0 = ok)
  bool failed() const { return !error.empty(); }
};

/// Progress while the report runs (each optional).
struct ReportCallbacks {
  /// Before any section runs: things worth telling the user (e.g. a --predict key ridge does not measure).
  std::function<void(const std::string& note)> on_note;
  /// Before each section, with its key (e.g. "bandwidth") and title.
  std::function<void(std::size_t index, std::size_t count, const std::string& key, const std::string& title)>
      on_section_start;
  std::function<void(std::size_t index, std::size_t count, const SectionRun& run)> on_section_done;
  /// A transient status line from the running section ("allocating buffers", "graph replay");
  /// an empty line clears it.
  std::function<void(const std::string& line)> on_status;
  /// Asked between sections: a signal number (e.g. SIGINT) stops the report there, leaving the
  /// partial folder marked INCOMPLETE and the destination untouched; 0 = go on.
  std::function<int()> stop_requested;
};

// ---- the summary: the answer first -------------------------------------------------------------

/// One number of the summary, against its reference.
struct SummaryNumber {
  std::string key;        ///< the prediction key it comes from (prediction_keys()), e.g. "hbm_tb_per_s"
  std::string what;       ///< e.g. "HBM bandwidth"
  double value = 0;       ///< in the key's unit
  std::string value_text;  ///< with its unit, e.g. "4.46 TB/s"
  /// value / reference; nullopt when there is no reference.
  std::optional<double> fraction;
  std::string reference;  ///< e.g. "93% of the datasheet's 4.80 TB/s"; "" = none
  std::string section;    ///< the title of the section that measured it
  /// When the number was measured, if it was carried over from the per-GPU ceilings cache rather
  /// than measured in this run (e.g. "2026-11-29T10:00:00Z"); "" = measured now.
  std::string carried_over_from;
  /// The previous run's value (ReportSummary::previous_run), in the key's unit; nullopt when
  /// there is none or it did not measure this number.
  std::optional<double> previous;
  std::string previous_text;  ///< the previous value with its unit, as value_text
};

/// A finding that needs action: an impossible number, a launch-bound or throttled measurement, a
/// failed section.
struct SummaryFinding {
  std::string kind;     ///< "section failed", "impossible", "launch-bound", "throttling", "clocks moved", "high spread"
  std::string text;     ///< one line, e.g. "2 of 6 rows: ..."
  std::string section;  ///< the title of the section it is about
};

/// The answer first: what this GPU and build do, and what needs action.
struct ReportSummary {
  std::vector<SummaryNumber> numbers;  ///< at most 8, in report order
  std::vector<SummaryFinding> findings;
  bool model_only = false;  ///< nothing measured: the numbers are the datasheet's (HBM, BF16 peak, ridge point)
  /// The run the numbers' `previous` values come from, e.g. "the previous run (run 12, commit
  /// abc1234)"; "" = none (no history, or no earlier report on this GPU in it).
  std::string previous_run;
};

/// The name of the record that carries a report's measured values (measured_record).
inline constexpr const char* measured_record_name = "report.measured";

/// A report's measured values ({prediction key: value}) as a record of its results: name
/// measured_record_name, method none (a value, not a timing: compare shows it and never judges
/// it), the values in `extra`. A run history keeps it, so the next report's summary can set each
/// number against this run's.
Record measured_record(const std::map<std::string, double>& measured);
/// The measured values a measured_record among `records` carries; empty when there is none (a run
/// from before reports stored them) or its values are not numbers.
std::map<std::string, double> measured_from_records(const std::vector<Record>& records);

/// Sets each number's `previous` (and its text) from `previous` (measured_from_records of that
/// run) and the summary's previous_run to `label`; nothing when `previous` is empty.
void add_previous_values(ReportSummary& summary, const std::map<std::string, double>& previous, const std::string& label);

/// A warning's kind: the words before its first ':' ("cache-resident", "launch-bound",
/// "impossible", "high spread", "clocks moved"); "clocks moved" for another warning about the
/// clocks; else the whole warning (identical ones group together).
std::string warning_kind(const std::string& warning);

/// The records' warnings grouped by kind: one group per kind, with the rows it covers.
struct WarningGroup {
  std::string kind;
  std::vector<std::size_t> rows;  ///< indices into the records, in order
  std::size_t of_rows = 0;        ///< how many records there were
  std::string example;            ///< the warning of the last row it covers (the largest, in a sweep)
};
std::vector<WarningGroup> group_warnings(const std::vector<Record>& records);

/// The summary of a finished report: `measured` (ReportResult::measured) against the datasheet
/// entry (nullopt: none matched) and each other; the findings from the records' warnings and
/// clocks, per section (`sections` in order, each with its record count, as run_report ran them).
/// `ceilings_cached_at`: when the ceilings were measured if they came from the per-GPU cache
/// ("" = measured in this run): the numbers of the ceilings section carry it.
ReportSummary summarize_report(const std::map<std::string, double>& measured, const std::optional<CatalogEntry>& datasheet,
                               const std::vector<Record>& records, const std::vector<SectionRun>& sections,
                               const std::string& ceilings_cached_at = "");

/// Adds a "regression" finding per record `comparison` (previous run -> this one, compare_results)
/// found significantly slower, and one "regressions" line when there are more than three; each names
/// `previous` (e.g. "run 12, commit abc1234").
void add_regression_findings(ReportSummary& summary, const Comparison& comparison, const std::string& previous);

/// The summary as the report's first section (at most 25 lines), each number and finding linked
/// to its section's heading; with previous values, a column with each against the previous run.
std::string summary_markdown(const ReportSummary& summary);
/// The summary as plain text for a terminal.
std::string summary_text(const ReportSummary& summary);
nlohmann::json to_json(const ReportSummary& summary);

/// The anchor markdown_to_html gives a heading: lower-case letters and digits, runs of anything
/// else as one '-'.
std::string heading_anchor(const std::string& heading);

struct ReportResult {
  std::filesystem::path folder;  ///< where everything was written: the destination, or the partial folder when stopped
  bool gpu = false;              ///< false: a model-only report
  std::string subject;           ///< the device, or "<catalog device> (model only)"
  std::vector<SectionRun> sections;
  ResultSet results;             ///< every record, the context and the predictions (= results.json)
  std::map<std::string, double> measured;  ///< what the predictions were scored against
  std::string markdown;          ///< report.md
  ReportSummary summary;         ///< the answer first: also the start of `markdown` and results.json's report.summary
  std::vector<std::string> files;  ///< file names written into the folder
  double wall_seconds = 0;
  /// The exit code of the first section that failed (the report is written anyway), else 0;
  /// 128 + the signal when the report was stopped.
  int exit_code = 0;
  /// The signal that stopped the report between sections (0 = it ran to the end). When set,
  /// `folder` is the partial folder, marked INCOMPLETE, and the destination was not touched.
  int stopped_by_signal = 0;
  /// Entries of an existing folder (--force) that are not ridge's and were kept, by name.
  std::vector<std::string> kept_files;
  /// How the run went into ReportOptions::history (none when no history was given or the report
  /// was stopped), and the commit and branch it was added under.
  std::optional<AddResult> history_added;
  RunProvenance history_provenance;
};

/// Runs the sections in order on one GPU (GPU and always sections), or the model-only and always
/// sections when there is no usable GPU, and writes the report folder. Checks what a user can get
/// wrong (predictions, device, model, folder) before any work and throws UsageError.
/// A failing section is reported in the report and in the result, not thrown.
ReportResult run_report(const ReportOptions& options, const ReportCallbacks& callbacks = {});

// ---- the report folder: built beside the destination, moved into place at the end ------------

/// True for the names ridge report writes into its folder: report.md, report.html, results.json,
/// trace*.json, *.svg and INCOMPLETE. --force removes only these from an existing folder.
bool is_report_file(const std::string& name);

/// Checks the destination before any work: a non-folder is a UsageError; an existing non-empty
/// folder is a UsageError unless `force` (which names --force and -o).
void check_report_destination(const std::filesystem::path& destination, bool force);

/// A new folder beside `destination` (same filesystem, so the final rename is atomic), named
/// DEST.partial-PID, holding an INCOMPLETE file written first that says a report is being built.
std::filesystem::path make_partial_report_folder(const std::filesystem::path& destination);

/// Rewrites INCOMPLETE in `partial`: the report was stopped by `signal` after `finished` sections;
/// `not_run` never ran.
void mark_report_incomplete(const std::filesystem::path& partial, int signal, const std::vector<std::string>& finished,
                            const std::vector<std::string>& not_run);

/// Moves the finished report in `partial` (INCOMPLETE removed) to `destination`: a rename when the
/// destination does not exist; otherwise ridge's own files in it are removed and the new ones
/// moved in. Returns the destination's other entries, which were kept.
std::vector<std::string> finalize_report_folder(const std::filesystem::path& partial,
                                                const std::filesystem::path& destination);

// ---- predictions -------------------------------------------------------------------------------

/// The keys of prediction_keys(), spelled once: sections store measurements under them
/// (ReportContext::measured) and users predict them (--predict KEY=VALUE).
namespace prediction {
inline constexpr const char* naive_over_sync = "naive_over_sync";
inline constexpr const char* matmul_fp32_4096_ms = "matmul_fp32_4096_ms";
inline constexpr const char* launch_overhead_us = "launch_overhead_us";
inline constexpr const char* hbm_tb_per_s = "hbm_tb_per_s";
inline constexpr const char* bf16_tflop_per_s = "bf16_tflop_per_s";
inline constexpr const char* ridge_point_bf16 = "ridge_point_bf16";
inline constexpr const char* add_tb_per_s = "add_tb_per_s";
inline constexpr const char* add_fraction_of_datasheet = "add_fraction_of_datasheet";
inline constexpr const char* matmul_70pct_n = "matmul_70pct_n";
inline constexpr const char* decode_tokens_per_s = "decode_tokens_per_s";
inline constexpr const char* decode_fraction_of_ceiling = "decode_fraction_of_ceiling";
inline constexpr const char* kernels_per_step = "kernels_per_step";
inline constexpr const char* launch_gap_fraction = "launch_gap_fraction";
}  // namespace prediction

/// A quantity the report can measure, which a user may predict with `--predict KEY=VALUE`.
struct PredictionKey {
  std::string key;          ///< e.g. "hbm_tb_per_s"
  std::string unit;         ///< e.g. "TB/s"
  std::string description;  ///< what exactly is measured
  std::string section;      ///< the report section that measures it
};

/// The keys the report knows, in display order.
const std::vector<PredictionKey>& prediction_keys();

/// Parses "KEY=VALUE" (VALUE a finite number). Throws UsageError saying what is wrong.
std::pair<std::string, double> parse_prediction(const std::string& text);

struct PredictionOutcome {
  std::string key;
  double predicted = 0;
  std::optional<double> measured;
  bool known = false;  ///< key is in prediction_keys()
  std::string unit, description;
  /// (predicted - measured) / measured; nullopt when not measured or measured == 0.
  std::optional<double> relative_error() const;
};

/// Joins predictions ({key: number}) with what was measured ({key: number}), in prediction order.
std::vector<PredictionOutcome> evaluate_predictions(const nlohmann::json& predictions,
                                                    const std::map<std::string, double>& measured);

/// Markdown table: prediction, measurement, error; unknown and unmeasured keys say so.
std::string predictions_markdown(const std::vector<PredictionOutcome>& outcomes);

// ---- reference models for decode ceilings ------------------------------------------------------

/// A decoder-only transformer, enough to bound its decode speed.
struct ReferenceModel {
  std::string name;               ///< e.g. "GPT-2 small"
  double parameters = 0;          ///< all parameters
  double parameters_read_per_step = 0;  ///< parameters every decode step must read (untied input embeddings excluded)
  std::string dtype;              ///< weight and KV-cache dtype, e.g. "bf16"
  double bytes_per_element = 2;
  int layers = 0;
  int kv_width = 0;  ///< key (= value) width per layer per token: kv heads * head dim
  int context = 0;   ///< tokens of KV cache per sequence assumed in the table
  std::string source;
  /// Bytes every step reads for the weights.
  double weight_bytes_read() const { return parameters_read_per_step * bytes_per_element; }
  /// Bytes of all weights resident in memory.
  double weight_bytes_resident() const { return parameters * bytes_per_element; }
  /// K and V of every layer for `context` tokens of one sequence, in bytes.
  double kv_bytes_per_sequence() const { return 2.0 * layers * kv_width * double(context) * bytes_per_element; }
};

/// GPT-2 small/medium/large/xl (fp32, context 1024) and Llama-3.2 1B, Llama-3.1 8B and 70B (bf16, context 4096).
const std::vector<ReferenceModel>& reference_models();

// ---- Markdown -> HTML --------------------------------------------------------------------------

/// An SVG document made safe to inline in HTML: no XML prolog or DOCTYPE, no namespace
/// declarations (HTML5 knows <svg>), and every id prefixed with `id_prefix` so several plots in
/// one page never share clip paths or markers.
std::string svg_for_inline(const std::string& svg, const std::string& id_prefix);

/// Tables with more body rows than this fold behind a <details> line in the HTML (the Markdown keeps them whole).
inline constexpr std::size_t max_unfolded_table_rows = 12;

/// A self-contained HTML page (inline CSS, no scripts, no network) from the Markdown the report
/// writes: headings (h2s also listed in a contents bar), paragraphs, pipe tables (\| is a pipe
/// inside a cell; over max_unfolded_table_rows folded, the summary line naming the first column's
/// first and last cells), bullet and numbered lists, block quotes, fenced code, and inline `code`,
/// **bold**, *italics* / _italics_ (bold and italics may hold code spans), [links](target) and
/// backslash escapes; images on a line of their own. An image whose target is a key of `svgs` is
/// replaced by that SVG inline. Web links are cited as text without their scheme, so the page
/// references nothing on the network. <, > and & in text come out escaped.
std::string markdown_to_html(const std::string& markdown, const std::map<std::string, std::string>& svgs,
                             const std::string& title);

/// The inline part of markdown_to_html for one line of text: code spans, bold, italics, links,
/// backslash escapes, HTML escaping.
std::string markdown_inline_html(const std::string& text);

}  // namespace ridge
