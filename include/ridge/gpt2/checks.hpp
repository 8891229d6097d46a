#pragma once
// The decode step's correctness checks: the GPU's logits against the CPU reference (or a
// reference file exported from another implementation), graph replay against eager launches,
// greedy-token agreement. The comparisons and verdicts are CPU code (unit-tested anywhere); the
// functions that run a Decoder to get the logits are in the CUDA part (marked below).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ridge/dtype.hpp"
#include "ridge/gpt2/config.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/result.hpp"

namespace ridge::gpt2 {

class Decoder;
class Model;

/// Relative L2 error the GPU's logits may have against a reference: 1e-4 for fp32 weights,
/// 2e-2 for bf16 (the reference holds the same bf16-rounded weights; the GPU rounds activations).
double logits_tolerance(DType dtype);
/// Relative L2 difference allowed between a graph replay's logits and the eager step's (they run
/// the same kernels on the same inputs).
inline constexpr double graph_vs_eager_tolerance = 1e-5;

/// Row `b` of logits laid out [batch][vocab].
std::vector<float> logits_row(std::span<const float> all, int b, int vocab);

/// A batch's logits [batch][vocab] compared with expected logits of the same shape.
struct LogitsComparison {
  int sequences = 0;
  double relative_l2_error = 0;  ///< ||got - expected||_2 / ||expected||_2 over the whole batch
  double max_abs_error = 0;      ///< largest |got - expected| of any logit
  int argmax_agree = 0;          ///< sequences whose greedy (argmax) token is the same
  double tolerance = 0;          ///< the bound on relative_l2_error
  bool passed = false;           ///< relative_l2_error <= tolerance (NaN fails)
};
/// Compares two [batch][vocab] logit arrays. Throws UsageError when their sizes differ or are not
/// a multiple of `vocab`.
LogitsComparison compare_logits(std::span<const float> got, std::span<const float> expected, int vocab,
                                double tolerance);

/// The check run before a decode configuration is timed: one eager step at a random cache against
/// the CPU reference for the first and last sequence, and a graph replay against the eager step.
struct StepCheck {
  std::vector<int> sequences;      ///< which sequences were compared with the reference
  double worst_error = 0;          ///< largest relative L2 error of those sequences' logits
  double tolerance = 0;            ///< logits_tolerance(dtype)
  double graph_vs_eager = 0;       ///< relative L2 difference of the graph's logits from eager's
  bool passed = false;
  /// "passed: logits vs CPU reference (sequences 0,7) rel. L2 error 1.2e-03 (tolerance 2e-02);
  /// graph vs eager 0.0e+00" (or "FAILED: ...").
  std::string summary() const;
};
/// The verdict from the measured errors: passed when worst_error <= logits_tolerance(dtype) and
/// graph_vs_eager <= graph_vs_eager_tolerance (NaN fails).
StepCheck step_check_verdict(std::vector<int> sequences, double worst_error, double graph_vs_eager, DType dtype);
/// The sequences a step check compares with the reference: {0} for batch 1, else {0, batch - 1}.
std::vector<int> step_check_sequences(int batch);
/// The input token of each sequence in a step check, spread over the vocabulary.
std::vector<int> step_check_tokens(int batch, int vocab);

/// The CPU reference's weights for a GPU model: the loaded weights, or the random weights of
/// `seed` generated on first use (6 GB of floats for xl, so only when a check needs them), rounded
/// to bf16 for a bf16 model.
class ReferenceWeights {
 public:
  ReferenceWeights(const Config& config, DType dtype, std::uint64_t seed, std::optional<Weights> loaded = std::nullopt);
  /// `on_generate` is called before random weights are generated (it takes seconds for xl).
  const Weights& get(const std::function<void()>& on_generate = {});

 private:
  Config config_;
  DType dtype_;
  std::uint64_t seed_;
  std::optional<Weights> weights_;
};

/// A reference file for the logits check (bench/gpt2_export.py writes one): a prompt of `tokens`
/// [batch, length] and the reference implementation's `logits` [batch, vocab] after its last token.
struct ReferenceLogits {
  std::string path;
  std::string kind;  ///< the file's "reference" metadata (e.g. "transformers fp32"), else "reference"
  int batch = 0, length = 0;
  std::vector<int> tokens;     ///< [batch][length]
  std::vector<float> logits;   ///< [batch][vocab]
  std::optional<std::vector<float>> logits_bf16;  ///< the same reference run in bf16, when present
};
/// Checks a reference file against `config` from its header alone (no tensor data read, no GPU):
/// 'tokens' [batch, length] of an integer dtype, 'logits' [batch, vocab] of a float dtype, a prompt
/// within the context. Returns the file's ReferenceLogits with its path, batch, length and kind
/// filled (no tokens or logits). Throws UsageError naming the file, the tensor and what is wrong.
ReferenceLogits check_reference_logits_file(const std::string& path, const Config& config);
/// Reads and checks a reference file against `config` (see check_reference_logits_file). Throws UsageError when a tensor is missing
/// or has the wrong shape, or the prompt is longer than the model's context.
ReferenceLogits read_reference_logits(const std::string& path, const Config& config);

/// The outcome of the reference-file check (`ridge decode --check-logits`).
struct ReferenceLogitsCheck {
  std::string path, kind;
  int batch = 0, length = 0;  ///< sequences and prompt tokens (length - 1 cached before the last step)
  LogitsComparison comparison;
  std::optional<double> error_vs_reference_bf16;  ///< relative L2 error against the bf16 reference run
};
/// The comparison of the GPU's final logits with the reference file's.
ReferenceLogitsCheck judge_reference_logits(const ReferenceLogits& reference, std::span<const float> got,
                                            int vocab, DType dtype);
/// The record of the check: name "decode.check_logits", method "none", verification passed/failed,
/// extra: relative_l2_error, tolerance, max_abs_error, argmax_agree (and the bf16 error if any).
Record to_record(const ReferenceLogitsCheck& check, DType dtype);

// ---- CUDA part (ridge_gpt2): runs the decoder to get the logits it compares -------------------

/// The step check of StepCheck on `decoder` with `cached` tokens of random cache (from `seed`).
/// Leaves the decoder's cache refilled with the check's tokens; call fill_random_cache before timing.
StepCheck check_step(Decoder& decoder, ReferenceWeights& reference, DType dtype, int cached, std::uint64_t seed,
                     const std::function<void()>& on_generate_reference = {});

/// Prefills the reference file's prompt one graph step at a time and compares the last step's
/// logits with the file's. `on_progress(token, length)` is called every 64 tokens.
ReferenceLogitsCheck check_reference_logits(const Model& model, const ReferenceLogits& reference,
                                            const std::function<void(int, int)>& on_progress = {});

}  // namespace ridge::gpt2
