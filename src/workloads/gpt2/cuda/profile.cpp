// `ridge profile` as a library call, GPU part: trace one decode step per mode and analyse it.
#include "ridge/gpt2/profile.hpp"

#include "ridge/catalog.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/trace/window.hpp"

namespace ridge::gpt2 {

namespace {

double ms(trace::Nanoseconds ns) { return static_cast<double>(ns) / 1e6; }

ModeProfile profile_mode(Decoder& decoder, Mode mode, const std::string& path, int top) {
  decoder.warmup(mode, 3);
  // CUPTI pays one-time costs for the first launches it sees after it starts recording: run
  // three steps under the tracer first, and keep only the last, inside its own "step" range.
  // Every API call: the step's window keeps the kernels whose launch call lies inside it.
  // The warm-up steps are waited for: else the step's launch queues behind them and its latency
  // is their run time, not a launch cost.
  Tracer tracer(TracerOptions{.api_calls = trace::ApiCalls::all});
  tracer.start();
  {
    NvtxRange warm("warm-up steps");
    decoder.warmup(mode, 3);
  }
  {
    NvtxRange step("step");
    decoder.step(mode, nullptr);
  }
  tracer.stop();
  const trace::Trace& all = tracer.events();
  if (!all.strings.find("step"))
    throw Error(
        "ridge profile: the tracer saw no NVTX range named \"step\", so it cannot cut one step out of the trace. "
        "NVTX was initialised before the tracer could route it to CUPTI (an NVTX call ran before "
        "enable_nvtx_capture()), or NVTX_INJECTION64_PATH points to another tool; unset it and retry.");
  trace::Window window;
  window.nvtx_range = "step";
  trace::Trace one_step = trace::apply_window(all, window);
  trace::write_chrome_trace(one_step, path);
  trace::AnalysisOptions options;
  options.step_range = "step";
  options.top = static_cast<std::size_t>(top);
  return {mode, trace::analyze(one_step, options), path};
}

/// One eager step with every kernel's counters (step 0 of the trace), then two untouched steps
/// that give the kernels' times: the measured roofline and the step's measured bytes and FLOPs.
void measure_counters(Decoder& decoder, const ProfileOptions& o, ProfileRun& run) {
  decoder.warmup(Mode::eager, 1);
  TracerOptions options;
  options.api_calls = trace::ApiCalls::none;
  options.synchronization = false;
  options.counters = trace::CounterOptions{};
  options.counters->steps = std::pair<std::uint64_t, std::uint64_t>{0, 0};
  options.counters->step_range = "step";
  options.counters->first_launches_per_kernel = 0;
  Tracer tracer(options);
  try {
    tracer.start();
  } catch (const CountersUnavailableError& e) {
    run.counters_note = e.what();
    return;
  }
  for (int i = 0; i < 3; ++i) {
    NvtxRange step("step");
    decoder.step(Mode::eager, nullptr);
  }
  tracer.stop();
  const trace::Trace& t = tracer.events();
  const CeilingsLookup lookup = ceilings_for(o.device, describe_device(o.device), CeilingsMode::cached);
  run.measured_roofline = trace::counter_roofline(t, lookup.best().value_or(DeviceCeilings{}));
  for (const auto& row : t.counters.rows) {
    const trace::LaunchWork w = trace::launch_work(t.counters, row);
    run.measured_dram_bytes += w.dram_bytes();
    run.measured_flops += w.total_flops();
  }
  if (!t.counters.error.empty()) run.counters_note = "counter collection stopped early: " + t.counters.error;
  else run.counters_note = lookup.note;
}

}  // namespace

ProfileRun run_profile(const ProfileOptions& o) {
  o.validate();
  require_gpu(o.device);
  // The decoder's NVTX ranges must reach CUPTI: route NVTX before its first call initialises it.
  enable_nvtx_capture();

  auto model = Model::random(preset(o.model), o.dtype);
  DecoderOptions decoder_options;
  decoder_options.batch = o.batch;
  decoder_options.max_context = model->config().context;
  decoder_options.kernel = o.kernel;
  Decoder decoder(*model, decoder_options);
  // `context` tokens in the sequence after the step: context-1 cached, as `ridge decode` counts.
  decoder.fill_random_cache(o.context - 1);

  ProfileRun run;
  run.model = o.model;
  run.dtype = o.dtype;
  run.batch = o.batch;
  run.context = o.context;
  run.kernel = decoder.kernel();
  run.profiles.push_back(profile_mode(decoder, Mode::eager, o.trace_path, o.top));
  run.profiles.push_back(profile_mode(decoder, Mode::graph, graph_trace_path(o.trace_path), o.top));
  if (o.counters) {
    const StepCost cost = decoder.cost(o.context - 1);
    run.stated_bytes = cost.bytes();
    run.stated_flops = cost.flops;
    measure_counters(decoder, o, run);
  }
  for (const auto& p : run.profiles) {
    Record r;
    r.name = "profile.decode_step";
    r.method = Method::cupti_trace;
    r.dtype = o.dtype;
    r.params = {{param_key::model, o.model},
                {param_key::batch, o.batch},
                {param_key::context, o.context},
                {param_key::mode, to_string(p.mode)},
                {param_key::kernel, to_string(run.kernel)}};
    r.samples_ms = {ms(p.analysis.kernel_span_ns)};
    finalize(r);
    // One traced step cannot be judged (no test reaches significance on one sample); the decode
    // records time the same step.
    r.gate = RecordGate{.informational = true,
                        .reason = "one traced step: a breakdown of where the time goes, not a timing (the decode "
                                  "records time the step)"};
    extra_key::analysis.set(r, trace::to_json(p.analysis));
    extra_key::trace_path.set(r, p.trace_path);
    run.records.push_back(std::move(r));
  }
  return run;
}

}  // namespace ridge::gpt2
