// GPU tests of the streaming kernels: every op and variant passes its check at awkward sizes, a
// deliberately wrong kernel is caught, and the kernels time cleanly under the launch-free methods.
#include <cstdio>

#include "gpu_test_util.hpp"
#include "ridge/detail/gemm.hpp"
#include "ridge/detail/stream_bench.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/errors.hpp"
#include "ridge/gemm.hpp"
#include "ridge/matmul.hpp"
#include "ridge/measure.hpp"
#include "measure/cuda/probes.hpp"

using namespace ridge;
using ridge::detail::StreamBench;
using ridge::detail::StreamCheck;
using ridge::detail::Gemm;
using ridge::detail::GemmCheck;

namespace {

// Sizes that exercise the vec4 tail (n % 4 != 0), tiny grids, and the sampled check (> 2^20).
const std::vector<std::int64_t> awkward_sizes{1, 3, 5, 1000, 4099, (1 << 20) + 3, (1 << 22) + 1};
constexpr std::int64_t capacity = (1 << 22) + 8;

}  // namespace

TEST(StreamKernels, EveryOpAndVariantPassesItsCheck) {
  RIDGE_REQUIRE_GPU();
  StreamBench bench(capacity);
  for (StreamOp op : all_stream_ops())
    for (StreamVariant v : user_stream_variants())
      for (std::int64_t n : awkward_sizes) {
        const StreamCheck check = bench.verify(op, v, n);
        EXPECT_TRUE(check.passed) << to_string(op) << " " << to_string(v) << " n=" << n << ": " << check.summary();
        EXPECT_GT(check.checked, 0);
      }
}

TEST(StreamKernels, BrokenVariantIsCaught) {
  RIDGE_REQUIRE_GPU();
  StreamBench bench(capacity);
  for (StreamOp op : {StreamOp::add, StreamOp::copy, StreamOp::scale, StreamOp::triad})
    for (std::int64_t n : {std::int64_t{1000}, std::int64_t{4099}, (std::int64_t{1} << 22) + 1}) {
      const StreamCheck check = bench.verify(op, StreamVariant::broken_for_tests, n);
      EXPECT_FALSE(check.passed) << to_string(op) << " n=" << n << " skipped its last element unnoticed";
      EXPECT_EQ(check.non_finite, 1) << "exactly the skipped element keeps its NaN poison";
    }
  // A sum that drops one of 1000 inputs in [-1, 1] is off by far more than fp32 rounding.
  const StreamCheck sum = bench.verify(StreamOp::read, StreamVariant::broken_for_tests, 1000);
  EXPECT_FALSE(sum.passed) << sum.summary();
}

TEST(StreamKernels, BrokenVariantIsNotAUserChoice) {
  EXPECT_THROW(stream_variant_from_string("broken_for_tests"), UsageError);
  EXPECT_EQ(stream_variant_from_string("grid-stride"), StreamVariant::grid_stride);
}

TEST(StreamKernels, RejectsSizesOutsideTheBuffers) {
  RIDGE_REQUIRE_GPU();
  StreamBench bench(1024);
  EXPECT_THROW(bench.run(StreamOp::add, StreamVariant::vec4, 0), UsageError);
  EXPECT_THROW(bench.run(StreamOp::add, StreamVariant::vec4, 1025), UsageError);
  EXPECT_THROW(StreamBench(0), UsageError);
}

TEST(StreamKernels, CapturableAndPlausibleAtHbmSizes) {
  RIDGE_REQUIRE_GPU();
  const std::int64_t n = std::int64_t{1} << 26;  // 805 MB for add: far beyond any L2
  StreamBench bench(n);
  for (StreamVariant v : user_stream_variants()) {
    ASSERT_TRUE(bench.verify(StreamOp::add, v, n).passed);
    const auto m = measure_graph([&](cuda_stream s) { bench.run(StreamOp::add, v, n, s); },
                                 CudaOptions{.warmup = 2, .samples = 10, .repeats = 0});
    const double tbps = 12.0 * double(n) / (m.summary.median * 1e-3) / 1e12;
    std::printf("add %s at 2^26: %.3f ms, %.2f TB/s\n", to_string(v).c_str(), m.summary.median, tbps);
    EXPECT_GT(tbps, 0.5) << "far below any HBM GPU: the kernel or the timing is wrong";
    EXPECT_LT(tbps, 10.0) << "above any HBM GPU's bandwidth: the work did not run";
  }
  const auto sum = measure_spin([&](cuda_stream s) { bench.run(StreamOp::read, StreamVariant::grid_stride, n, s); },
                                CudaOptions{.warmup = 2, .samples = 10, .repeats = 1});
  EXPECT_GT(sum.summary.median, 0);
}

