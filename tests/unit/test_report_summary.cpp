// The report's summary (the answer first), its warnings grouped by kind, and long tables folded in
// the HTML: from records shaped like an H100 report's, no GPU needed.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ridge/catalog.hpp"
#include "ridge/history.hpp"
#include "ridge/report.hpp"
#include "ridge/stats.hpp"

using namespace ridge;

namespace {

std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

Record stream_record(std::int64_t n, bool cache_resident) {
  Record r;
  r.name = "bandwidth.add";
  r.method = Method::graph_replay;
  r.dtype = DType::fp32;
  r.params = {{"n", n}};
  r.samples_ms = {1.0, 1.0, 1.0};
  if (cache_resident)
    r.warnings.push_back(fmt::format("cache-resident: working set {} MB fits in the 52 MB L2; this measures the cache", n / 100000));
  return r;
}

/// What an H100 report measured (2026-12-07), and its sections' records.
struct H100Report {
  std::map<std::string, double> measured{{prediction::hbm_tb_per_s, 3.11},        {prediction::bf16_tflop_per_s, 790},
                                         {prediction::ridge_point_bf16, 254},     {prediction::add_tb_per_s, 3.0},
                                         {prediction::add_fraction_of_datasheet, 0.9}, {prediction::matmul_70pct_n, 2048},
                                         {prediction::decode_tokens_per_s, 2900}, {prediction::decode_fraction_of_ceiling, 0.27},
                                         {prediction::launch_overhead_us, 6.2},   {prediction::launch_gap_fraction, 0.4},
                                         {prediction::kernels_per_step, 85}};
  std::vector<Record> records;
  std::vector<SectionRun> sections;
  H100Report() {
    for (int i = 0; i < 57; ++i) records.push_back(stream_record(std::int64_t(1024) << (i % 19), i < 39));
    Record decode;
    decode.name = "decode";
    decode.samples_ms = {0.1};
    decode.warnings = {"impossible: 9000 tokens/s is above decode_ceiling (8000) at batch 1; the timer is wrong"};
    decode.clocks_end.throttle_reasons = 0x4;  // SW power cap
    records.push_back(decode);
    sections = {{"ceilings", "Measured ceilings", 1, 0},
                {"bandwidth", "Bandwidth: x + y from 2^10 to 2^28", 1, 57},
                {"decode", "Decode: GPT-2 eager vs CUDA graph", 1, 1},
                {"profile", "Profile of one decode step", 1, 0, "CUPTI: out of records", 1}};
  }
};

}  // namespace

TEST(ReportSummary, NumbersAgainstTheirReferencesLinkedToTheirSections) {
  const H100Report h;
  const CatalogEntry& sheet = catalog_entry("h100-sxm");
  const ReportSummary s = summarize_report(h.measured, sheet, h.records, h.sections);
  ASSERT_GE(s.numbers.size(), 5u);
  ASSERT_LE(s.numbers.size(), 8u);
  EXPECT_FALSE(s.model_only);
  const auto& hbm = s.numbers[0];
  EXPECT_EQ(hbm.key, prediction::hbm_tb_per_s);
  ASSERT_TRUE(hbm.fraction);
  EXPECT_NEAR(*hbm.fraction, 3.11e12 / sheet.ceilings.memory_bytes_per_s, 1e-9);
  EXPECT_NE(hbm.reference.find("datasheet"), std::string::npos) << hbm.reference;
  EXPECT_EQ(hbm.section, "Measured ceilings");
  const auto decode = std::find_if(s.numbers.begin(), s.numbers.end(),
                                   [](const SummaryNumber& n) { return n.key == prediction::decode_tokens_per_s; });
  ASSERT_NE(decode, s.numbers.end());
  EXPECT_NE(decode->reference.find("27% of its ceiling (10741 tokens/s)"), std::string::npos) << decode->reference;

  const std::string md = summary_markdown(s);
  EXPECT_LE(lines(md), 25u) << md;
  EXPECT_NE(md.find("[HBM bandwidth](#measured-ceilings)"), std::string::npos) << md;
  EXPECT_NE(md.find("(#decode-gpt-2-eager-vs-cuda-graph)"), std::string::npos) << md;
  // The anchors are the ones the HTML gives the headings.
  const std::string html = markdown_to_html(md + "## Measured ceilings\n\ntext\n", {}, "t");
  EXPECT_NE(html.find("id=\"measured-ceilings\""), std::string::npos);
  EXPECT_NE(html.find("href=\"#measured-ceilings\""), std::string::npos);
  EXPECT_EQ(to_json(s)["numbers"].size(), s.numbers.size());
  EXPECT_NE(summary_text(s).find("HBM bandwidth"), std::string::npos);
}

