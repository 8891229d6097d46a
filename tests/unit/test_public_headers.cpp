// The public headers are host-only: this file includes all of them through the umbrella header
// and is compiled without any CUDA include path (ridge_unit_tests links no CUDA target).
#include "ridge/ridge.hpp"

#include <gtest/gtest.h>

TEST(PublicHeaders, UmbrellaHeaderNeedsNoCudaHeaders) {
  // Types from several features are complete here, so each header really was included.
  ridge::Record record;
  ridge::gpt2::Config config = ridge::gpt2::preset("tiny");
  EXPECT_GT(config.layers, 0);
  EXPECT_TRUE(record.samples_ms.empty());
}
