#pragma once
// `ridge report` is a list of sections. Each section is a function of the report's context that
// returns Markdown, records and SVG plots; the report runs them in `order`, writes every record to
// results.json and turns the Markdown into report.md and a self-contained report.html.
//
// To add a section (e.g. when a new run_X lands), register it from any tools/ridge/*.cpp file:
//
//   RIDGE_REGISTER_REPORT_SECTION(ReportSection{"bandwidth", "Bandwidth sweep", 40, SectionMode::gpu,
//       [](ReportContext& ctx) {
//         SectionOutput out;
//         ResultSet set = run_bandwidth(options, ctx.log);
//         out.records = set.records;
//         out.markdown = records_markdown(set.records);
//         out.svgs.push_back(rate_vs_size_svg("bandwidth.svg", "x + y", set.records, "elements", false));
//         out.markdown += "![bandwidth vs size](bandwidth.svg)\n";
//         ctx.measured[prediction::add_tb_per_s] = ...;   // feeds --predict
//         return out;
//       }});
//
// Orders in use: 10 device info, 20 timing demo, 30 measured ceilings, 40 bandwidth sweep,
// 50 matmul sweep, 55 roofline with every measured point, 60 decode eager vs graph, 70 profile
// summary; model-only: 110 catalog roofline; always: 120 decode ceilings, 130 Amdahl, 200 predictions.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "ridge/catalog.hpp"
#include "ridge/plot.hpp"
#include "ridge/report.hpp"
#include "ridge/result.hpp"

namespace ridge::cli {

/// What every section can read, and what sections leave for later ones.
struct ReportContext {
  int device = 0;
  bool gpu = false;  ///< false: model-only report (no usable GPU)
  bool quick = false;
  std::filesystem::path folder;
  std::FILE* log = nullptr;  ///< where run_X print their human output (stderr with --verbose, else discarded)
  ResultSet* results = nullptr;  ///< context and every record of the sections run so far

  /// The datasheet entry: --model, or the running device's match. nullopt when none matched.
  std::optional<CatalogEntry> datasheet;
  /// Ceilings the roofline and decode sections use: measured when the ceilings section ran,
  /// else the datasheet's. Bytes/s and FLOP/s per dtype; 0/empty = unknown.
  double bandwidth_bytes_per_s = 0;
  std::map<std::string, double> peak_flops;
  std::string ceilings_source;  ///< e.g. "measured on this GPU" or "datasheet of NVIDIA H100 SXM"
  double memory_bytes = 0;      ///< device memory, for "does it fit" checks

  /// Values that --predict keys are compared with (see ridge/report.hpp prediction_keys()).
  std::map<std::string, double> measured;
  /// Free-form notes sections leave for later ones.
  nlohmann::json shared = nlohmann::json::object();
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
};

enum class SectionMode {
  gpu,         ///< runs only with a usable GPU
  model_only,  ///< runs only without one
  always,
};

struct ReportSection {
  std::string key;
  std::string title;
  int order = 100;
  SectionMode mode = SectionMode::gpu;
  std::function<SectionOutput(ReportContext&)> run;
};

bool register_report_section(ReportSection section);
/// Registered sections, unsorted.
std::vector<ReportSection>& report_sections();

#define RIDGE_REGISTER_REPORT_SECTION(...) \
  static const bool RIDGE_CONCAT(ridge_report_section_, __LINE__) = ::ridge::cli::register_report_section(__VA_ARGS__)

// ---- helpers sections share ---------------------------------------------------------------------

/// Markdown table of records: params, dtype, method, median/min/max, CV, GB/s, TFLOP/s, check.
std::string records_markdown(const std::vector<Record>& records);
/// Warnings of the records as a Markdown list (empty string when none).
std::string warnings_markdown(const std::vector<Record>& records);
/// Log-log plot of rate (TFLOP/s when `flops`, else GB/s) against params[x_param], one series per
/// name + method + dtype.
ReportSvg rate_vs_size_svg(const std::string& file, const std::string& title, const std::vector<Record>& records,
                           const std::string& x_param, bool flops);
/// A log-log roofline over intensities [x_min, x_max] (FLOP/byte): one roof per dtype of `peaks`
/// (FLOP/s; fp8, bf16, tf32 and fp32 where present) under the memory slope of `bandwidth` (bytes/s).
/// Add point series to it and render with render_svg.
Plot roofline_plot(const std::string& title, double bandwidth, const std::map<std::string, double>& peaks,
                   double x_min, double x_max);
/// Sets ctx's ceilings from a datasheet entry (used when nothing was measured).
void use_datasheet_ceilings(ReportContext& ctx, const CatalogEntry& entry);

}  // namespace ridge::cli
