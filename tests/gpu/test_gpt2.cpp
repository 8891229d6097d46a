// GPT-2 decode on the GPU against the CPU reference (tiny config: 2 layers, width 128, 2 heads,
// vocabulary 512, context 256), in fp32 and bf16, both matrix backends, with and without PDL,
// eager and graph.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <fmt/format.h>

#include "gpu_test_util.hpp"
#include "ridge/errors.hpp"
#include "ridge/gpt2/checks.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/model.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/trace/analysis.hpp"

using namespace ridge;

namespace {

using gpt2::logits_row;
using gpt2::logits_tolerance;

// The weights the GPU model holds, as the CPU reference should see them.
gpt2::Weights reference_weights(const gpt2::Config& config, DType dtype, std::uint64_t seed) {
  auto w = gpt2::random_weights(config, seed);
  if (dtype == DType::bf16) gpt2::round_matrices_to_bf16(w);
  return w;
}

struct Case {
  DType dtype;
  gpt2::GemmPath gemm;
  bool pdl;
  gpt2::StepKernel kernel = gpt2::StepKernel::automatic;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return to_string(info.param.dtype) + "_" + to_string(info.param.gemm) + (info.param.pdl ? "_pdl" : "_nopdl") + "_" +
         to_string(info.param.kernel);
}

gpt2::DecoderOptions options(const Case& c, int batch, int max_context) {
  return {.batch = batch, .max_context = max_context, .gemm = c.gemm, .kernel = c.kernel, .pdl = c.pdl};
}

class Gpt2Decode : public testing::TestWithParam<Case> {};

}  // namespace

TEST(Gpt2Gpu, RandomInitMatchesTheHostBitForBit) {
  RIDGE_REQUIRE_GPU();
  const auto config = gpt2::preset("tiny");
  for (DType dtype : {DType::fp32, DType::bf16}) {
    auto model = gpt2::Model::random(config, dtype, 21);
    const auto expected = reference_weights(config, dtype, 21);
    const auto got = model->download();
    ASSERT_EQ(got.tensors.size(), expected.tensors.size());
    for (std::size_t i = 0; i < got.tensors.size(); ++i)
      EXPECT_EQ(got.tensors[i], expected.tensors[i]) << "tensor " << gpt2::tensor_specs(config)[i].name << " "
                                                      << to_string(dtype);
  }
}

TEST_P(Gpt2Decode, PrefillByStepsMatchesTheReference) {
  RIDGE_REQUIRE_GPU();
  const Case c = GetParam();
  const auto config = gpt2::preset("tiny");
  const auto weights = reference_weights(config, c.dtype, 3);
  auto model = gpt2::Model::random(config, c.dtype, 3);
  const int batch = 3;
  gpt2::Decoder decoder(*model, options(c, batch, 40));
  EXPECT_EQ(decoder.gemm(), c.gemm);
  if (c.kernel != gpt2::StepKernel::automatic) {
    EXPECT_EQ(decoder.kernel(), c.kernel);
  }
  if (c.gemm == gpt2::GemmPath::cublas) {
    EXPECT_EQ(decoder.kernel(), gpt2::StepKernel::chain);
  }
  std::vector<gpt2::Sequence> sequences(batch, gpt2::Sequence(config));
  for (int step = 0; step < 12; ++step) {
    std::vector<int> tokens(batch);
    for (int b = 0; b < batch; ++b) tokens[b] = (step * 37 + b * 101 + 5) % config.vocab;
    decoder.set_tokens(tokens);
    decoder.step(gpt2::Mode::eager);
    decoder.set_positions(std::vector<int>(batch, step + 1));
    const auto logits = decoder.logits();
    const auto next = decoder.next_tokens();
    for (int b = 0; b < batch; ++b) {
      const auto expected = gpt2::reference_step(weights, sequences[b], tokens[b]);
      const auto got = logits_row(logits, b, config.vocab);
      const double err = gpt2::relative_l2_error(got, expected);
      EXPECT_LE(err, logits_tolerance(c.dtype)) << "step " << step << " sequence " << b;
      // Greedy choice: the GPU's token is the arg max of its own logits, and (fp32) the reference's.
      EXPECT_EQ(next[b], gpt2::argmax(got)) << "step " << step << " sequence " << b;
      if (c.dtype == DType::fp32) {
        EXPECT_EQ(next[b], gpt2::argmax(expected)) << "step " << step << " sequence " << b;
      }
    }
  }
}

