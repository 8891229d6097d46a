// The decode workload's CPU side: the logits checks' verdicts on synthetic vectors, the
// reference-file reader, the decode and profile options' validation, and the plots built from
// synthetic records. No GPU.
#include <cmath>
#include <filesystem>
#include <limits>

#include <gtest/gtest.h>
#include <unistd.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/gpt2/checks.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/gpt2/safetensors.hpp"

using namespace ridge;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ridge_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

}  // namespace

TEST(Gpt2Checks, ToleranceDependsOnTheDtype) {
  EXPECT_DOUBLE_EQ(gpt2::logits_tolerance(DType::fp32), 1e-4);
  EXPECT_DOUBLE_EQ(gpt2::logits_tolerance(DType::bf16), 2e-2);
}

TEST(Gpt2Checks, CompareLogitsCountsErrorsAndArgmaxPerSequence) {
  // Two sequences of vocabulary 4; the second's largest logit moves from index 1 to index 3.
  const std::vector<float> expected{1, 5, 2, 0, 0, 9, 1, 8};
  std::vector<float> got = expected;
  got[7] = 10;  // |diff| 2
  const auto c = gpt2::compare_logits(got, expected, 4, 0.5);
  EXPECT_EQ(c.sequences, 2);
  EXPECT_EQ(c.argmax_agree, 1);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 2.0);
  double norm = 0;
  for (float v : expected) norm += double(v) * v;
  EXPECT_NEAR(c.relative_l2_error, 2.0 / std::sqrt(norm), 1e-12);
  EXPECT_TRUE(c.passed);  // 0.13 <= 0.5
  EXPECT_FALSE(gpt2::compare_logits(got, expected, 4, 0.1).passed);
}

TEST(Gpt2Checks, NanLogitsFailAndShapesMustMatch) {
  const std::vector<float> expected{1, 2, 3, 4};
  std::vector<float> got = expected;
  got[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(gpt2::compare_logits(got, expected, 4, 1e9).passed);
  EXPECT_THROW(gpt2::compare_logits(std::vector<float>{1, 2}, expected, 4, 1), UsageError);
  EXPECT_THROW(gpt2::compare_logits(expected, expected, 3, 1), UsageError);
}

TEST(Gpt2Checks, StepVerdictNeedsBothTheReferenceAndGraphAgreement) {
  const auto ok = gpt2::step_check_verdict({0, 7}, 1e-3, 0.0, DType::bf16);
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.summary().rfind("passed: logits vs CPU reference (sequences 0,7)", 0), 0u) << ok.summary();
  EXPECT_FALSE(gpt2::step_check_verdict({0}, 3e-2, 0.0, DType::bf16).passed);     // reference disagrees
  EXPECT_FALSE(gpt2::step_check_verdict({0}, 1e-3, 1e-3, DType::bf16).passed);    // graph differs from eager
  EXPECT_FALSE(gpt2::step_check_verdict({0}, 1e-3, 0.0, DType::fp32).passed);     // fp32 is held to 1e-4
  EXPECT_FALSE(gpt2::step_check_verdict({0}, std::nan(""), 0.0, DType::fp32).passed);
  const auto bad = gpt2::step_check_verdict({0}, 3e-2, 0.0, DType::bf16);
  EXPECT_EQ(bad.summary().rfind("FAILED", 0), 0u) << bad.summary();
}

TEST(Gpt2Checks, StepCheckComparesTheFirstAndLastSequenceWithInVocabularyTokens) {
  EXPECT_EQ(gpt2::step_check_sequences(1), std::vector<int>{0});
  EXPECT_EQ(gpt2::step_check_sequences(8), (std::vector<int>{0, 7}));
  for (int t : gpt2::step_check_tokens(64, 512)) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 512);
  }
}

