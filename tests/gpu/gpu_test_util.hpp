#pragma once
#include <gtest/gtest.h>

#include "ridge/device.hpp"

/// Skips the current test, with the reason, when no CUDA GPU is usable.
#define RIDGE_REQUIRE_GPU()                                                              \
  do {                                                                                   \
    if (::ridge::device_count() == 0)                                                    \
      GTEST_SKIP() << "no usable CUDA GPU (" << ::ridge::no_gpu_reason() << "): skipped"; \
  } while (0)