TEST_P(Gpt2Decode, StepAtARandomCacheMatchesTheReference) {
  RIDGE_REQUIRE_GPU();
  const Case c = GetParam();
  const auto config = gpt2::preset("tiny");
  const auto weights = reference_weights(config, c.dtype, 8);
  auto model = gpt2::Model::random(config, c.dtype, 8);
  // A full-length context: several attention splits per (sequence, head), combined by the last block.
  for (int batch : {1, 2}) {
    for (int context : {0, 5, 200, config.context - 1}) {
      gpt2::Decoder decoder(*model, options(c, batch, config.context));
      decoder.fill_random_cache(context, 99);
      std::vector<int> tokens(batch);
      for (int b = 0; b < batch; ++b) tokens[b] = 17 + 200 * b;
      decoder.set_tokens(tokens);
      decoder.step(gpt2::Mode::eager);
      const auto logits = decoder.logits();
      for (int b = 0; b < batch; ++b) {
        gpt2::Sequence seq(config);
        gpt2::fill_random_cache(config, 99, b, context, c.dtype == DType::bf16, seq);
        const auto expected = gpt2::reference_step(weights, seq, tokens[b]);
        EXPECT_LE(gpt2::relative_l2_error(logits_row(logits, b, config.vocab), expected), logits_tolerance(c.dtype))
            << "batch " << batch << " context " << context << " sequence " << b;
      }
    }
  }
}

TEST_P(Gpt2Decode, GraphReplayEqualsEagerAndAdvancesOnTheDevice) {
  RIDGE_REQUIRE_GPU();
  const Case c = GetParam();
  const auto config = gpt2::preset("tiny");
  auto model = gpt2::Model::random(config, c.dtype, 4);
  const int batch = 2;
  gpt2::Decoder eager(*model, options(c, batch, 64));
  gpt2::Decoder graph(*model, options(c, batch, 64));
  const std::vector<int> start{11, 300};
  eager.set_tokens(start);
  graph.set_tokens(start);
  graph.warmup(gpt2::Mode::graph, 1);  // captures (and runs) the graph; reset the state it changed
  graph.set_positions({0, 0});
  graph.set_tokens(start);
  for (int step = 0; step < 8; ++step) {
    eager.step(gpt2::Mode::eager);
    graph.step(gpt2::Mode::graph);
    const auto le = eager.logits(), lg = graph.logits();
    double max_diff = 0;
    for (std::size_t i = 0; i < le.size(); ++i) max_diff = std::max(max_diff, std::abs(double(le[i]) - lg[i]));
    // ridge's kernels are deterministic; cuBLASLt may pick a split-K scheme that is not bitwise.
    if (c.gemm == gpt2::GemmPath::gemv)
      EXPECT_EQ(max_diff, 0.0) << "step " << step;
    else
      EXPECT_LE(gpt2::relative_l2_error(lg, le), 1e-6) << "step " << step;
    EXPECT_EQ(eager.next_tokens(), graph.next_tokens()) << "step " << step;
    eager.advance();
    graph.advance();
  }
  EXPECT_EQ(graph.positions(), (std::vector<int>{8, 8}));
}

INSTANTIATE_TEST_SUITE_P(AllBackends, Gpt2Decode,
                         testing::Values(Case{DType::fp32, gpt2::GemmPath::gemv, true}, Case{DType::bf16, gpt2::GemmPath::gemv, true},
                                         Case{DType::fp32, gpt2::GemmPath::gemv, false},
                                         Case{DType::bf16, gpt2::GemmPath::gemv, false},
                                         Case{DType::fp32, gpt2::GemmPath::cublas, true},
                                         Case{DType::bf16, gpt2::GemmPath::cublas, true},
                                         Case{DType::fp32, gpt2::GemmPath::gemv, false, gpt2::StepKernel::barrier},
                                         Case{DType::bf16, gpt2::GemmPath::gemv, false, gpt2::StepKernel::barrier},
                                         Case{DType::fp32, gpt2::GemmPath::gemv, true, gpt2::StepKernel::chain},
                                         Case{DType::bf16, gpt2::GemmPath::gemv, true, gpt2::StepKernel::chain}),
                         case_name);

TEST(Gpt2Gpu, GreedyGenerationInGraphModeMatchesTheReference) {
  RIDGE_REQUIRE_GPU();
  const auto config = gpt2::preset("tiny");
  const auto weights = reference_weights(config, DType::fp32, 12);
  auto model = gpt2::Model::random(config, DType::fp32, 12);
  gpt2::Decoder decoder(*model, {.batch = 1, .max_context = 32});
  decoder.set_tokens({42});
  decoder.warmup(gpt2::Mode::graph, 1);
  decoder.set_positions({0});
  decoder.set_tokens({42});
  gpt2::Sequence seq(config);
  int token = 42;
  for (int step = 0; step < 10; ++step) {
    decoder.step(gpt2::Mode::graph);
    const int expected = gpt2::argmax(gpt2::reference_step(weights, seq, token));
    EXPECT_EQ(decoder.next_tokens()[0], expected) << "step " << step;
    token = expected;
    decoder.advance();
  }
}

