#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/gpt2/config.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/roofline.hpp"
#include "ridge/gpt2/safetensors.hpp"

using namespace ridge;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ridge_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

}  // namespace

TEST(Gpt2Config, PresetParameterCountsMatchHuggingFace) {
  // model.num_parameters() of Hugging Face's gpt2, gpt2-medium, gpt2-large, gpt2-xl (wte tied).
  EXPECT_EQ(gpt2::parameter_count(gpt2::preset("small")), 124439808);
  EXPECT_EQ(gpt2::parameter_count(gpt2::preset("medium")), 354823168);
  EXPECT_EQ(gpt2::parameter_count(gpt2::preset("large")), 774030080);
  EXPECT_EQ(gpt2::parameter_count(gpt2::preset("xl")), 1557611200);
}

TEST(Gpt2Config, ValidationNamesTheProblem) {
  auto c = gpt2::preset("tiny");
  c.heads = 3;
  EXPECT_THROW(c.validate(), UsageError);
  c = gpt2::preset("tiny");
  c.heads = 4;  // head size 32
  try {
    c.validate();
    FAIL() << "head size 32 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos);
  }
  EXPECT_THROW(gpt2::preset("huge"), UsageError);
}

TEST(Gpt2Config, StepCostIntensityFollowsBatch) {
  // bf16 weights: two FLOPs per two-byte weight, so intensity ~ batch while weights dominate.
  const auto c = gpt2::preset("small");
  const auto one = gpt2::step_cost(c, 2, 2, 1, 0);
  EXPECT_NEAR(one.intensity(), 1.0, 0.05);
  const auto eight = gpt2::step_cost(c, 2, 2, 8, 0);
  EXPECT_NEAR(eight.intensity(), 8.0, 0.5);
  // Weight bytes: the matrices plus wte (read by the LM head), ~ (124.4M - wpe 0.79M) * 2 bytes.
  EXPECT_NEAR(one.weight_bytes / 1e6, (124439808.0 - 1024 * 768) * 2 / 1e6, 1.0);
  // KV cache at 1024 tokens: 2 (K, V) * 12 layers * 1024 * 768 * 2 bytes = 37.7 MB per sequence.
  const auto long_context = gpt2::step_cost(c, 2, 2, 1, 1023);
  EXPECT_NEAR(long_context.kv_bytes_per_sequence, 2.0 * 12 * 1023 * 768 * 2, 1.0);
  // The decode ceiling uses these bytes: a batch of 8 is less than 8x faster per token than 1 once
  // KV bytes count.
  const double bw = 4e12;
  const double t1 = decode_ceiling(one.weight_bytes, bw, 1, long_context.kv_bytes_per_sequence);
  const double t8 = decode_ceiling(one.weight_bytes, bw, 8, long_context.kv_bytes_per_sequence);
  EXPECT_GT(t8, t1);
  EXPECT_LT(t8, 8 * t1);
  EXPECT_THROW(gpt2::step_cost(c, 2, 2, 0, 10), UsageError);
  EXPECT_THROW(gpt2::step_cost(c, 2, 2, 1, 1024), UsageError);
}

TEST(Gpt2Config, InitHashIsUniformAndNeverAllZero) {
  double sum = 0, sum_sq = 0;
  int zeros = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = gpt2::uniform(gpt2::tensor_seed(7, 3), i);
    ASSERT_GE(u, -1.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum_sq += u * u;
    zeros += u == 0.0f;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0 / 3.0, 0.01);  // variance of U(-1, 1)
  EXPECT_LT(zeros, 5);
}