TEST(Gpt2Checks, ReferenceFileIsReadAndJudged) {
  const auto config = gpt2::preset("tiny");
  const std::string path = temp_path("reference_logits.safetensors");
  std::vector<float> logits(2 * config.vocab, 0.5f);
  logits[3] = 2;                 // sequence 0 argmax 3
  logits[config.vocab + 9] = 2;  // sequence 1 argmax 9
  gpt2::write_safetensors(path,
                          {{"tokens", "I32", {2, 3}, {}, {1, 2, 3, 4, 5, 6}}, {"logits", "F32", {2, config.vocab}, logits, {}}},
                          {{"reference", "synthetic"}});
  const auto reference = gpt2::read_reference_logits(path, config);
  EXPECT_EQ(reference.batch, 2);
  EXPECT_EQ(reference.length, 3);
  EXPECT_EQ(reference.kind, "synthetic");
  EXPECT_FALSE(reference.logits_bf16.has_value());

  std::vector<float> got = logits;
  got[config.vocab + 9] = 0;  // sequence 1 now picks another token, and the error is large
  const auto check = gpt2::judge_reference_logits(reference, got, config.vocab, DType::fp32);
  EXPECT_FALSE(check.comparison.passed);
  EXPECT_EQ(check.comparison.argmax_agree, 1);
  const Record r = gpt2::to_record(check, DType::fp32);
  EXPECT_EQ(r.name, "decode.check_logits");
  EXPECT_EQ(r.verification, "failed");
  EXPECT_EQ(r.params.value("context", 0), 3);
  EXPECT_EQ(r.extra.value("argmax_agree", -1), 1);
  EXPECT_TRUE(gpt2::judge_reference_logits(reference, logits, config.vocab, DType::fp32).comparison.passed);

  const auto small = gpt2::preset("small");  // another vocabulary: the logits' shape is wrong
  EXPECT_THROW(gpt2::read_reference_logits(path, small), UsageError);
  std::filesystem::remove(path);
}

TEST(Gpt2DecodeOptions, DefaultsAreValidAndBadFieldsAreNamed) {
  gpt2::DecodeOptions o;
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(o.batches, std::vector<int>{1});
  EXPECT_EQ(o.contexts, std::vector<int>{1024});
  EXPECT_EQ(o.modes.size(), 2u);
  EXPECT_TRUE(o.pdl);
  EXPECT_FALSE(o.l2_prefetch);
  EXPECT_TRUE(o.timeline_path.empty());
  // The fields' names, never a command-line flag: Python users read these too.
  auto expect_usage = [](gpt2::DecodeOptions bad, const std::string& needle) {
    try {
      bad.validate();
      ADD_FAILURE() << "accepted; expected an error naming " << needle;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
    }
  };
  auto bad = o;
  bad.dtype = DType::fp16;
  expect_usage(bad, "fp32 or bf16");
  bad = o;
  bad.contexts = {2048};
  expect_usage(bad, "1024 positions");
  bad = o;
  bad.model = "giant";
  expect_usage(bad, "giant");
  bad = o;
  bad.samples = 0;
  expect_usage(bad, "samples must be");
  bad = o;
  bad.modes.clear();
  expect_usage(bad, "modes needs");
  bad = o;
  bad.bandwidth_bytes_per_s = std::nan("");  // NaN was let through as "not negative"
  expect_usage(bad, "bandwidth_bytes_per_s");
  bad = o;
  bad.weights = "/nonexistent.safetensors";
  expect_usage(bad, "does not exist");
  bad = o;
  bad.timeline_path = "t.json";
  bad.batches = {1, 8};
  expect_usage(bad, "timeline_path");
  bad.batches = {1};
  EXPECT_NO_THROW(bad.validate());
}

TEST(Gpt2DecodeOptions, QuickRunsBatchOneAndEight) {
  const auto q = gpt2::DecodeOptions::quick(3);
  EXPECT_EQ(q.device, 3);
  EXPECT_EQ(q.batches, (std::vector<int>{1, 8}));
  EXPECT_EQ(q.samples, 10);
  EXPECT_NO_THROW(q.validate());
}

