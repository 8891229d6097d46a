// The decode step's checks: comparisons and verdicts (CPU). The GPU runs are in cuda/checks.cpp.
#include "ridge/gpt2/checks.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/errors.hpp"
#include "ridge/gpt2/safetensors.hpp"

namespace ridge::gpt2 {

double logits_tolerance(DType dtype) { return dtype == DType::fp32 ? 1e-4 : 2e-2; }

std::vector<float> logits_row(std::span<const float> all, int b, int vocab) {
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(b) * vocab;
  return {begin, begin + vocab};
}

LogitsComparison compare_logits(std::span<const float> got, std::span<const float> expected, int vocab,
                                double tolerance) {
  if (vocab < 1 || got.size() != expected.size() || got.size() % static_cast<std::size_t>(vocab) != 0)
    throw UsageError(fmt::format("cannot compare {} logits with {} for a vocabulary of {}", got.size(),
                                 expected.size(), vocab));
  LogitsComparison c;
  c.sequences = static_cast<int>(got.size() / static_cast<std::size_t>(vocab));
  c.tolerance = tolerance;
  c.relative_l2_error = relative_l2_error(got, expected);
  for (int b = 0; b < c.sequences; ++b) {
    const auto g = logits_row(got, b, vocab), e = logits_row(expected, b, vocab);
    c.argmax_agree += argmax(g) == argmax(e);
    for (int v = 0; v < vocab; ++v) c.max_abs_error = std::max(c.max_abs_error, std::abs(double(g[v]) - e[v]));
  }
  c.passed = c.relative_l2_error <= tolerance;
  return c;
}

std::string StepCheck::summary() const {
  return fmt::format("{}: logits vs CPU reference (sequences {}) rel. L2 error {:.2e} (tolerance {:.0e}); "
                     "graph vs eager {:.1e}",
                     passed ? "passed" : "FAILED", fmt::join(sequences, ","), worst_error, tolerance, graph_vs_eager);
}

StepCheck step_check_verdict(std::vector<int> sequences, double worst_error, double graph_vs_eager, DType dtype) {
  StepCheck check;
  check.sequences = std::move(sequences);
  check.worst_error = worst_error;
  check.tolerance = logits_tolerance(dtype);
  check.graph_vs_eager = graph_vs_eager;
  check.passed = worst_error <= check.tolerance && graph_vs_eager <= graph_vs_eager_tolerance;
  return check;
}

std::vector<int> step_check_sequences(int batch) { return batch > 1 ? std::vector<int>{0, batch - 1} : std::vector<int>{0}; }

std::vector<int> step_check_tokens(int batch, int vocab) {
  std::vector<int> tokens(batch);
  for (int b = 0; b < batch; ++b) tokens[b] = (b * 7919 + 13) % vocab;
  return tokens;
}

ReferenceWeights::ReferenceWeights(const Config& config, DType dtype, std::uint64_t seed, std::optional<Weights> loaded)
    : config_(config), dtype_(dtype), seed_(seed), weights_(std::move(loaded)) {
  if (weights_ && dtype_ == DType::bf16) round_matrices_to_bf16(*weights_);
}

const Weights& ReferenceWeights::get(const std::function<void()>& on_generate) {
  if (!weights_) {
    if (on_generate) on_generate();
    weights_ = random_weights(config_, seed_);
    if (dtype_ == DType::bf16) round_matrices_to_bf16(*weights_);
  }
  return *weights_;
}

namespace {

ReferenceLogits check_reference_header(const SafetensorsFile& file, const Config& config) {
  const std::string& path = file.path();
  const auto& tokens_entry = file.entry("tokens");
  if (tokens_entry.shape.size() != 2 || tokens_entry.shape[0] < 1 || tokens_entry.shape[1] < 1)
    throw UsageError(fmt::format("'{}': tensor 'tokens' has shape {}; expected [batch, length]", path,
                                 shape_string(tokens_entry.shape)));
  if (tokens_entry.dtype != "I32" && tokens_entry.dtype != "I64")
    throw UsageError(fmt::format("'{}': tensor 'tokens' has dtype {}; expected I32 or I64", path, tokens_entry.dtype));
  if (tokens_entry.shape[0] > (1 << 20))
    throw UsageError(fmt::format("'{}': tensor 'tokens' has shape {}; a batch of at most 2^20 sequences is supported",
                                 path, shape_string(tokens_entry.shape)));
  if (tokens_entry.shape[1] > config.context)
    throw UsageError(fmt::format("'{}': {} tokens exceed the model's context of {}", path, tokens_entry.shape[1],
                                 config.context));
  ReferenceLogits r;
  r.path = path;
  r.batch = static_cast<int>(tokens_entry.shape[0]);
  r.length = static_cast<int>(tokens_entry.shape[1]);
  const auto& logits_entry = file.entry("logits");
  if (logits_entry.shape != std::vector<std::int64_t>{r.batch, config.vocab})
    throw UsageError(fmt::format("'{}': tensor 'logits' has shape {}; expected [{}, {}]", path,
                                 shape_string(logits_entry.shape), r.batch, config.vocab));
  if (logits_entry.dtype != "F32" && logits_entry.dtype != "BF16" && logits_entry.dtype != "F16" &&
      logits_entry.dtype != "F64")
    throw UsageError(fmt::format("'{}': tensor 'logits' has dtype {}; expected a floating-point dtype", path,
                                 logits_entry.dtype));
  r.kind = file.metadata().count("reference") ? file.metadata().at("reference") : "reference";
  return r;
}

}  // namespace

ReferenceLogits check_reference_logits_file(const std::string& path, const Config& config) {
  return check_reference_header(SafetensorsFile(path), config);
}

ReferenceLogits read_reference_logits(const std::string& path, const Config& config) {
  SafetensorsFile file(path);
  ReferenceLogits r = check_reference_header(file, config);
  r.tokens = file.read_ints("tokens");
  r.logits = file.read_floats("logits");
  if (file.contains("logits_bf16")) r.logits_bf16 = file.read_floats("logits_bf16");
  return r;
}

ReferenceLogitsCheck judge_reference_logits(const ReferenceLogits& reference, std::span<const float> got, int vocab,
                                            DType dtype) {
  ReferenceLogitsCheck check;
  check.path = reference.path;
  check.kind = reference.kind;
  check.batch = reference.batch;
  check.length = reference.length;
  check.comparison = compare_logits(got, reference.logits, vocab, logits_tolerance(dtype));
  if (reference.logits_bf16) check.error_vs_reference_bf16 = relative_l2_error(got, *reference.logits_bf16);
  return check;
}

Record to_record(const ReferenceLogitsCheck& check, DType dtype) {
  Record r;
  r.name = "decode.check_logits";
  r.method = Method::none;
  r.dtype = dtype;
  r.params = {{param_key::batch, check.batch},
              {param_key::context, check.length},
              {param_key::reference_file, check.path},
              {param_key::reference, check.kind}};
  r.samples_ms = {0.0};
  finalize(r);
  r.verification = check.comparison.passed ? "passed" : "failed";
  extra_key::relative_l2_error.set(r, check.comparison.relative_l2_error);
  extra_key::tolerance.set(r, check.comparison.tolerance);
  extra_key::max_abs_error.set(r, check.comparison.max_abs_error);
  extra_key::argmax_agree.set(r, check.comparison.argmax_agree);
  if (check.error_vs_reference_bf16)
    extra_key::relative_l2_error_vs_reference_bf16.set(r, *check.error_vs_reference_bf16);
  return r;
}

}  // namespace ridge::gpt2
