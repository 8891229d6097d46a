// Interleaved sampling: several timing methods take their samples in turns, so that a clock or
// power change during the run hits all of them alike. CPU code; the methods bring the GPU.
#include <algorithm>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/measure.hpp"

namespace ridge {

void InterleaveOptions::validate() const {
  if (samples < 1) throw UsageError(fmt::format("samples must be >= 1, got {}", samples));
  if (warmup < 0) throw UsageError(fmt::format("warmup must be >= 0, got {}", warmup));
  if (block < 1) throw UsageError(fmt::format("block must be >= 1, got {}", block));
}

std::vector<std::pair<int, int>> interleaved_turns(int methods, int samples, int block) {
  std::vector<std::pair<int, int>> turns;
  if (methods < 1 || samples < 1 || block < 1) return turns;
  for (int taken = 0, round = 0; taken < samples; taken += block, ++round) {
    const int count = std::min(block, samples - taken);
    for (int i = 0; i < methods; ++i) turns.emplace_back((round + i) % methods, count);
  }
  return turns;
}

std::vector<Measurement> measure_interleaved(const std::vector<InterleavedMethod>& methods,
                                             const InterleaveOptions& o) {
  o.validate();
  if (methods.empty()) throw UsageError("measure_interleaved needs at least one method");
  auto read_clock = [&]() -> double {
    const double mhz = o.read_sm_mhz ? o.read_sm_mhz() : -1;
    return mhz > 0 ? mhz : -1;
  };
  std::vector<Measurement> out(methods.size());
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const Measurement warm = methods[i].measure(1, o.warmup);  // warm-up, its one sample discarded
    out[i].method = warm.method;
    out[i].repeats_per_sample = warm.repeats_per_sample;
    out[i].l2_flushed = warm.l2_flushed;
  }
  bool clocks_known = true;
  double before = read_clock();
  for (const auto& [index, count] : interleaved_turns(static_cast<int>(methods.size()), o.samples, o.block)) {
    const Measurement block = methods[index].measure(count, 0);
    const double after = read_clock();
    Measurement& m = out[index];
    if (block.repeats_per_sample != m.repeats_per_sample)
      throw Error(fmt::format("measure_interleaved: method '{}' changed its calls per sample from {} to {} between "
                              "turns; give it a fixed repeat count",
                              methods[index].name, m.repeats_per_sample, block.repeats_per_sample));
    m.samples_ms.insert(m.samples_ms.end(), block.samples_ms.begin(), block.samples_ms.end());
    clocks_known = clocks_known && before > 0 && after > 0;
    m.sample_sm_mhz.insert(m.sample_sm_mhz.end(), block.samples_ms.size(), std::min(before, after));
    before = after;
  }
  for (auto& m : out) {
    if (!clocks_known) m.sample_sm_mhz.clear();  // all or nothing: a partial trace would mislead
    m.summary = summarize(m.samples_ms);
    m.stop_reason = "samples";
  }
  return out;
}

}  // namespace ridge