TEST(Gpt2Gpu, LargerBatchesUseCublasAndAgree) {
  RIDGE_REQUIRE_GPU();
  const auto config = gpt2::preset("tiny");
  const auto weights = reference_weights(config, DType::bf16, 6);
  auto model = gpt2::Model::random(config, DType::bf16, 6);
  gpt2::Decoder decoder(*model, {.batch = 20, .max_context = 128});
  EXPECT_EQ(decoder.gemm(), gpt2::GemmPath::cublas);
  decoder.fill_random_cache(100, 5);
  std::vector<int> tokens(20);
  for (int b = 0; b < 20; ++b) tokens[b] = b * 25;
  decoder.set_tokens(tokens);
  decoder.step(gpt2::Mode::graph);
  const auto logits = decoder.logits();
  for (int b : {0, 7, 19}) {
    gpt2::Sequence seq(config);
    gpt2::fill_random_cache(config, 5, b, 100, true, seq);
    EXPECT_LE(gpt2::relative_l2_error(logits_row(logits, b, config.vocab), gpt2::reference_step(weights, seq, tokens[b])), 2e-2)
        << "sequence " << b;
  }
}

TEST(Gpt2Gpu, RejectsWhatItCannotDo) {
  RIDGE_REQUIRE_GPU();
  const auto config = gpt2::preset("tiny");
  auto model = gpt2::Model::random(config, DType::bf16, 1);
  EXPECT_THROW(gpt2::Decoder(*model, {.batch = 9, .gemm = gpt2::GemmPath::gemv}), UsageError);
  EXPECT_THROW(gpt2::Decoder(*model, {.batch = 1, .max_context = config.context + 1}), UsageError);
  EXPECT_THROW(gpt2::Decoder(*model, {.batch = 1, .gemm = gpt2::GemmPath::cublas, .kernel = gpt2::StepKernel::barrier}), UsageError);
  EXPECT_THROW(gpt2::step_kernel_from_string("split"), UsageError);
  gpt2::Decoder decoder(*model, {.batch = 1, .max_context = 4});
  EXPECT_THROW(decoder.set_positions({4}), UsageError);
  EXPECT_THROW(decoder.set_tokens({config.vocab}), UsageError);
  decoder.set_positions({3});
  decoder.step(gpt2::Mode::eager);
  decoder.advance();
  EXPECT_THROW(decoder.step(gpt2::Mode::eager), UsageError);  // the context is full
  EXPECT_THROW(gpt2::Model::random(config, DType::fp16, 1), UsageError);
}

TEST(Gpt2Gpu, BarrierKernelOptionsKeepTheLogitsAndWriteATimeline) {
  RIDGE_REQUIRE_GPU();
  const auto config = gpt2::preset("tiny");
  auto model = gpt2::Model::random(config, DType::bf16, 2);
  const gpt2::DecoderOptions plain{.batch = 1, .max_context = 128, .kernel = gpt2::StepKernel::barrier};
  gpt2::DecoderOptions instrumented = plain;
  instrumented.l2_prefetch = true;
  instrumented.record_timeline = true;
  std::vector<std::vector<float>> logits;
  std::string timeline = (std::filesystem::temp_directory_path() / "ridge_test_gpt2_timeline.json").string();
  for (const auto& o : {plain, instrumented}) {
    gpt2::Decoder decoder(*model, o);
    ASSERT_EQ(decoder.kernel(), gpt2::StepKernel::barrier);
    decoder.fill_random_cache(100, 3);
    decoder.set_tokens({77});
    decoder.step(gpt2::Mode::eager);
    logits.push_back(decoder.logits());
    if (o.record_timeline)
      decoder.write_timeline(timeline);
    else
      EXPECT_THROW(decoder.write_timeline(timeline), UsageError);
  }
  EXPECT_EQ(logits[0], logits[1]) << "the prefetch and the timeline must not change the result";
  std::ifstream in(timeline);
  const auto doc = nlohmann::json::parse(in);
  const int blocks = doc.at("blocks"), phases = doc.at("phases");
  EXPECT_GT(blocks, 0);
  EXPECT_EQ(phases, 5 * config.layers + 1);
  ASSERT_EQ(doc.at("values").size(), std::size_t(blocks) * phases * 4 * 2);
  EXPECT_GT(doc.at("values")[0].get<unsigned long long>(), 0ull) << "block 0 noted the start of phase 0";
  std::filesystem::remove(timeline);
  // Both belong to the barrier kernel: asked of a chain they are an error, not silently ignored.
  EXPECT_THROW(gpt2::Decoder(*model, {.batch = 1, .max_context = 128, .kernel = gpt2::StepKernel::chain,
                                      .record_timeline = true}),
               UsageError);
  EXPECT_THROW(gpt2::Decoder(*model, {.batch = 1, .gemm = gpt2::GemmPath::cublas, .l2_prefetch = true}), UsageError);
}

