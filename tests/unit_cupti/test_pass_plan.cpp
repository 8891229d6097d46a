// The pass plan from CUPTI's Profiler Host API, offline (no GPU: a chip name is enough): the
// roofline set fits two passes on Hopper, the memory set one, and the plan says what a step
// window takes. A separate program from ridge_unit_tests, which links no CUPTI.
#include <gtest/gtest.h>

#include <algorithm>

#include "ridge/errors.hpp"
#include "trace/cupti/pass_plan.hpp"

using namespace ridge;

namespace {

/// The plan of `set` on `chip`, or a skip when this CUPTI's Host API does not know the chip.
std::optional<trace::CounterPassPlan> plan(const std::string& chip, const std::string& set) {
  trace::CounterOptions o;
  o.metric_set = set;
  try {
    return detail::plan_counter_passes(chip, o.metric_names(), o.metrics);
  } catch (const Error& e) {
    if (std::string(e.what()).find("does not know the chip") != std::string::npos) return std::nullopt;
    throw;
  }
}

}  // namespace

TEST(CuptiPassPlan, TheRooflineSetTakesTwoPassesOnHopper) {
  const auto p = plan("GH100", "roofline");
  if (!p) GTEST_SKIP() << "this CUPTI's Profiler Host API does not know GH100";
  EXPECT_EQ(p->passes, 2u) << "DRAM, L2 and the tensor paths in one pass, the SASS FLOP counts in the other";
  EXPECT_EQ(p->groups.size(), 2u);
  // The warpgroup FP16 and TF32 paths are Hopper's choice of each alternative; the other chips' names are left out.
  auto has = [&](const std::string& m) { return std::find(p->metrics.begin(), p->metrics.end(), m) != p->metrics.end(); };
  EXPECT_TRUE(has("sm__ops_path_tensor_op_hgmma_src_fp16.sum"));
  EXPECT_TRUE(has("sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum"));
  EXPECT_TRUE(has("sm__ops_path_tensor_src_bf16_dst_fp32.sum"));
  EXPECT_TRUE(has("sm__ops_path_tensor_src_fp8.sum"));
  EXPECT_TRUE(has("dram__bytes_read.sum"));
  EXPECT_FALSE(has("sm__ops_path_tensor_src_tf32_dst_fp32.sum")) << "TF32 would be counted twice";
  for (const auto& m : p->metrics_not_offered) EXPECT_EQ(m.find("hgmma"), std::string::npos) << m;
  // Each group fits one pass, and the SASS counts are together, apart from the bytes.
  std::size_t sass_group = 9, bytes_group = 9;
  for (std::size_t g = 0; g < p->groups.size(); ++g)
    for (const auto& m : p->groups[g]) {
      if (m.starts_with("smsp__sass")) sass_group = std::min(sass_group, g);
      if (m == "dram__bytes_read.sum") bytes_group = g;
    }
  EXPECT_NE(sass_group, bytes_group);
}

TEST(CuptiPassPlan, TheMemorySetTakesOnePassAndTheFullSetMore) {
  const auto memory = plan("GH100", "memory");
  if (!memory) GTEST_SKIP() << "this CUPTI's Profiler Host API does not know GH100";
  EXPECT_EQ(memory->passes, 1u);
  EXPECT_TRUE(memory->metrics_not_offered.empty());
  const auto full = plan("GH100", "roofline-full");
  EXPECT_GT(full->passes, 2u) << "the FP64 and INT8 tensor paths cost passes of their own";
}

TEST(CuptiPassPlan, ThePlanSaysWhichStepsAWindowTakes) {
  const auto p = plan("GH100", "roofline");
  if (!p) GTEST_SKIP() << "this CUPTI's Profiler Host API does not know GH100";
  trace::CounterOptions o;
  o.steps = std::pair<std::uint64_t, std::uint64_t>{10, 12};
  o.step_range = "step";
  const std::string text = trace::to_text(*p, o);
  EXPECT_NE(text.find("in 2 passes"), std::string::npos) << text;
  EXPECT_NE(text.find("3 profiled steps x 2 passes take the program's steps 10..15 (6 steps)"), std::string::npos) << text;
  o.replay = trace::CounterReplay::kernel;
  EXPECT_NE(trace::to_text(*p, o).find("each profiled launch runs 2 times inside its launch call"), std::string::npos);
}

TEST(CuptiPassPlan, AnUnknownRawMetricIsAnErrorAndAnUnknownChipSaysSo) {
  if (!plan("GH100", "memory")) GTEST_SKIP() << "this CUPTI's Profiler Host API does not know GH100";
  EXPECT_THROW(detail::plan_counter_passes("GH100", {"no__such_metric.sum"}, {"no__such_metric.sum"}), Error);
  try {
    detail::plan_counter_passes("XY999", {"dram__bytes_read.sum"});
    FAIL() << "an unknown chip must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("XY999"), std::string::npos) << e.what();
  }
}