TEST(ReportSummary, FindingsThatNeedActionAndNotTheOnesThatExplain) {
  const H100Report h;
  const ReportSummary s = summarize_report(h.measured, catalog_entry("h100-sxm"), h.records, h.sections);
  std::vector<std::string> kinds;
  for (const auto& f : s.findings) kinds.push_back(f.kind + " @ " + f.section);
  const std::vector<std::string> want{"impossible @ Decode: GPT-2 eager vs CUDA graph",
                                      "throttling @ Decode: GPT-2 eager vs CUDA graph",
                                      "section failed @ Profile of one decode step"};
  EXPECT_EQ(kinds, want) << "cache-resident rows explain a number; they stay in their section";
  EXPECT_NE(s.findings[0].text.find("1 of 1 rows"), std::string::npos) << s.findings[0].text;
  EXPECT_NE(summary_markdown(s).find("Needs action"), std::string::npos);
}

TEST(ReportSummary, ModelOnlySaysNothingWasMeasured) {
  const ReportSummary s = summarize_report({}, catalog_entry("h100-sxm"), {}, {});
  EXPECT_TRUE(s.model_only);
  ASSERT_EQ(s.numbers.size(), 3u);  // the datasheet's HBM, BF16 peak and ridge point, said to be the datasheet's
  EXPECT_NE(s.numbers[0].reference.find("not measured"), std::string::npos) << s.numbers[0].reference;
  EXPECT_NEAR(s.numbers[2].value, 295, 1);  // the H100's BF16 ridge point
  EXPECT_NE(summary_markdown(s).find("Nothing was measured"), std::string::npos);
}

TEST(ReportWarnings, GroupedByKindWithTheRowsTheyCover) {
  const H100Report h;
  const std::vector<Record> bandwidth(h.records.begin(), h.records.begin() + 57);
  const auto groups = group_warnings(bandwidth);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].kind, "cache-resident");
  EXPECT_EQ(groups[0].rows.size(), 39u);
  EXPECT_EQ(groups[0].of_rows, 57u);
  for (const auto& r : bandwidth) EXPECT_LE(r.warnings.size(), 1u);  // each row keeps its own
  EXPECT_EQ(warning_kind("launch-bound: the host took 5 us"), "launch-bound");
  EXPECT_EQ(warning_kind("the SM clock was still moving after 200 ms of settling (last read 1755 MHz): x"), "clocks moved");
  EXPECT_EQ(warning_kind("something long without a short prefix, said twice"), "something long without a short prefix, said twice");
}

TEST(ReportHtml, TablesOverTwelveRowsFoldBehindASummaryLineMarkdownKeepsThem) {
  std::string md = "| n | ms |\n|---|---:|\n";
  for (std::size_t i = 1; i <= max_unfolded_table_rows + 1; ++i) md += fmt::format("| {} | 1.0 |\n", i * 1024);
  const std::string html = markdown_to_html(md, {}, "t");
  EXPECT_NE(html.find("<details><summary>13 rows: 1024 to 13312</summary>"), std::string::npos) << html;
  EXPECT_EQ(std::count(html.begin(), html.end(), '\n') > 13, true);
  std::string short_md = "| n | ms |\n|---|---:|\n";
  for (std::size_t i = 1; i <= max_unfolded_table_rows; ++i) short_md += fmt::format("| {} | 1.0 |\n", i);
  EXPECT_EQ(markdown_to_html(short_md, {}, "t").find("<details>"), std::string::npos);
}

TEST(ReportSummary, RegressionsAgainstThePreviousRunAreFindings) {
  auto run = [](double ms) {
    ResultSet s;
    Record r;
    r.name = "matmul";
    r.method = Method::graph_replay;
    r.dtype = DType::bf16;
    r.params = {{"n", 4096}};
    for (int i = 0; i < 20; ++i) r.samples_ms.push_back(ms * (1 + 0.001 * (i % 5)));
    finalize(r);
    s.records.push_back(r);
    return s;
  };
  ReportSummary s;
  add_regression_findings(s, compare_results(run(1.0), run(1.0)), "the previous run");
  EXPECT_TRUE(s.findings.empty()) << "the same speed is no regression";
  add_regression_findings(s, compare_results(run(1.0), run(1.2)), "the previous run (run 3, commit abc)");
  ASSERT_EQ(s.findings.size(), 1u);
  EXPECT_EQ(s.findings[0].kind, "regression");
  EXPECT_NE(s.findings[0].text.find("1.20x the median of the previous run (run 3, commit abc)"), std::string::npos)
      << s.findings[0].text;
}

