// The GPU side of the GEMM sweep: set-up (device, ceilings) and the measuring loop. The analysis is
// CPU code (src/sweeps/matmul_sweep.cpp).
#include <chrono>

#include <fmt/format.h>

#include "ridge/detail/gemm.hpp"
#include "ridge/checks.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/matmul.hpp"
#include "ridge/roofline.hpp"
#include "sweeps/cuda/sweep_runtime.hpp"

namespace ridge {

MatmulSetup prepare_matmul_sweep(const MatmulSweepOptions& options) {
  MatmulSetup setup;
  setup.plan = plan_matmul_sweep(options);  // usage errors before the GPU is touched
  const auto& o = setup.plan.options;
  require_gpu(o.device);
  setup.device = describe_device(o.device);
  setup.ceilings = ceilings_for(o.device, setup.device, ceilings_mode_from_string(o.ceilings));
  return setup;
}

MatmulSweep run_matmul_sweep(const MatmulSetup& setup, const SweepCallbacks& callbacks) {
  const auto wall_start = std::chrono::steady_clock::now();
  MatmulSweep sweep;
  sweep.setup = setup;
  const MatmulPlan& p = setup.plan;
  const auto& o = p.options;
  const double l2 = static_cast<double>(setup.device.l2_bytes);
  EmptyLaunchFloor floor;
  const CudaOptions base{.warmup = o.warmup, .samples = o.samples, .repeats = o.cold ? 1 : 0, .flush_l2 = o.cold};

  auto measure_point = [&](const SweepPoint& pt) {
    const DType dtype = dtype_from_string(pt.dtype);
    const GemmShape shape{pt.shape.m, pt.shape.n, pt.shape.k};
    detail::Gemm gemm(shape, dtype, 1 + pt.index);
    if (o.tune_candidates > 1) gemm.tune(o.tune_candidates);
    const detail::GemmCheck check = gemm.verify();
    if (!check.passed)
      throw VerificationError(fmt::format("the {} GEMM {}x{}x{} gave wrong results: {}", pt.dtype, shape.m, shape.n,
                                          shape.k, check.summary()));
    const DeviceCeilings ds = setup.ceilings.datasheet_ceilings().value_or(DeviceCeilings{});
    const DeviceCeilings me = setup.ceilings.measured ? setup.ceilings.measured->ceilings : DeviceCeilings{};
    const double peak_guess = ds.peak_flops(to_string(dtype)) > 0   ? ds.peak_flops(to_string(dtype))
                              : me.peak_flops(to_string(dtype)) > 0 ? me.peak_flops(to_string(dtype))
                                                                    : fastest_known_peak_flops(dtype);
    const double bw_guess = ds.memory_bytes_per_s > 0   ? ds.memory_bytes_per_s
                            : me.memory_bytes_per_s > 0 ? me.memory_bytes_per_s
                                                        : 2e12;
    // Estimated call time: the roofline floor at an assumed 50% of the ceilings.
    const double estimated_ms = roofline_floor_s(gemm.bytes(), gemm.flops(), peak_guess, bw_guess) * 1e3 / 0.5;
    const Method method = o.method ? *o.method : auto_method(estimated_ms);
    auto fn = [&](cuda_stream s) { gemm.run(s); };
    const ClockReading start = read_clocks(o.device);
    const Measurement m = measure(method, fn, base);
    const double empty_ms = floor.ms(method, m.repeats_per_sample, base);
    nlohmann::json params = gemm_params(shape);
    params[param_key::working_set_bytes] = gemm.bytes();
    params[param_key::cold] = o.cold;
    Record r = to_record(m, "matmul", dtype, params, gemm.bytes(), gemm.flops());
    r.clocks_start = start;
    r.clocks_end = read_clocks(o.device);
    r.verification = "passed";
    extra_key::algorithm.set(r, gemm.algorithm());
    if (!gemm.tuning().empty()) extra_key::tuning.set(r, gemm.tuning());
    extra_key::check.set(r, check.summary());
    extra_key::method_choice.set(r, o.method ? "user" : "auto");
    sweep.placements.push_back(annotate_gemm_record(r, setup.ceilings, empty_ms, l2, o.cold));
    return r;
  };
  sweep.records = run_sweep(p.points, measure_point, callbacks.on_record, callbacks.on_progress);
  analyze_matmul_sweep(sweep);
  sweep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return sweep;
}

MatmulSweep run_matmul_sweep(const MatmulSweepOptions& options, const SweepCallbacks& callbacks) {
  return run_matmul_sweep(prepare_matmul_sweep(options), callbacks);
}

}  // namespace ridge
