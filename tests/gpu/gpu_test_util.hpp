#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <system_error>

#include "ridge/device.hpp"

/// Skips the current test, with the reason, when no CUDA GPU is usable.
#define RIDGE_REQUIRE_GPU()                                                              \
  do {                                                                                   \
    if (::ridge::device_count() == 0)                                                    \
      GTEST_SKIP() << "no usable CUDA GPU (" << ::ridge::no_gpu_reason() << "): skipped"; \
  } while (0)

/// Where the built tools (ridge, trace_target) are: build/bin beside build/tests, wherever the
/// build folder was carried to, else the folder CMake built them in.
inline std::filesystem::path bin_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(exe.parent_path() / ".." / "bin" / "ridge")) return exe.parent_path() / ".." / "bin";
  return RIDGE_BIN_DIR;
}
