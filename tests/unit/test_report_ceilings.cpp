// One number per quantity: when a sweep beats the measured BF16 peak, the ceilings table, the
// roofline and the summary of one report carry the same raised peak. From the stored H200 ceilings
// (results/h200/ceilings: BF16 808.6 TFLOP/s) and matmul sweep (results/h200/sweeps: 811.1 TFLOP/s
// at n=8192), no GPU needed.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "report/sections/sections.hpp"
#include "ridge/catalog.hpp"
#include "ridge/format.hpp"
#include "ridge/report.hpp"
#include "ridge/writers.hpp"

using namespace ridge;

namespace {

const std::filesystem::path stored = std::filesystem::path(RIDGE_SOURCE_DIR) / "results" / "h200";

/// The ceilings the stored probe records measured, as the ceilings section would hold them.
MeasuredCeilings stored_ceilings(const std::vector<Record>& probes) {
  MeasuredCeilings m;
  m.measured_at_utc = "2026-12-01T18:11:37Z";
  m.ceilings.source = CeilingsSource::measured;
  m.ceilings.source_text = "measured on this GPU (2026-12-01T18:11:37Z)";
  m.records = probes;
  for (const auto& r : probes) {
    if (r.name.rfind("ceiling.hbm.", 0) == 0 && r.bytes_per_s() > m.ceilings.memory_bytes_per_s) {
      m.ceilings.memory_bytes_per_s = r.bytes_per_s();
      m.hbm_kernel = r.name.substr(12);
    }
    if ((r.name == "ceiling.tensor" || r.name == "ceiling.fp32_fma") && r.dtype)
      m.ceilings.peak_flops_per_s[to_string(*r.dtype)] = r.flops_per_s();
  }
  return m;
}

struct StoredRun {
  MeasuredCeilings measured;
  ResultSet results;
  detail::ReportContext ctx;
  double best_bf16 = 0;  ///< the sweep's best BF16 rate
  StoredRun() {
    results.records = load_result_file((stored / "ceilings" / "ridge_cold.json").string()).records;
    measured = stored_ceilings(results.records);
    for (const auto& r : load_result_file((stored / "sweeps" / "matmul_default.json").string()).records) {
      results.records.push_back(r);
      if (r.dtype == DType::bf16) best_bf16 = std::max(best_bf16, r.flops_per_s());
    }
    ctx.datasheet = catalog_entry("h200-sxm");
    ctx.ceilings = measured.ceilings;
    ctx.results = &results;
    ctx.measured[prediction::bf16_tflop_per_s] = measured.ceilings.peak_flops("bf16") / 1e12;
    ctx.measured[prediction::ridge_point_bf16] = measured.ceilings.ridge_point("bf16");
  }
};

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// The table row that starts with `name`.
std::string row_of(const std::string& md, const std::string& name) {
  const auto at = md.find("| " + name + " |");
  return at == std::string::npos ? "" : md.substr(at, md.find('\n', at) - at);
}

}  // namespace

TEST(ReportCeilings, StoredSweepBeatsTheMeasuredBf16Peak) {
  const StoredRun run;
  const double probe = run.measured.ceilings.peak_flops("bf16");
  ASSERT_GT(probe, 0);
  ASSERT_GT(run.best_bf16, probe) << "the stored H200 sweep no longer beats its ceiling: the test needs another pair";
  EXPECT_NE(format_flops(run.best_bf16), format_flops(probe)) << "the two figures must read differently";
}

