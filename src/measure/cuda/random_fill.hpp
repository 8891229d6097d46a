#pragma once
// Random device buffers (never zeros: some kernels run faster on zeros).
#include <cstdint>

#include <library_types.h>

#include "ridge/measure.hpp"

namespace ridge {

/// Fills `count` elements of type `type` (fp32, fp64, fp16, bf16, fp8 e4m3) with values uniform in
/// [lo, hi) from a counter-based hash of (seed, index): reproducible on any device.
void fill_random(void* data, std::int64_t count, cudaDataType_t type, std::uint64_t seed, cuda_stream stream,
                 float lo = -1.0f, float hi = 1.0f);

/// The value fill_random writes at `index` before rounding to the element type (for host references).
float random_value(std::uint64_t seed, std::int64_t index, float lo = -1.0f, float hi = 1.0f);

}  // namespace ridge
