// The GPU side of the bandwidth sweep: set-up (device, ceilings) and the measuring loop. The
// analysis is CPU code (src/sweeps/bandwidth_sweep.cpp).
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "ridge/detail/stream_bench.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "sweeps/cuda/sweep_runtime.hpp"

namespace ridge {

BandwidthSetup prepare_bandwidth_sweep(const BandwidthSweepOptions& options) {
  BandwidthSetup setup;
  setup.plan = plan_bandwidth_sweep(options);  // usage errors before the GPU is touched
  const auto& o = setup.plan.options;
  require_gpu(o.device);
  setup.device = describe_device(o.device);
  setup.ceilings = ceilings_for(o.device, setup.device, ceilings_mode_from_string(o.ceilings));
  return setup;
}

BandwidthSweep run_bandwidth_sweep(const BandwidthSetup& setup, const SweepCallbacks& callbacks) {
  const auto wall_start = std::chrono::steady_clock::now();
  BandwidthSweep sweep;
  sweep.setup = setup;
  const BandwidthPlan& p = setup.plan;
  const auto& o = p.options;
  const CeilingsLookup& ceilings = setup.ceilings;
  const double l2 = static_cast<double>(setup.device.l2_bytes);
  const double reference_bw = knee_reference_bytes_per_s(ceilings);

  const std::int64_t capacity = *std::max_element(o.sizes.begin(), o.sizes.end());
  if (callbacks.on_status)
    callbacks.on_status(fmt::format("bandwidth: allocating and filling {} of buffers", format_bytes(12.0 * double(capacity))));
  detail::StreamBench bench(capacity);
  if (callbacks.on_status) callbacks.on_status("");


  EmptyLaunchFloor floor;
  const CudaOptions base{.warmup = o.warmup, .samples = o.samples, .repeats = o.cold ? 1 : 0, .flush_l2 = o.cold};
  auto measure_point = [&](const SweepPoint& pt) {
    const StreamPoint point{stream_op_from_string(pt.op), stream_variant_from_string(pt.variant), pt.size};
    const detail::StreamCheck check = bench.verify(point.op, point.variant, point.n);
    if (!check.passed)
      throw VerificationError(fmt::format("bandwidth {} {} at n={} gave wrong results: {}", pt.op, pt.variant, point.n,
                                          check.summary()));
    const double bytes = stream_bytes(point.op, point.n);
    const double estimated_ms = reference_bw > 0 ? bytes / reference_bw * 1e3 : bytes / 2e12 * 1e3;
    const Method method = o.method ? *o.method : auto_method(estimated_ms);
    auto fn = [&](cuda_stream s) { bench.run(point.op, point.variant, point.n, s); };
    const ClockReading start = read_clocks(o.device);
    const Measurement m = measure(method, fn, base);
    const double empty_ms = floor.ms(method, m.repeats_per_sample, base);
    Record r = to_record(m, "bandwidth." + pt.op, DType::fp32, stream_params(point, o.cold), bytes,
                         stream_flops(point.op, point.n));
    r.clocks_start = start;
    r.clocks_end = read_clocks(o.device);
    r.verification = "passed";
    extra_key::check.set(r, check.summary());
    extra_key::variant.set(r, describe(point.variant));
    extra_key::method_choice.set(r, o.method ? "user" : "auto");
    if (point.variant == StreamVariant::grid_stride)
      extra_key::grid_blocks.set(r, bench.grid_stride_blocks(point.op));
    annotate_stream_record(r, empty_ms, ceilings, l2, o.cold);
    return r;
  };
  sweep.records = run_sweep(p.points, measure_point, callbacks.on_record, callbacks.on_progress);
  analyze_bandwidth_sweep(sweep);
  sweep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return sweep;
}

BandwidthSweep run_bandwidth_sweep(const BandwidthSweepOptions& options, const SweepCallbacks& callbacks) {
  return run_bandwidth_sweep(prepare_bandwidth_sweep(options), callbacks);
}

}  // namespace ridge
