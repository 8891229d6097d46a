// Measured ceilings on a real GPU: each probe checked its output before timing (a wrong kernel
// throws VerificationError), the numbers are physically sensible, and the cache works.
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "gpu_test_util.hpp"
#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/device.hpp"

using namespace ridge;

TEST(Ceilings, MeasureCheckAndCache) {
  RIDGE_REQUIRE_GPU();
  const auto dir = std::filesystem::temp_directory_path() / "ridge-ceilings-test";
  std::filesystem::remove_all(dir);
  setenv("RIDGE_CACHE_DIR", dir.c_str(), 1);

  const auto t0 = std::chrono::steady_clock::now();
  const MeasuredCeilings c = measured_ceilings(0, true);
  const double measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(c.from_cache);
  EXPECT_LT(measure_s, 30.0) << "the ceilings must be quick enough to measure on first use";
  EXPECT_GT(c.ceilings.memory_bytes_per_s, 100e9);
  EXPECT_GT(c.ceilings.l2_bytes_per_s, c.ceilings.memory_bytes_per_s) << "the L2 is faster than device memory";
  EXPECT_GT(c.ceilings.peak_flops("fp32"), 1e12);
  EXPECT_EQ(c.ceilings.source, CeilingsSource::measured);
  EXPECT_GT(c.ceilings.empty_launch_us, 0.1);
  EXPECT_LT(c.ceilings.empty_launch_us, 50);
  EXPECT_GT(c.fp32_observed_sm_mhz, 100);
  for (const auto& r : c.records) EXPECT_EQ(r.verification, "passed") << r.name;

  // Never above the datasheet (5% slack for rounding and boost), when the device is catalogued.
  if (auto entry = match_device(describe_device(0))) {
    EXPECT_LT(c.ceilings.memory_bytes_per_s, entry->ceilings.memory_bytes_per_s * 1.05);
    for (const auto& [dtype, rate] : c.ceilings.peak_flops_per_s)
      if (auto peak = entry->peak(dtype_from_string(dtype))) {
        EXPECT_LT(rate, *peak * 1.05) << dtype;
      }
  }

  ASSERT_TRUE(std::filesystem::exists(c.cache_file));
  const auto t1 = std::chrono::steady_clock::now();
  const MeasuredCeilings cached = measured_ceilings(0, false);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 1.0);
  EXPECT_TRUE(cached.from_cache);
  EXPECT_DOUBLE_EQ(cached.ceilings.memory_bytes_per_s, c.ceilings.memory_bytes_per_s);
  EXPECT_EQ(cached.ceilings.peak_flops_per_s, c.ceilings.peak_flops_per_s);
  EXPECT_EQ(cached.measured_at_utc, c.measured_at_utc);
  std::filesystem::remove_all(dir);
  unsetenv("RIDGE_CACHE_DIR");
}
