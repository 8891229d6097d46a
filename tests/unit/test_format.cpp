#include "ridge/format.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

using namespace ridge;

TEST(Format, TimesKeepThreeToFourSignificantDigits) {
  EXPECT_EQ(format_ms(2.7204), "2.720 ms");
  EXPECT_EQ(format_ms(0.00321), "3.21 us");
  EXPECT_EQ(format_ms(0.0000005), "0.5 ns");
  EXPECT_EQ(format_ms(std::nan("")), "n/a");
}

TEST(Format, RatesUseDecimalUnits) {
  EXPECT_EQ(format_bytes_per_s(4.17e12), "4.17 TB/s");
  EXPECT_EQ(format_flops(675e12), "675 TFLOP/s");
}

TEST(Format, PercentOfAFractionAndDashWhenUnknown) {
  EXPECT_EQ(format_percent(0.945), "94.5%");
  EXPECT_EQ(format_percent(0.0), "0.0%");
  EXPECT_EQ(format_percent(1.0 / 3, 2), "33.33%");
  EXPECT_EQ(format_percent(std::numeric_limits<double>::quiet_NaN()), "-");
  EXPECT_EQ(format_percent(std::numeric_limits<double>::infinity()), "-");
}