TEST(Gpt2DecodeOptions, ListsParseOrNameTheBadItem) {
  EXPECT_EQ(gpt2::parse_positive_ints("1,8,,64", "--batch"), (std::vector<int>{1, 8, 64}));
  try {
    gpt2::parse_positive_ints("1,zero", "--batch");
    FAIL() << "accepted 'zero'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--batch: 'zero'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpt2::parse_positive_ints("0", "--batch"), UsageError);
  EXPECT_THROW(gpt2::parse_positive_ints("", "--context"), UsageError);
  EXPECT_EQ(gpt2::parse_modes("graph"), std::vector<gpt2::Mode>{gpt2::Mode::graph});
  EXPECT_THROW(gpt2::parse_modes("eager,lazy"), UsageError);
  EXPECT_THROW(gpt2::parse_modes(","), UsageError);
}

TEST(Gpt2DecodeRun, GraphSpeedupNeedsBothModes) {
  gpt2::DecodeConfiguration c;
  c.eager_ms = 0.38;
  EXPECT_FALSE(c.graph_speedup().has_value());
  c.graph_ms = 0.19;
  ASSERT_TRUE(c.graph_speedup().has_value());
  EXPECT_DOUBLE_EQ(*c.graph_speedup(), 2.0);
}

TEST(Gpt2DecodeRun, PlotsHoldOneSeriesPerModeMethodAndContextWithoutSpinHold) {
  gpt2::DecodeRun run;
  run.ceilings.source = CeilingsSource::measured;
  run.ceilings.memory_bytes_per_s = 4.5e12;
  run.ceilings.peak_flops_per_s["bf16"] = 700e12;
  auto add = [&](const std::string& mode, const std::string& method, int batch) {
    Record r;
    r.name = "decode";
    r.method = method_from_string(method);
    r.params = {{"mode", mode}, {"batch", batch}, {"context", 1024}};
    r.samples_ms = {0.3};
    r.bytes = 3e8;
    r.flops = 3e8 * batch;
    finalize(r);
    r.extra = {{"tokens_per_s", batch / 3e-4}, {"decode_ceiling_tokens_per_s", batch * 15000.0}};
    run.records.push_back(r);
  };
  for (int batch : {1, 8}) {
    add("eager", "cuda_events", batch);
    add("eager", "spin_hold", batch);
    add("graph", "graph_replay", batch);
  }
  const Plot roof = gpt2::decode_roofline_plot(run);
  auto series = [&](const Plot& plot, const std::string& name) -> const PlotSeries* {
    for (const auto& s : plot.series)
      if (s.name == name) return &s;
    return nullptr;
  };
  // Drawn by roofline_plot: the memory slope, the bf16 roof, the ridge point, then one series per
  // mode and method (spin_hold left out), each left to right.
  const PlotSeries* eager = series(roof, "eager (cuda_events), context 1024");
  const PlotSeries* graph = series(roof, "graph (graph_replay), context 1024");
  ASSERT_NE(eager, nullptr);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(series(roof, "eager (spin_hold), context 1024"), nullptr);
  ASSERT_EQ(eager->points.size(), 2u);
  EXPECT_LT(eager->points[0].x, eager->points[1].x);
  EXPECT_EQ(eager->points[0].label, "B=1");
  EXPECT_NE(series(roof, "measured memory " + format_bytes_per_s(4.5e12)), nullptr);
  bool roof_at_peak = false;
  for (const auto& s : roof.series)
    roof_at_peak = roof_at_peak || (!s.points.empty() && !s.markers && s.points.back().y == 700e12);
  EXPECT_TRUE(roof_at_peak);
  EXPECT_NE(roof.title.find("bf16 at " + format_bytes_per_s(4.5e12)), std::string::npos) << roof.title;
  // A given bandwidth has no peak: the roof is the fastest known GPU's.
  gpt2::DecodeRun given = run;
  given.ceilings = DeviceCeilings{};
  given.ceilings.source = CeilingsSource::user;
  given.ceilings.memory_bytes_per_s = 4.5e12;
  const Plot given_roof = gpt2::decode_roofline_plot(given);
  bool fastest_roof = false;
  for (const auto& s : given_roof.series)
    fastest_roof = fastest_roof || (!s.points.empty() && !s.markers && s.points.back().y == fastest_known_peak_flops(DType::bf16));
  EXPECT_TRUE(fastest_roof);
  const Plot tokens = gpt2::decode_tokens_plot(run);
  ASSERT_EQ(tokens.series.size(), 3u);  // two measured series and one decode_ceiling
  EXPECT_TRUE(tokens.series[2].dashed);
  EXPECT_EQ(tokens.series[2].points.size(), 2u);  // the same ceiling point per batch once
  EXPECT_TRUE(gpt2::decode_roofline_plot(gpt2::DecodeRun{}).series.empty());
}

TEST(Gpt2ProfileOptions, ValidationAndTheGraphTracePath) {
  gpt2::ProfileOptions o;
  EXPECT_NO_THROW(o.validate());
  auto bad = o;
  bad.context = 0;
  EXPECT_THROW(bad.validate(), UsageError);
  bad = o;
  bad.batch = 0;
  EXPECT_THROW(bad.validate(), UsageError);
  bad = o;
  bad.dtype = DType::fp8_e4m3;
  EXPECT_THROW(bad.validate(), UsageError);
  bad = o;
  bad.model = "tiny";
  bad.context = 257;  // tiny has 256 positions
  EXPECT_THROW(bad.validate(), UsageError);
  EXPECT_EQ(gpt2::graph_trace_path("runs/trace.json"), "runs/trace-graph.json");
  gpt2::ModeProfile p;
  EXPECT_EQ(p.launch_gap_fraction(), 0.0);
  p.analysis.kernel_span_ns = 400;
  p.analysis.idle_time_ns = 100;
  EXPECT_DOUBLE_EQ(p.launch_gap_fraction(), 0.25);
}
