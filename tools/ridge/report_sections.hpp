#pragma once
// `ridge report` is a list of sections. Each section is a function of the report's context that
// returns Markdown, records and SVG plots; the report (ridge::run_report) runs them in `order`,
// writes every record to results.json and turns the Markdown into report.md and report.html.
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
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "ridge/catalog.hpp"
#include "ridge/plot.hpp"
#include "ridge/report.hpp"
#include "ridge/result.hpp"

namespace ridge::cli {

// The framework (ReportContext, SectionOutput, ReportSvg, SectionMode, ReportSection,
// RIDGE_REGISTER_REPORT_SECTION) and the runner are library API: ridge/report.hpp.

// ---- helpers sections share ---------------------------------------------------------------------

/// Markdown table of records: params, dtype, method, median/min/max, CV, GB/s, TFLOP/s, check.
std::string records_markdown(const std::vector<Record>& records);
/// Warnings of the records as a Markdown list (empty string when none).
std::string warnings_markdown(const std::vector<Record>& records);
/// Log-log plot of rate (TFLOP/s when `flops`, else GB/s) against params[x_param], one series per
/// name + method + dtype.
ReportSvg rate_vs_size_svg(const std::string& file, const std::string& title, const std::vector<Record>& records,
                           const std::string& x_param, bool flops);

}  // namespace ridge::cli
