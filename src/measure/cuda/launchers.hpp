#pragma once
// Host-callable launchers of ridge's internal kernels. Kernels live in .cu files, which never
// include fmt (nvcc's C++20 front end rejects its compile-time format checks); host logic that
// builds messages lives in .cpp files and calls these.
#include <cstdint>

#include <library_types.h>

#include "ridge/measure.hpp"

namespace ridge {

/// Single-thread kernel that spins until flags[0] != 0 (set by the host through mapped pinned
/// memory) or `timeout_s` passes, in which case it sets flags[1] = 1 and exits.
void launch_hold_stream(cuda_stream stream, int* flags, double timeout_s);

/// Adds the number of NaN/inf elements of `data` to *counter.
void launch_count_non_finite(const void* data, std::int64_t n, cudaDataType_t type, unsigned long long* counter,
                             cuda_stream stream);

}  // namespace ridge
