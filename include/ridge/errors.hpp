#pragma once
#include <stdexcept>
#include <string>

namespace ridge {

/// Process exit codes used by the `ridge` tool (DESIGN.md §6).
enum class ExitCode : int {
  ok = 0,
  runtime_error = 1,
  usage_error = 2,
  verification_failed = 3,
  no_gpu = 4,
  regression = 5,  ///< `ridge compare`: a significant regression beyond the threshold
  nothing_compared = 6,  ///< `ridge compare`: no record was judged (none matched), so there is no verdict
  missing_library = 7,   ///< a library loaded at run time (NCCL, the MPI plugin) was not found or is unusable
  counters_unavailable = 8,  ///< hardware counters may not be read here (not permitted, virtualized or MIG GPU)
  records_missing = 9,  ///< `ridge compare`: a record the baseline judges is missing from the new run
};

/// Base of every error ridge throws; `code()` is the exit code the tool maps it to.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ExitCode code = ExitCode::runtime_error)
      : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

/// Bad input from the user: a flag, a number, a file.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, ExitCode::usage_error) {}
};

/// A kernel's output did not match its reference.
class VerificationError : public Error {
 public:
  explicit VerificationError(const std::string& what) : Error(what, ExitCode::verification_failed) {}
};

/// No usable CUDA device (no driver, no GPU, or the device is unavailable).
class NoGpuError : public Error {
 public:
  explicit NoGpuError(const std::string& what) : Error(what, ExitCode::no_gpu) {}
};

/// A library ridge loads at run time (NCCL, libridge_mpi.so) is missing or unusable.
class MissingLibraryError : public Error {
 public:
  explicit MissingLibraryError(const std::string& what) : Error(what, ExitCode::missing_library) {}
};

/// Hardware counters cannot be read in this process: the user lacks the permission
/// (ERR_NVGPUCTRPERM), or the GPU is virtualized, a MIG slice, or otherwise offers none.
class CountersUnavailableError : public Error {
 public:
  explicit CountersUnavailableError(const std::string& what) : Error(what, ExitCode::counters_unavailable) {}
};

}  // namespace ridge