TEST(Gpt2Config, RoundToBf16) {
  EXPECT_EQ(gpt2::round_to_bf16(1.0f), 1.0f);
  // bf16 keeps 7 mantissa bits: the spacing at 1 is 1/128.
  EXPECT_EQ(gpt2::round_to_bf16(1.0f + 1.0f / 256), 1.0f);                     // a tie: to even (down)
  EXPECT_EQ(gpt2::round_to_bf16(1.0f + 3.0f / 256), 1.0f + 1.0f / 64);         // a tie: to even (up)
  EXPECT_EQ(gpt2::round_to_bf16(1.0f + 1.0f / 128 + 1.0f / 1024), 1.0f + 1.0f / 128);  // below half: down
  EXPECT_NEAR(gpt2::round_to_bf16(0.1f), 0.1f, 0.1f / 256);
  EXPECT_TRUE(std::isnan(gpt2::round_to_bf16(std::nanf(""))));
}

TEST(Gpt2Reference, SoftmaxRowsSumToOneAndKeepOrder) {
  std::vector<float> v{1.0f, 3.0f, -2.0f, 1000.0f, 999.0f};
  gpt2::softmax(v);
  EXPECT_NEAR(std::accumulate(v.begin(), v.end(), 0.0), 1.0, 1e-6);
  EXPECT_GT(v[3], v[4]);
  EXPECT_NEAR(v[3] / v[4], std::exp(1.0), 1e-3);  // large logits: no overflow
  EXPECT_EQ(gpt2::argmax(v), 3);
}

TEST(Gpt2Reference, LayerNormGivesMeanZeroVarianceOne) {
  std::vector<float> x(257), gamma(257, 1.0f), beta(257, 0.0f), out(257);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i) * 5 + 3);
  gpt2::layer_norm(x, gamma, beta, 1e-5f, out);
  double mean = 0, var = 0;
  for (float v : out) mean += v;
  mean /= out.size();
  for (float v : out) var += (v - mean) * (v - mean);
  var /= out.size();
  EXPECT_NEAR(mean, 0.0, 1e-5);
  EXPECT_NEAR(var, 1.0, 1e-3);
  // gamma and beta scale and shift.
  std::vector<float> g(257, 2.0f), b(257, 0.5f), out2(257);
  gpt2::layer_norm(x, g, b, 1e-5f, out2);
  EXPECT_NEAR(out2[10], 2 * out[10] + 0.5f, 1e-5);
}

TEST(Gpt2Reference, GeluTanh) {
  EXPECT_EQ(gpt2::gelu_tanh(0.0f), 0.0f);
  EXPECT_NEAR(gpt2::gelu_tanh(1.0f), 0.841192, 1e-5);   // tanh form (erf form gives 0.841345)
  EXPECT_NEAR(gpt2::gelu_tanh(-1.0f), -0.158808, 1e-5);
  for (float x : {0.3f, 1.7f, 4.0f}) EXPECT_NEAR(gpt2::gelu_tanh(x) - gpt2::gelu_tanh(-x), x, 1e-5);  // odd part is x/2
  EXPECT_NEAR(gpt2::gelu_tanh(10.0f), 10.0f, 1e-5);
}

TEST(Gpt2Reference, RandomWeightsAreDeterministicScaledAndNonZero) {
  const auto c = gpt2::preset("tiny");
  const auto a = gpt2::random_weights(c, 42);
  const auto b = gpt2::random_weights(c, 42);
  const auto other = gpt2::random_weights(c, 43);
  EXPECT_EQ(a.tensors, b.tensors);
  EXPECT_NE(a.tensors, other.tensors);
  const auto& w = a.get("h.0.mlp.c_fc.weight");
  double sq = 0;
  for (float v : w) sq += v * v;
  EXPECT_NEAR(std::sqrt(sq / w.size()), 0.02, 0.002);  // GPT-2's init std
  const auto& gamma = a.get("ln_f.weight");
  for (float g : gamma) {
    EXPECT_GT(g, 0.89f);
    EXPECT_LT(g, 1.11f);
  }
  for (const auto& t : a.tensors) EXPECT_TRUE(std::any_of(t.begin(), t.end(), [](float v) { return v != 0.0f; }));
}