TEST(Gpt2Gpu, RunDecodeChecksTimesAndPlacesEachConfiguration) {
  RIDGE_REQUIRE_GPU();
  gpt2::DecodeOptions o;
  o.model = "tiny";
  o.batches = {1, 2};
  o.contexts = {64};
  o.samples = 3;
  o.warmup = 1;
  o.bandwidth_bytes_per_s = 4e12;  // no ceilings measurement in a test
  int ready = 0, records = 0;
  gpt2::DecodeCallbacks callbacks;
  callbacks.on_ready = [&](const gpt2::DecodeRun& run) {
    ++ready;
    EXPECT_TRUE(run.configurations.empty()) << "on_ready comes before any timing";
    EXPECT_EQ(run.ceilings.source, CeilingsSource::user);
    EXPECT_EQ(run.ceilings.source_text, "given (bandwidth_bytes_per_s)");
  };
  callbacks.on_record = [&](const Record& r, const gpt2::DecodeConfiguration& point) {
    ++records;
    EXPECT_EQ(r.params.value("batch", 0), point.batch);
  };
  const gpt2::DecodeRun run = gpt2::run_decode(o, callbacks);
  EXPECT_EQ(ready, 1);
  ASSERT_EQ(run.configurations.size(), 2u);
  EXPECT_EQ(run.records.size(), 6u);  // per configuration: eager (events, spin hold) and graph replay
  EXPECT_EQ(records, 6);
  for (const auto& point : run.configurations) {
    EXPECT_TRUE(point.check.passed) << point.check.summary();
    EXPECT_GT(point.ceiling_tokens_per_s, 0);
    EXPECT_TRUE(point.graph_speedup().has_value());
  }
  for (const auto& r : run.records) {
    EXPECT_EQ(r.name, "decode");
    EXPECT_EQ(r.verification, "passed");
    EXPECT_GT(r.extra.value("tokens_per_s", 0.0), 0);
    EXPECT_DOUBLE_EQ(r.extra.value("bandwidth_bytes_per_s", 0.0), 4e12);
  }
  EXPECT_FALSE(gpt2::decode_roofline_plot(run).series.empty());
}

// The report's profile: with one persistent kernel per step, the traced step used to be launched
// behind three un-synchronized warm-up steps, and its "launch latency" was their run time (~950 us
// for a ~320 us kernel). Run in a process of its own (ctest does): the tracer must route NVTX first.
TEST(Gpt2Gpu, TheProfiledStepIsLaunchedOnAnIdleGpu) {
  RIDGE_REQUIRE_GPU();
  gpt2::ProfileOptions o;
  o.kernel = gpt2::StepKernel::barrier;
  const auto folder = std::filesystem::temp_directory_path() / fmt::format("ridge-profile-{}", ::getpid());
  std::filesystem::create_directories(folder);
  o.trace_path = (folder / "trace.json").string();
  const gpt2::ProfileRun run = gpt2::run_profile(o);
  ASSERT_EQ(run.profiles.size(), 2u);
  for (const auto& p : run.profiles) {
    const trace::Analysis& a = p.analysis;
    ASSERT_EQ(a.kernel_count, 1u) << to_string(p.mode);
    ASSERT_EQ(a.launch_latency_count, 1u) << to_string(p.mode);
    EXPECT_LT(a.launch_latency_median_ns, 0.5 * static_cast<double>(a.kernel_span_ns)) << to_string(p.mode);
    EXPECT_EQ(a.launches_not_split, 1u) << "the step window cut out whatever ran before: not split";
    EXPECT_EQ(trace::launch_split_text(a).rfind("not split (latency ", 0), 0u) << trace::launch_split_text(a);
  }
  // One traced step per mode: shown by compare, never judged (one sample cannot reach significance).
  ASSERT_EQ(run.records.size(), 2u);
  for (const auto& r : run.records) {
    ASSERT_TRUE(r.gate);
    EXPECT_TRUE(r.gate->informational);
  }
  std::filesystem::remove_all(folder);
}
