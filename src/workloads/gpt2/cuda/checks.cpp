// The decode step's checks, GPU side: run the decoder, hand its logits to the CPU comparisons.
#include "ridge/gpt2/checks.hpp"

#include <algorithm>

#include "ridge/gpt2/model.hpp"

namespace ridge::gpt2 {

StepCheck check_step(Decoder& decoder, ReferenceWeights& reference, DType dtype, int cached, std::uint64_t seed,
                     const std::function<void()>& on_generate_reference) {
  const auto& config = reference.get(on_generate_reference).config;
  const int batch = decoder.options().batch;
  decoder.fill_random_cache(cached, seed);
  decoder.step(Mode::eager);
  const auto eager = decoder.logits();
  decoder.step(Mode::graph);  // rewrites the same cache slot with the same values
  const auto graph = decoder.logits();
  const double graph_vs_eager = relative_l2_error(graph, eager);
  // Which token each sequence was given: fill_random_cache chose them; reading them back by
  // replaying its rule is fragile, so recompute the reference with the tokens set explicitly.
  const std::vector<int> tokens = step_check_tokens(batch, config.vocab);
  decoder.set_tokens(tokens);
  decoder.step(Mode::eager);
  const auto logits = decoder.logits();
  std::vector<int> sequences = step_check_sequences(batch);
  double worst_error = 0;
  for (int b : sequences) {
    Sequence seq(config);
    fill_random_cache(config, seed, b, cached, dtype == DType::bf16, seq);
    const auto expected = reference_step(reference.get(), seq, tokens[b]);
    worst_error = std::max(worst_error, relative_l2_error(logits_row(logits, b, config.vocab), expected));
  }
  return step_check_verdict(std::move(sequences), worst_error, graph_vs_eager, dtype);
}

ReferenceLogitsCheck check_reference_logits(const Model& model, const ReferenceLogits& reference,
                                            const std::function<void(int, int)>& on_progress) {
  const int batch = reference.batch, length = reference.length;
  Decoder decoder(model, {.batch = batch, .max_context = length});
  for (int t = 0; t < length; ++t) {
    if (on_progress && t % 64 == 0) on_progress(t, length);
    std::vector<int> column(batch);
    for (int b = 0; b < batch; ++b) column[b] = reference.tokens[static_cast<std::size_t>(b) * length + t];
    decoder.set_tokens(column);
    decoder.set_positions(std::vector<int>(batch, t));
    decoder.step(Mode::graph);
  }
  return judge_reference_logits(reference, decoder.logits(), model.config().vocab, model.dtype());
}

}  // namespace ridge::gpt2