TEST(Gpt2Reference, CachedStepsEqualFullRecompute) {
  const auto c = gpt2::preset("tiny");
  const auto w = gpt2::random_weights(c, 5);
  const std::vector<int> tokens{3, 141, 59, 265, 35, 89, 7};
  gpt2::Sequence seq(c);
  std::vector<float> logits;
  for (int t : tokens) logits = gpt2::reference_step(w, seq, t);
  EXPECT_EQ(seq.length, static_cast<int>(tokens.size()));
  const auto full = gpt2::reference_forward(w, tokens);
  EXPECT_LT(gpt2::relative_l2_error(logits, full), 1e-6);
  // And the logits depend on the history: a different first token changes them.
  auto changed = tokens;
  changed[0] = 4;
  EXPECT_GT(gpt2::relative_l2_error(gpt2::reference_forward(w, changed), full), 1e-6);
}

TEST(Gpt2Reference, StepRejectsBadTokensAndFullContext) {
  const auto c = gpt2::preset("tiny");
  const auto w = gpt2::random_weights(c, 1);
  gpt2::Sequence seq(c);
  EXPECT_THROW(gpt2::reference_step(w, seq, c.vocab), UsageError);
  EXPECT_THROW(gpt2::reference_step(w, seq, -1), UsageError);
  gpt2::fill_random_cache(c, 9, 0, c.context - 1, false, seq);
  EXPECT_NO_THROW(gpt2::reference_step(w, seq, 1));
  EXPECT_THROW(gpt2::reference_step(w, seq, 1), UsageError);
}

TEST(Gpt2Reference, RandomCacheIsPerSequenceAndRoundsForBf16) {
  const auto c = gpt2::preset("tiny");
  gpt2::Sequence a(c), b(c), a16(c);
  gpt2::fill_random_cache(c, 3, 0, 10, false, a);
  gpt2::fill_random_cache(c, 3, 1, 10, false, b);
  gpt2::fill_random_cache(c, 3, 0, 10, true, a16);
  EXPECT_NE(a.k[0], b.k[0]);
  EXPECT_NE(a.k[0], a.v[0]);
  for (std::size_t i = 0; i < a.k[1].size(); ++i) EXPECT_EQ(a16.k[1][i], gpt2::round_to_bf16(a.k[1][i]));
}

TEST(Gpt2Reference, RelativeError) {
  std::vector<float> b{3, 4}, a{3, 4.5};
  EXPECT_NEAR(gpt2::relative_l2_error(a, b), 0.1, 1e-9);
  EXPECT_EQ(gpt2::relative_l2_error(b, b), 0.0);
  std::vector<float> nan{NAN, 1};
  EXPECT_TRUE(std::isinf(gpt2::relative_l2_error(nan, b)));
}

TEST(Safetensors, RoundTripAllDtypes) {
  const std::string path = temp_path("roundtrip.safetensors");
  std::vector<gpt2::SafetensorsTensor> t{
      {"a", "F32", {2, 3}, {1, -2, 3.5f, 4, 5, 6}, {}},
      {"b", "BF16", {3}, {1.0f, 0.1f, -300.0f}, {}},
      {"c", "I32", {2}, {}, {7, -9}},
  };
  gpt2::write_safetensors(path, t, {{"k", "v"}});
  gpt2::SafetensorsFile f(path);
  EXPECT_EQ(f.names().size(), 3u);
  EXPECT_EQ(f.metadata().at("k"), "v");
  EXPECT_EQ(f.read_floats("a"), t[0].floats);
  const auto b = f.read_floats("b");
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], gpt2::round_to_bf16(0.1f));
  EXPECT_EQ(b[2], gpt2::round_to_bf16(-300.0f));
  EXPECT_EQ(f.read_ints("c"), (std::vector<int>{7, -9}));
  EXPECT_EQ(f.entry("a").shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_THROW(f.read_floats("c"), UsageError);  // wrong dtype, named
  EXPECT_THROW(f.read_ints("a"), UsageError);
  std::filesystem::remove(path);
}

