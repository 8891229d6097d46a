// The timers' counted pass on ridge's own stream add kernel, whose traffic is known: 2^26 FP32
// elements read from two arrays and written to a third, 3 x N x 4 bytes per call.
#include <cuda_runtime_api.h>

#include <string>

#include "gpu_test_util.hpp"
#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "ridge/trace/tracer.hpp"
#include "sweeps/cuda/stream_kernels.hpp"

using namespace ridge;
namespace sk = ridge::detail::stream_kernels;

namespace {

struct DeviceArray {
  float* p = nullptr;
  explicit DeviceArray(std::int64_t n) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), static_cast<std::size_t>(n) * sizeof(float)) != cudaSuccess) throw Error("cudaMalloc failed");
    if (cudaMemset(p, 0, static_cast<std::size_t>(n) * sizeof(float)) != cudaSuccess) throw Error("cudaMemset failed");
  }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

constexpr std::int64_t n = std::int64_t{1} << 26;

}  // namespace

TEST(WorkCounters, StreamAddMovesThreeArraysThroughDram) {
  RIDGE_REQUIRE_GPU();
  DeviceArray a(n), b(n), c(n);
  const StreamFn add = [&](cuda_stream s) {
    sk::launch_elementwise(sk::op_add, sk::variant_vec4, a.p, b.p, c.p, 1.0f, n, 0, s);
  };
  Measurement m;
  try {
    m = measure_with_counters(Method::cuda_events, add, CudaOptions{.warmup = 2, .samples = 5});
  } catch (const CountersUnavailableError& e) {
    GTEST_SKIP() << "hardware counters cannot be read here: " << e.what();
  }
  EXPECT_EQ(m.samples_ms.size(), 5u) << "the timed samples are taken as without counters";
  ASSERT_TRUE(m.counted.has_value());
  const CountedWork& counted = *m.counted;
  const double stated = 3.0 * n * 4;
  EXPECT_EQ(counted.kernels, 1u);
  EXPECT_GE(counted.passes, 1u);
  EXPECT_NEAR(counted.work.dram_bytes(), stated, 0.02 * stated)
      << "read " << counted.work.dram_read_bytes << ", written " << counted.work.dram_write_bytes;
  EXPECT_NEAR(counted.work.dram_read_bytes, 2.0 * n * 4, 0.02 * 2.0 * n * 4);
  EXPECT_GT(counted.work.l2_bytes, 0);
  EXPECT_GT(counted.work.profiled_sm_hz, 1e8) << "the profiled pass's SM clock";
  ASSERT_TRUE(counted.work.flops.count("fp32"));
  EXPECT_NEAR(counted.work.flops.at("fp32"), static_cast<double>(n), 0.01 * n) << "one FADD per element";
  EXPECT_TRUE(counted.work.missing.empty());
  EXPECT_TRUE(compare_counted_work(stated, 0, counted).empty());
  const auto wrong = compare_counted_work(stated / 2, 0, counted);  // a count that forgot the writes and a read
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_NEAR(wrong[0].ratio, 2.0, 0.04);

  // Counted again, on its own: the same work.
  const CountedWork again = count_work(add);
  EXPECT_EQ(again.kernels, 1u);
  EXPECT_NEAR(again.work.dram_bytes(), stated, 0.02 * stated);
}

TEST(WorkCounters, SeveralKernelsAreSummed) {
  RIDGE_REQUIRE_GPU();
  DeviceArray a(n), b(n), c(n);
  CountedWork counted;
  try {
    counted = count_work([&](cuda_stream s) {
      sk::launch_elementwise(sk::op_add, sk::variant_vec4, a.p, b.p, c.p, 1.0f, n, 0, s);
      sk::launch_elementwise(sk::op_copy, sk::variant_vec4, c.p, nullptr, a.p, 1.0f, n, 0, s);
    });
  } catch (const CountersUnavailableError& e) {
    GTEST_SKIP() << "hardware counters cannot be read here: " << e.what();
  }
  EXPECT_EQ(counted.kernels, 2u);
  const double expected = 3.0 * n * 4 + 2.0 * n * 4;  // add, then copy
  EXPECT_NEAR(counted.work.dram_bytes(), expected, 0.02 * expected);
}

TEST(WorkCounters, RefusedWhileTheTracerRecords) {
  RIDGE_REQUIRE_GPU();
  ridge::Tracer tracer;
  tracer.start();
  try {
    count_work([](cuda_stream) {});
    ADD_FAILURE() << "counted inside a trace";
  } catch (const CountersUnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("tracer"), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), ExitCode::counters_unavailable);
  }
  tracer.stop();
}
