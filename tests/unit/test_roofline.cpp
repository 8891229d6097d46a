#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/roofline.hpp"

using namespace ridge;

TEST(Roofline, SeedPrefillIntensity) {
  // A 4096^3 BF16 GEMM: 2*4096^3 / (3*4096^2*2) = 4096/3 = 1365.3.
  EXPECT_NEAR(matmul_intensity(4096, 4096, 4096), 1365.33, 0.01);
}

TEST(Roofline, SeedBatchedDecodeIntensity) {
  // Batch B tokens through a [4096,4096] BF16 weight: [B,4096] @ [4096,4096].
  EXPECT_NEAR(matmul_intensity(1, 4096, 4096), 1.0, 0.01);
  EXPECT_NEAR(matmul_intensity(8, 4096, 4096), 8.0, 0.05);
  EXPECT_NEAR(matmul_intensity(128, 4096, 4096), 120.5, 1.0);  // seed: "about 120"
  EXPECT_NEAR(matmul_intensity(512, 4096, 4096), 409.6, 1.0);  // seed: "about 410"
}

TEST(Roofline, SeedH100RidgePoint) {
  EXPECT_NEAR(ridge_point(990e12, 3.35e12), 295.5, 0.5);
}

TEST(Roofline, AttainableIsMinOfRoofs) {
  EXPECT_DOUBLE_EQ(attainable_flops(1.0, 990e12, 3.35e12), 3.35e12);
  EXPECT_DOUBLE_EQ(attainable_flops(1000.0, 990e12, 3.35e12), 990e12);
  EXPECT_EQ(classify(1.0 / 12, 990e12, 3.35e12), Bound::memory);
  EXPECT_EQ(classify(1365, 990e12, 3.35e12), Bound::compute);
}

TEST(Roofline, DecodeCeiling) {
  // 1 GB of weights at 1 TB/s: 1000 tokens/s at batch 1; KV bytes shared by nobody.
  EXPECT_DOUBLE_EQ(decode_ceiling(1e9, 1e12), 1000);
  EXPECT_DOUBLE_EQ(decode_ceiling(1e9, 1e12, 4), 4000);
  EXPECT_DOUBLE_EQ(decode_ceiling(1e9, 1e12, 2, 0.5e9), 1000);
}

TEST(Roofline, SeedAmdahl) {
  EXPECT_NEAR(amdahl_speedup(0.10, std::numeric_limits<double>::infinity()), 1.111, 0.001);
  EXPECT_NEAR(amdahl_speedup(0.30, 3), 1.25, 1e-12);
  EXPECT_NEAR(amdahl_limit(0.10), 1.111, 0.001);
  auto need = amdahl_required_speedup(0.30, 1.25);
  ASSERT_TRUE(need.has_value());
  EXPECT_NEAR(*need, 3.0, 1e-9);
  EXPECT_FALSE(amdahl_required_speedup(0.10, 1.2).has_value());  // limit is 1.11x
}

TEST(Roofline, RejectsBadInput) {
  EXPECT_THROW(matmul_intensity(0, 4096, 4096), UsageError);
  EXPECT_THROW(matmul_intensity(-1, 4096, 4096), UsageError);
  EXPECT_THROW(attainable_flops(-1, 1e12, 1e12), UsageError);
  EXPECT_THROW(attainable_flops(1, 0, 1e12), UsageError);
  EXPECT_THROW(ridge_point(1e12, 0), UsageError);
  EXPECT_THROW(decode_ceiling(0, 1e12), UsageError);
  EXPECT_THROW(decode_ceiling(1e9, 1e12, 0), UsageError);
  EXPECT_THROW(amdahl_speedup(1.5, 2), UsageError);
  EXPECT_THROW(amdahl_speedup(0.5, 0), UsageError);
  EXPECT_THROW(amdahl_speedup(0.5, -2), UsageError);
}

TEST(Roofline, FloorAndEfficiency) {
  // 12 bytes and 1 FLOP per element, 2^28 elements, 4 TB/s: memory floor.
  const double n = 1 << 28;
  EXPECT_NEAR(roofline_floor_s(12 * n, n, 67e12, 4e12), 12 * n / 4e12, 1e-12);
  EXPECT_NEAR(roofline_efficiency(0.5e12, 1.0, 990e12, 1e12), 0.5, 1e-12);
}
