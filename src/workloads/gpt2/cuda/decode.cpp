// `ridge decode` as a library call, GPU part: build the model, check each configuration against
// the CPU reference, time it three ways, and place it against decode_ceiling.
#include "ridge/gpt2/decode.hpp"

#include <filesystem>
#include <memory>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/measure.hpp"
#include "ridge/roofline.hpp"

namespace ridge::gpt2 {

DeviceCeilings decode_ceilings(int device, double bandwidth_bytes_per_s) {
  if (bandwidth_bytes_per_s > 0) {
    DeviceCeilings given;
    given.source = CeilingsSource::user;
    given.source_text = "given (bandwidth_bytes_per_s)";
    given.memory_bytes_per_s = bandwidth_bytes_per_s;
    return given;
  }
  const MeasuredCeilings c = measured_ceilings(device);
  if (!(c.ceilings.memory_bytes_per_s > 0))
    throw Error("the measured HBM bandwidth is missing or zero; give bandwidth_bytes_per_s");
  DeviceCeilings measured = c.ceilings;
  // Decode is bound by the HBM bandwidth: name the kernel that reached it (records keep this text).
  measured.source_text = fmt::format("measured ({})", c.hbm_kernel.empty() ? "ceilings" : c.hbm_kernel);
  return measured;
}

namespace {

void report(const DecodeCallbacks& callbacks, const std::string& line) {
  if (callbacks.on_progress) callbacks.on_progress(line);
}

// Steps run on a stream of their own (as an engine's would), not the legacy default stream.
struct OwnedStream {
  cudaStream_t s = nullptr;
  OwnedStream() { RIDGE_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~OwnedStream() {
    if (s) cudaStreamDestroy(s);
  }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
};

// Everything one configuration's timing shares.
struct Sweep {
  const DecodeOptions& options;
  const DecodeCallbacks& callbacks;
  const Model& model;
  ReferenceWeights& reference;
  DecodeRun& run;
  double l2_bytes = 0;
  cudaStream_t stream = nullptr;
};

// The timings of one configuration: eager with per-step events and held by a spin kernel (both
// include the launches), and the step captured once and replayed as a graph.
std::vector<std::pair<Mode, Measurement>> time_modes(Decoder& decoder, const Sweep& sweep) {
  auto eager_fn = [&](cuda_stream s) { decoder.launch_step(s); };
  const CudaOptions timing{.warmup = sweep.options.warmup, .samples = sweep.options.samples, .repeats = 1,
                           .stream = sweep.stream};
  std::vector<std::pair<Mode, Measurement>> measured;
  for (Mode mode : sweep.options.modes) {
    if (mode == Mode::eager) {
      measured.emplace_back(mode, measure_cuda(eager_fn, timing));
      // measure_spin counts a step's launches and never queues more than the driver holds.
      measured.emplace_back(mode, measure_spin(eager_fn, timing));
    } else {
      CudaOptions graph_timing = timing;
      graph_timing.repeats = 0;  // several steps per graph, a sample of about half a millisecond
      measured.emplace_back(mode, measure_graph(eager_fn, graph_timing));
    }
  }
  return measured;
}

Record decode_record(const Measurement& m, Mode mode, const DecodeConfiguration& point, const Sweep& sweep) {
  const auto& config = sweep.run.config;
  const StepCost& cost = point.cost;
  const nlohmann::json params{{param_key::model, sweep.run.model_name},
                              {param_key::batch, point.batch},
                              {param_key::context, point.context},
                              {param_key::cached_tokens, point.context - 1},
                              {param_key::layers, config.layers},
                              {param_key::heads, config.heads},
                              {param_key::width, config.width},
                              {param_key::vocab, config.vocab},
                              {param_key::gemm, to_string(point.gemm)},
                              {param_key::kernel, to_string(point.kernel)},
                              {param_key::pdl, sweep.options.pdl},
                              {param_key::working_set_bytes, cost.bytes()},
                              {param_key::mode, to_string(mode)}};
  Record r = ridge::to_record(m, "decode", sweep.run.dtype, params, cost.bytes(), cost.flops);
  r.verification = "passed";
  const double tokens_per_s = point.batch / r.median_s();
  const double ceiling = point.ceiling_tokens_per_s;
  const DeviceCeilings& bw = sweep.run.ceilings;
  // Added to what to_record put there: the samples' SM clocks and the stop reason stay, so compare
  // can judge a decode step at its samples' clocks as it does every other record.
  extra_key::tokens_per_s.set(r, tokens_per_s);
  extra_key::ms_per_step.set(r, r.summary.median);
  extra_key::decode_ceiling_tokens_per_s.set(r, ceiling);
  extra_key::fraction_of_ceiling.set(r, tokens_per_s / ceiling);
  extra_key::weight_bytes.set(r, cost.weight_bytes);
  extra_key::kv_bytes_per_sequence.set(r, cost.kv_bytes_per_sequence);
  extra_key::intensity_flop_per_byte.set(r, cost.intensity());
  extra_key::bandwidth_bytes_per_s.set(r, bw.memory_bytes_per_s);
  extra_key::bandwidth_source.set(r, bw.source_text);
  extra_key::kernels_per_step.set(r, point.kernels_per_step);
  extra_key::check.set(r, point.check.summary());
  extra_key::meaning.set(r, describe(m.method));
  r.clocks_end = read_clocks(sweep.options.device);
  // The roofline floor needs the dtype's peak: only measured ceilings have one.
  std::optional<DeviceCeilings> ceilings;
  if (bw.peak_flops(to_string(sweep.options.dtype)) > 0) ceilings = bw;
  add_plausibility_warnings(r, ceilings, sweep.l2_bytes);
  if (tokens_per_s > ceiling * 1.02)
    r.warnings.push_back(fmt::format("impossible: {:.0f} tokens/s is above decode_ceiling ({:.0f}) at {}; the timer "
                                     "did not see the work",
                                     tokens_per_s, ceiling, format_bytes_per_s(bw.memory_bytes_per_s)));
  return r;
}

// One (batch, context): check against the reference, then time each mode.
void run_configuration(int batch, int context, Sweep& sweep) {
  const DecodeOptions& o = sweep.options;
  const int cached = context - 1;
  report(sweep.callbacks, fmt::format("decode: batch {}, context {}", batch, context));
  Decoder decoder(sweep.model, {.batch = batch,
                                .max_context = context,
                                .gemm = o.gemm,
                                .kernel = o.kernel,
                                .pdl = o.pdl,
                                .l2_prefetch = o.l2_prefetch,
                                .record_timeline = !o.timeline_path.empty()});
  DecodeConfiguration point;
  point.batch = batch;
  point.context = context;
  point.check = check_step(decoder, sweep.reference, sweep.run.dtype, cached, o.seed,
                           [&] { report(sweep.callbacks, "decode: CPU reference weights"); });
  if (!point.check.passed) {
    report(sweep.callbacks, "");
    throw VerificationError(fmt::format("GPT-2 decode at batch {}, context {} gave wrong logits: {}", batch, context,
                                        point.check.summary()));
  }
  decoder.fill_random_cache(cached, o.seed);
  point.cost = decoder.cost(cached);
  point.ceiling_tokens_per_s = decode_ceiling(point.cost.weight_bytes, sweep.run.ceilings.memory_bytes_per_s, batch,
                                              point.cost.kv_bytes_per_sequence);
  point.gemm = decoder.gemm();
  point.kernel = decoder.kernel();
  point.kernels_per_step = decoder.kernels_per_step();
  const auto measured = time_modes(decoder, sweep);
  if (!o.timeline_path.empty()) decoder.write_timeline(o.timeline_path);
  std::vector<Record> records;
  for (const auto& [mode, m] : measured) {
    records.push_back(decode_record(m, mode, point, sweep));
    if (mode == Mode::eager && m.method == Method::cuda_events) point.eager_ms = records.back().summary.median;
    if (mode == Mode::graph) point.graph_ms = records.back().summary.median;
  }
  // Per-step events carry the host's launch latency; compare judges them by its share.
  std::vector<Record*> same_configuration;
  for (auto& r : records) same_configuration.push_back(&r);
  gate_by_host_latency(same_configuration);
  report(sweep.callbacks, "");
  sweep.run.configurations.push_back(point);
  for (auto& r : records) {
    if (sweep.callbacks.on_record) sweep.callbacks.on_record(r, sweep.run.configurations.back());
    sweep.run.records.push_back(std::move(r));
  }
}

std::unique_ptr<Model> build_model(const DecodeOptions& o, std::optional<Weights>& loaded) {
  if (o.weights.empty()) return Model::random(preset(o.model), o.dtype, o.seed);
  loaded = load_safetensors(o.weights, o.heads > 0 ? std::optional<int>(o.heads) : std::nullopt);
  return Model::from_weights(*loaded, o.dtype);
}

void run_reference_file_check(const Model& model, const DecodeOptions& o, const DecodeCallbacks& callbacks,
                              DecodeRun& run) {
  const ReferenceLogits reference = read_reference_logits(o.check_logits, model.config());
  run.reference_check = check_reference_logits(model, reference, [&](int token, int length) {
    report(callbacks, fmt::format("decode: prefilling the reference prompt, token {}/{}", token, length));
  });
  report(callbacks, "");
  const ReferenceLogitsCheck& check = *run.reference_check;
  run.records.push_back(to_record(check, o.dtype));
  if (!check.comparison.passed)
    throw VerificationError(fmt::format(
        "GPT-2 logits differ from the reference in '{}': relative error {:.3e} > {:.0e} (max |diff| {:.3e}, greedy "
        "token agrees in {}/{} sequences)",
        check.path, check.comparison.relative_l2_error, check.comparison.tolerance, check.comparison.max_abs_error,
        check.comparison.argmax_agree, check.batch));
}

}  // namespace

DecodeRun run_decode(const DecodeOptions& o, const DecodeCallbacks& callbacks) {
  o.validate();
  require_gpu(o.device);
  const DeviceDescription device = describe_device(o.device);

  report(callbacks, "decode: building the model");
  std::optional<Weights> loaded;
  std::unique_ptr<Model> model = build_model(o, loaded);
  report(callbacks, "");
  DecodeRun run;
  run.config = model->config();
  run.dtype = o.dtype;
  run.pdl = o.pdl;
  run.device_name = device.name;
  run.device_bytes = model->device_bytes();
  run.model_name = o.weights.empty() ? run.config.name : std::filesystem::path(o.weights).filename().string();
  run.weights_source = o.weights.empty() ? fmt::format("random (seed {})", o.seed) : "from " + o.weights;
  const int element_bytes = o.dtype == DType::fp32 ? 4 : 2;
  run.weight_bytes_per_step = step_cost(run.config, element_bytes, element_bytes, 1, 0).weight_bytes;
  for (int c : o.contexts)
    if (c > run.config.context)
      throw UsageError(fmt::format("contexts: {} exceeds the model's {} positions", c, run.config.context));
  ReferenceWeights reference(run.config, o.dtype, o.seed, std::move(loaded));

  if (!o.check_logits.empty()) run_reference_file_check(*model, o, callbacks, run);
  if (!(o.bandwidth_bytes_per_s > 0)) report(callbacks, "decode: measured ceilings (cached after the first run)");
  run.ceilings = decode_ceilings(o.device, o.bandwidth_bytes_per_s);
  report(callbacks, "");
  if (callbacks.on_ready) callbacks.on_ready(run);

  OwnedStream stream;
  Sweep sweep{o, callbacks, *model, reference, run, static_cast<double>(device.l2_bytes), stream.s};
  for (int batch : o.batches)
    for (int context : o.contexts) run_configuration(batch, context, sweep);
  return run;
}

}  // namespace ridge::gpt2