TEST(ReportCeilings, CeilingsTableRooflineAndSummaryCarryOneBf16Peak) {
  StoredRun run;
  const double probe = run.measured.ceilings.peak_flops("bf16");
  const std::string raised_text = format_flops(run.best_bf16), probe_text = format_flops(probe);
  // Before the run's records raise it, the table shows the probe's figure.
  const std::string first = detail::ceilings_markdown(run.measured, run.ctx.datasheet, run.ctx.ceilings, run.results.records);
  EXPECT_NE(row_of(first, "bf16 tensor (GEMM)").find("| " + probe_text + " |"), std::string::npos) << first;

  const auto notes = detail::raise_report_ceilings(run.ctx, run.results.records);
  ASSERT_EQ(notes.size(), 1u) << "only BF16 was beaten";
  EXPECT_DOUBLE_EQ(run.ctx.ceilings.peak_flops("bf16"), run.best_bf16);
  EXPECT_DOUBLE_EQ(run.ctx.ceilings.peak_flops("fp16"), run.measured.ceilings.peak_flops("fp16"));

  // The ceilings table: the raised figure, with where it came from; the probe's only in that note.
  const std::string table = detail::ceilings_markdown(run.measured, run.ctx.datasheet, run.ctx.ceilings, run.results.records);
  const std::string bf16_row = row_of(table, "bf16 tensor (GEMM)");
  EXPECT_NE(bf16_row.find(fmt::format("| {} (raised from {}: matmul n=8192 reached {}) |", raised_text, probe_text,
                                      raised_text)),
            std::string::npos)
      << bf16_row;
  EXPECT_EQ(occurrences(table, probe_text), 1u) << table;
  const double ridge = run.best_bf16 / run.measured.ceilings.memory_bytes_per_s;
  EXPECT_NE(table.find(fmt::format("ridge point: **{:.0f} FLOP/byte**", ridge)), std::string::npos) << table;
  EXPECT_NE(row_of(table, "fp16 tensor (GEMM)").find(format_flops(run.measured.ceilings.peak_flops("fp16")) + " |"),
            std::string::npos)
      << "a peak nothing beat stays as measured";

  // The roofline: its BF16 roof and the n=8192 GEMM's attainable rate are the raised peak.
  const detail::SectionOutput roofline = detail::roofline_output(run.ctx.ceilings, run.results.records, run.results.records.size());
  ASSERT_EQ(roofline.svgs.size(), 1u);
  EXPECT_NE(roofline.svgs[0].content.find(raised_text), std::string::npos);
  EXPECT_EQ(roofline.svgs[0].content.find("BF16 " + probe_text), std::string::npos);
  const auto gemm_row = roofline.markdown.find("| matmul `cuda_events` | n=8192 |");
  ASSERT_NE(gemm_row, std::string::npos) << roofline.markdown;
  const std::string row = roofline.markdown.substr(gemm_row, roofline.markdown.find('\n', gemm_row) - gemm_row);
  EXPECT_NE(row.find(fmt::format("| {} | 100% |", raised_text)), std::string::npos) << row;

  // The summary and the predictions read the same peak and ridge point.
  const ReportSummary s = summarize_report(run.ctx.measured, run.ctx.datasheet, run.results.records, {});
  const auto peak = std::find_if(s.numbers.begin(), s.numbers.end(),
                                 [](const SummaryNumber& n) { return n.key == prediction::bf16_tflop_per_s; });
  ASSERT_NE(peak, s.numbers.end());
  EXPECT_EQ(peak->value_text, raised_text);
  EXPECT_DOUBLE_EQ(run.ctx.measured.at(prediction::ridge_point_bf16), ridge);

  // Raised once: the same records again change nothing.
  EXPECT_TRUE(detail::raise_report_ceilings(run.ctx, run.results.records).empty());
}

TEST(ReportCeilings, OnlyATimedRateRaisesAPeak) {
  StoredRun run;
  const double fp32 = run.ctx.ceilings.peak_flops("fp32");
  ASSERT_GT(fp32, 0);
  // The timing demonstration's unsynchronized wall clock and a trace's counters read impossibly
  // fast; an output that failed its check is no rate at all.
  std::vector<Record> wrong;
  for (Method method : {Method::wall_naive, Method::cupti_trace, Method::cuda_events}) {
    Record r;
    r.name = "timing.large";
    r.method = method;
    r.dtype = DType::fp32;
    r.samples_ms = {0.001};
    finalize(r);
    r.flops = fp32 * 10 * 1e-6;  // ten times the peak
    if (method == Method::cuda_events) r.verification = "failed";
    wrong.push_back(r);
  }
  Record informational = wrong[2];
  informational.verification = "passed";
  informational.gate = RecordGate{.informational = true, .reason = "host latency"};
  wrong.push_back(informational);
  EXPECT_TRUE(detail::raise_report_ceilings(run.ctx, wrong).empty());
  EXPECT_DOUBLE_EQ(run.ctx.ceilings.peak_flops("fp32"), fp32);
  wrong[2].verification = "passed";  // the same rate, timed and checked, does raise it
  EXPECT_EQ(detail::raise_report_ceilings(run.ctx, wrong).size(), 1u);
  EXPECT_DOUBLE_EQ(run.ctx.ceilings.peak_flops("fp32"), wrong[2].flops_per_s());
}

TEST(ReportCeilings, DatasheetCeilingsAreNeverRaised) {
  StoredRun run;
  detail::use_datasheet_ceilings(run.ctx, *run.ctx.datasheet);
  const double sheet = run.ctx.ceilings.peak_flops("bf16");
  EXPECT_TRUE(detail::raise_report_ceilings(run.ctx, run.results.records).empty());
  EXPECT_EQ(run.ctx.ceilings.peak_flops("bf16"), sheet);
  EXPECT_EQ(detail::raised_peak_note(run.measured.ceilings, run.measured.ceilings, "bf16", run.results.records), "")
      << "a peak that was not raised has no note";
}
