#pragma once
// The sections of the report (ridge::run_report), internal to the library. Each section is a
// function of the report's context that returns Markdown, records and SVG plots; run_report runs
// the list that report_sections() returns, in its order, and writes the folder.
//
// To add a section: write `SectionOutput my_section(ReportContext&)` in one of this folder's files,
// declare it below and add it to the list in sections.cpp. Sections call the library functions
// that the commands call (run_bandwidth_sweep, gpt2::run_decode, ...), never the CLI.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/plot.hpp"
#include "ridge/report.hpp"
#include "ridge/result.hpp"
#include "ridge/sweep.hpp"

namespace ridge::detail {

/// A testing aid that makes chosen records slower after they were measured, so the gate of
/// `ridge compare` can be shown to flag a slowdown of any record against its real run-to-run
/// spread: each sample becomes sample x (1 + relative) + added_us.
struct RecordSlowdown {
  /// Which records: every whitespace-separated word must equal the record's name, method or
  /// dtype, or one of its params as key=value ("matmul graph_replay n=4096").
  std::string selector;
  double relative = 0;  ///< 0.1 = 10% slower
  double added_us = 0;  ///< microseconds added to each operation's time
  void validate() const;
  bool selects(const Record& record) const;
  /// Slows the records it selects, each with a warning that says so; returns how many.
  std::size_t apply(std::vector<Record>& records) const;
};

/// Testing aids of `ridge report`: not measurements, so they stay out of ReportOptions.
struct ReportTestingAids {
  /// Slows the timing section's large matmul by this GPU busy-wait per call (microseconds), so
  /// `ridge compare` can be shown to flag it. 0 in real reports.
  double inject_slowdown_us = 0;
  /// Waits this many seconds after each section (stopping early when a stop is requested), so a
  /// test can interrupt a report between sections.
  double pause_between_sections_s = 0;
  std::optional<RecordSlowdown> slow_records;  ///< see RecordSlowdown
};

/// run_report with testing aids (the CLI's testing flags); ridge::run_report is this with none.
ReportResult run_report_with_testing_aids(const ReportOptions& options, const ReportCallbacks& callbacks,
                                          const ReportTestingAids& aids);

/// What every section can read, and what sections leave for later ones.
struct ReportContext {
  int device = 0;
  bool gpu = false;  ///< false: model-only report (no usable GPU)
  bool quick = false;
  double inject_slowdown_us = 0;  ///< see ReportTestingAids
  std::filesystem::path folder;
  /// A transient status line for the user ("" clears it): ReportCallbacks::on_status, or nothing.
  std::function<void(const std::string&)> status = [](const std::string&) {};
  ResultSet* results = nullptr;  ///< context and every record of the sections run so far

  /// The datasheet entry: the model-only device, or the running device's match. nullopt when none matched.
  std::optional<CatalogEntry> datasheet;
  /// Ceilings the roofline and decode sections use: measured when the ceilings section ran,
  /// else the datasheet's (source_text says which); 0/empty = unknown.
  DeviceCeilings ceilings;
  double memory_bytes = 0;  ///< device memory, for "does it fit" checks
  bool remeasure_ceilings = false;  ///< ReportOptions::remeasure_ceilings
  /// When the ceilings were measured if the ceilings section took them from the per-GPU cache; "" = now.
  std::string ceilings_cached_at;