TEST(Safetensors, ReadsF16) {
  // Hand-built file: one F16 tensor [2] = {1.0, -2.5} (0x3c00, 0xc100).
  const std::string path = temp_path("f16.safetensors");
  std::string header = R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  const unsigned char data[4] = {0x00, 0x3c, 0x00, 0xc1};
  out.write(reinterpret_cast<const char*>(data), 4);
  out.close();
  gpt2::SafetensorsFile f(path);
  EXPECT_EQ(f.read_floats("h"), (std::vector<float>{1.0f, -2.5f}));
  std::filesystem::remove(path);
}

TEST(Safetensors, ErrorsNameTheProblem) {
  const std::string path = temp_path("bad.safetensors");
  auto expect_error = [&](const std::string& fragment) {
    try {
      gpt2::SafetensorsFile f(path);
      FAIL() << "no error, expected one mentioning '" << fragment << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  EXPECT_THROW(gpt2::SafetensorsFile(temp_path("missing.safetensors")), UsageError);
  // Truncated: write a valid file, then cut its data short.
  gpt2::write_safetensors(path, {{"big", "F32", {1000}, std::vector<float>(1000, 1.0f), {}}});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  expect_error("truncated");
  expect_error("big");
  // Header that is not JSON.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string header = "{not json";
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  expect_error("JSON");
  // Offsets that disagree with the shape.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string header = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})";
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header << std::string(8, '\0');
  }
  expect_error("'w'");
  std::filesystem::remove(path);
}

TEST(Gpt2Weights, SafetensorsRoundTripWithPrefixAndClearErrors) {
  const auto c = gpt2::preset("tiny");
  const auto w = gpt2::random_weights(c, 11);
  const std::string path = temp_path("tiny.safetensors");
  gpt2::save_safetensors(w, path);
  const auto loaded = gpt2::load_safetensors(path);
  EXPECT_EQ(loaded.config.layers, c.layers);
  EXPECT_EQ(loaded.config.heads, c.heads);
  EXPECT_EQ(loaded.config.width, c.width);
  EXPECT_EQ(loaded.config.vocab, c.vocab);
  EXPECT_EQ(loaded.config.context, c.context);
  EXPECT_EQ(loaded.tensors, w.tensors);

  // The Hugging Face layout: "transformer." prefix, an extra lm_head.weight, BF16 storage.
  const auto specs = gpt2::tensor_specs(c);
  std::vector<gpt2::SafetensorsTensor> hf;
  for (std::size_t i = 0; i < specs.size(); ++i)
    hf.push_back({"transformer." + specs[i].name, "BF16", specs[i].shape, w.tensors[i], {}});
  hf.push_back({"lm_head.weight", "BF16", specs[0].shape, w.tensors[0], {}});
  gpt2::write_safetensors(path, hf);
  const auto from_hf = gpt2::load_safetensors(path);
  EXPECT_EQ(from_hf.get("h.1.mlp.c_fc.weight")[5], gpt2::round_to_bf16(w.get("h.1.mlp.c_fc.weight")[5]));

  auto expect_error = [&](std::vector<gpt2::SafetensorsTensor> tensors, const std::string& fragment) {
    gpt2::write_safetensors(path, tensors);
    try {
      gpt2::load_safetensors(path);
      FAIL() << "no error, expected one mentioning '" << fragment << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  // Missing tensor.
  auto missing = hf;
  missing.erase(missing.begin() + 5);
  expect_error(missing, "transformer." + specs[5].name);
  // Transposed Conv1D weight (the nn.Linear layout).
  auto transposed = hf;
  for (auto& t : transposed)
    if (t.name == "transformer.h.1.attn.c_attn.weight") std::swap(t.shape[0], t.shape[1]);
  expect_error(transposed, "looks transposed");
  // Wrong dtype.
  auto ints = hf;
  for (auto& t : ints)
    if (t.name == "transformer.ln_f.bias") {
      t.dtype = "I32";
      t.ints.assign(t.floats.size(), 1);
    }
  expect_error(ints, "transformer.ln_f.bias");
  std::filesystem::remove(path);
}