TEST(StreamKernels, SmallSizeSitsOnTheEmptyLaunchFloor) {
  RIDGE_REQUIRE_GPU();
  StreamBench bench(1024);
  const CudaOptions o{.warmup = 5, .samples = 30, .repeats = 200};
  const auto add = measure_graph([&](cuda_stream s) { bench.run(StreamOp::add, StreamVariant::vec4, 1024, s); }, o);
  const auto empty = measure_graph([](cuda_stream s) { launch_empty(s); }, o);
  std::printf("2^10 add: %.2f us per call; empty launch: %.2f us\n", add.summary.median * 1e3,
              empty.summary.median * 1e3);
  // The overhead-bound regime: a 12 KB add costs about what launching nothing costs.
  EXPECT_LT(add.summary.median - empty.summary.median, 2e-3);
}

TEST(GemmTuning, FastestCandidateStillPassesItsCheck) {
  RIDGE_REQUIRE_GPU();
  Gemm gemm({1024, 1024, 1024}, DType::bf16);
  EXPECT_GE(gemm.tune(8), 1);
  EXPECT_NE(gemm.tuning().find("cuBLASLt"), std::string::npos) << gemm.tuning();
  const GemmCheck check = gemm.verify();
  EXPECT_TRUE(check.passed) << check.summary();
  EXPECT_THROW(gemm.tune(0), UsageError);
}

// ---- the sweeps as library calls ---------------------------------------------------------------

TEST(BandwidthSweep, ShortSweepReturnsRecordsCurvesAndFindings) {
  RIDGE_REQUIRE_GPU();
  BandwidthSweepOptions o;
  o.ops = {StreamOp::add, StreamOp::copy};
  o.variants = {StreamVariant::vec4};
  o.sizes = {1 << 10, 1 << 16, 1 << 24};
  o.samples = 5;
  o.ceilings = "none";
  std::size_t streamed = 0;
  SweepCallbacks callbacks;
  callbacks.on_record = [&](const Record&) { ++streamed; };
  const BandwidthSweep s = run_bandwidth_sweep(o, callbacks);
  ASSERT_EQ(s.records.size(), 6u);
  EXPECT_EQ(streamed, 6u);
  ASSERT_EQ(s.curves.size(), 2u);
  EXPECT_EQ(s.best_curve_per_op.size(), 2u);
  for (const auto& r : s.records) {
    EXPECT_EQ(r.verification, "passed");
    EXPECT_GT(r.bytes_per_s(), 0);
    EXPECT_TRUE(r.extra.contains("launch_bound_up_to_elements"));
  }
  // 2^10 elements sit on the empty-launch floor.
  EXPECT_TRUE(s.curves[0].launch_bound_up_to);
  EXPECT_FALSE(s.findings.empty());
  EXPECT_FALSE(render_svg(s.plot).empty());
}

TEST(MatmulSweep, ShortSweepIsPlacedOnTheRoofline) {
  RIDGE_REQUIRE_GPU();
  MatmulSweepOptions o;
  o.sizes = {512, 2048};
  o.samples = 5;
  o.tune_candidates = 2;
  o.ceilings = "none";
  const MatmulSweep s = run_matmul_sweep(o);
  ASSERT_EQ(s.records.size(), 2u);
  ASSERT_EQ(s.placements.size(), 2u);
  for (std::size_t i = 0; i < s.records.size(); ++i) {
    EXPECT_EQ(s.records[i].verification, "passed");
    EXPECT_NEAR(s.placements[i].intensity_flop_per_byte, s.records[i].intensity_flop_per_byte(), 1e-9);
  }
  EXPECT_EQ(gemm_shape(s.records[1]).n, 2048);
  EXPECT_FALSE(render_svg(s.roofline_plot).empty());
}