  /// Values that predictions are compared with (keys: prediction_keys(), constants in ridge::prediction).
  std::map<std::string, double> measured;
};

struct ReportSvg {
  std::string file;     ///< file name inside the report folder, e.g. "roofline.svg"
  std::string content;  ///< a complete SVG document
};

struct SectionOutput {
  std::string markdown;         ///< body of the section (the report writes its "## title")
  std::vector<Record> records;  ///< appended to results.json
  std::vector<ReportSvg> svgs;  ///< written to the folder; reference them as ![caption](file.svg)
  std::string trace_json;       ///< a Chrome/Perfetto trace; written as trace.json when non-empty
  nlohmann::json data = nullptr;  ///< model values etc., stored under report.sections[].data
  /// For a section that prints a peak: renders it again once every section has run and the
  /// report's ceilings are final (raise_report_ceilings over every record of the run); its
  /// markdown and svgs replace the first rendering's, so the report holds one number per
  /// quantity. The log (ReportOptions::log) shows the first rendering.
  std::function<SectionOutput(const ReportContext&)> render_final;
};

enum class SectionMode {
  gpu,         ///< runs only with a usable GPU
  model_only,  ///< runs only without one
  always,
};

struct ReportSection {
  std::string key;
  std::string title;
  SectionMode mode = SectionMode::gpu;
  SectionOutput (*run)(ReportContext&) = nullptr;
};

/// Every section, in report order.
const std::vector<ReportSection>& report_sections();

/// Sets ctx's ceilings from a datasheet entry (used when nothing was measured).
void use_datasheet_ceilings(ReportContext& ctx, const CatalogEntry& entry);

// ---- the sections (gpu.cpp, workloads.cpp, model.cpp) -------------------------------------------

SectionOutput info_section(ReportContext& ctx);
SectionOutput timing_section(ReportContext& ctx);
SectionOutput ceilings_section(ReportContext& ctx);
SectionOutput bandwidth_section(ReportContext& ctx);
SectionOutput matmul_section(ReportContext& ctx);
SectionOutput roofline_section(ReportContext& ctx);
SectionOutput decode_section(ReportContext& ctx);
SectionOutput profile_section(ReportContext& ctx);
SectionOutput model_roofline_section(ReportContext& ctx);
SectionOutput decode_ceilings_section(ReportContext& ctx);
SectionOutput amdahl_section(ReportContext& ctx);
SectionOutput predictions_section(ReportContext& ctx);

// ---- the report's one set of ceilings (src/report/report_ceilings.cpp, CPU-only) -----------------

/// Raises ctx.ceilings' measured peaks to the best rate a record of `records` attained
/// (raise_to_attained) and the measured BF16 peak and ridge point in ctx.measured with them;
/// returns one sentence per peak raised. The matmul section calls it with the records so far,
/// run_report with every record of the run before the final rendering (SectionOutput::render_final).
std::vector<std::string> raise_report_ceilings(ReportContext& ctx, const std::vector<Record>& records);
/// "raised from 809 TFLOP/s: matmul n=8192 reached 811 TFLOP/s" when the report's `dtype` peak
/// is above the measured one (the record that reached it found in `records`); "" when not raised.
std::string raised_peak_note(const DeviceCeilings& measured, const DeviceCeilings& report, const std::string& dtype,
                             const std::vector<Record>& records);
/// The ceilings section's body: the measured ceilings against the datasheet, each peak at the
/// report's figure (`report`: raised where the run beat it, with raised_peak_note), and the BF16
/// ridge point from `report`.
std::string ceilings_markdown(const MeasuredCeilings& m, const std::optional<CatalogEntry>& datasheet,
                              const DeviceCeilings& report, const std::vector<Record>& records);
/// The roofline section's body and roofline.svg: the first `count` of `records` with counted FLOPs
/// and bytes, placed under `c`.
SectionOutput roofline_output(const DeviceCeilings& c, const std::vector<Record>& records, std::size_t count);

// ---- helpers sections share (common.cpp) ---------------------------------------------------------

/// Markdown table of records: params, dtype, method, median/min/max, CV, GB/s, TFLOP/s, check.
std::string records_markdown(const std::vector<Record>& records);
/// Warnings of the records as a Markdown list (empty string when none).
std::string warnings_markdown(const std::vector<Record>& records);
/// Findings as Markdown: each headline a paragraph, its details a list under it.
std::string findings_markdown(const std::vector<Finding>& findings);

}  // namespace ridge::detail