TEST(ReportSummary, EachNumberAgainstThePreviousRunInTwentyFiveLines) {
  const H100Report h;
  // The previous run's values, as its measured_record carried them through a results.json.
  std::map<std::string, double> before = h.measured;
  before[prediction::hbm_tb_per_s] = 3.0;
  before[prediction::decode_tokens_per_s] = 3200;
  before.erase(prediction::launch_overhead_us);  // a number the previous run did not measure
  const Record stored = record_from_json(to_json(measured_record(before)));
  EXPECT_EQ(stored.name, measured_record_name);
  EXPECT_EQ(stored.method, Method::none) << "a value, not a timing: compare never judges it";
  ASSERT_EQ(measured_from_records({h.records[0], stored}), before);
  EXPECT_TRUE(measured_from_records(h.records).empty()) << "a run from before reports stored their values";

  ReportSummary s = summarize_report(h.measured, catalog_entry("h100-sxm"), h.records, h.sections);
  for (int i = 0; i < 6; ++i) s.findings.push_back({"regression", fmt::format("record {} is slower", i), "Files"});
  add_previous_values(s, measured_from_records({stored}), "the previous run (run 3, commit abc1234)");
  EXPECT_EQ(s.previous_run, "the previous run (run 3, commit abc1234)");
  const std::string md = summary_markdown(s);
  EXPECT_LE(lines(md), 25u) << md;
  EXPECT_NE(md.find("| measured | value | against | the previous run (run 3, commit abc1234) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3.00 TB/s, +3.7% |"), std::string::npos) << md;     // 3.11 against 3.00
  EXPECT_NE(md.find("| 3200 tokens/s, -9.4% |"), std::string::npos) << md;  // 2900 against 3200
  EXPECT_NE(md.find("| 790 TFLOP/s, same |"), std::string::npos) << md;
  const auto launch = std::find_if(s.numbers.begin(), s.numbers.end(),
                                   [](const SummaryNumber& n) { return n.key == prediction::launch_overhead_us; });
  ASSERT_NE(launch, s.numbers.end());
  EXPECT_FALSE(launch->previous);
  EXPECT_NE(md.find("| per-sample events minus launch-free timing | - |"), std::string::npos) << md;
  EXPECT_NE(summary_text(s).find("the previous run (run 3, commit abc1234): 3.00 TB/s, +3.7%"), std::string::npos);
  EXPECT_DOUBLE_EQ(to_json(s)["numbers"][0]["previous"].get<double>(), 3.0);

  // Without a previous run the table keeps its three columns.
  ReportSummary alone = summarize_report(h.measured, catalog_entry("h100-sxm"), h.records, h.sections);
  add_previous_values(alone, {}, "the previous run (run 3, commit abc1234)");
  EXPECT_TRUE(alone.previous_run.empty());
  EXPECT_NE(summary_markdown(alone).find("| measured | value | against |\n"), std::string::npos);
}

#ifdef RIDGE_HAVE_HISTORY
TEST(ReportSummary, TheHistoryKeepsTheMeasuredValuesForTheNextReport) {
  const auto db = std::filesystem::path(::testing::TempDir()) / "ridge-report-summary-history.db";
  std::filesystem::remove(db);
  const H100Report h;
  ResultSet run;
  run.context.device = DeviceDescription{};
  run.context.device->uuid = "GPU-1";
  run.context.timestamp_utc = "2026-12-07T10:00:00Z";
  run.records = {h.records[0], measured_record(h.measured)};
  for (auto& r : run.records) finalize(r);
  {
    History history = History::open_or_create(db);
    const AddResult added = history.add(run, {.commit = "abc1234", .branch = "main", .source = "r1"});
    EXPECT_EQ(measured_from_records(history.load_run(added.run_id).records), h.measured);
  }
  std::filesystem::remove(db);
}
#endif
