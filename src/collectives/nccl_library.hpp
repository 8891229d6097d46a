#pragma once
// The part of NCCL's C ABI ridge calls, declared here so that builds need no nccl.h, and the
// library loaded with dlopen at run time. Values and layouts follow nccl.h (2.x); the unit tests
// compare them with nccl.h wherever the build machine has it.
#include <cstddef>
#include <string>

#include "ridge/collectives.hpp"
#include "ridge/measure.hpp"

struct ncclComm;  // opaque, as nccl.h declares it

namespace ridge::detail::nccl {

using Comm = ::ncclComm*;
inline constexpr std::size_t unique_id_bytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct UniqueId {
  char internal[unique_id_bytes];
};

// ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums: int-sized.
using Result = int;
inline constexpr Result success = 0;
inline constexpr Result in_progress = 7;
enum DataType : int { int8 = 0, uint8 = 1, int32 = 2, uint32 = 3, int64 = 4, uint64 = 5, float16 = 6, float32 = 7,
                      float64 = 8, bfloat16 = 9 };
enum RedOp : int { sum = 0, prod = 1, max = 2, min = 3, avg = 4 };

using GetVersionFn = Result (*)(int*);
using GetUniqueIdFn = Result (*)(UniqueId*);
using CommInitRankFn = Result (*)(Comm*, int, UniqueId, int);
using CommInitAllFn = Result (*)(Comm*, int, const int*);
using CommDestroyFn = Result (*)(Comm);
using GetErrorStringFn = const char* (*)(Result);
using GetLastErrorFn = const char* (*)(Comm);
using AllReduceFn = Result (*)(const void*, void*, std::size_t, int, int, Comm, cuda_stream);
using BroadcastFn = Result (*)(const void*, void*, std::size_t, int, int, Comm, cuda_stream);
using ReduceFn = Result (*)(const void*, void*, std::size_t, int, int, int, Comm, cuda_stream);
using AllGatherFn = Result (*)(const void*, void*, std::size_t, int, Comm, cuda_stream);
using ReduceScatterFn = Result (*)(const void*, void*, std::size_t, int, int, Comm, cuda_stream);
using SendFn = Result (*)(const void*, std::size_t, int, int, Comm, cuda_stream);
using RecvFn = Result (*)(void*, std::size_t, int, int, Comm, cuda_stream);
using GroupFn = Result (*)();

/// NCCL, loaded. Every call goes through check(), which turns a failure into ridge::Error with
/// ncclGetErrorString, the communicator's last error and what to do.
struct Library {
  std::string path;  ///< the file that loaded
  int version = 0;   ///< ncclGetVersion
  GetVersionFn get_version = nullptr;
  GetUniqueIdFn get_unique_id = nullptr;
  CommInitRankFn comm_init_rank = nullptr;
  CommInitAllFn comm_init_all = nullptr;
  CommDestroyFn comm_destroy = nullptr;
  GetErrorStringFn get_error_string = nullptr;
  GetLastErrorFn get_last_error = nullptr;  ///< optional (NCCL >= 2.13)
  CommDestroyFn comm_abort = nullptr;       ///< ncclCommAbort: ends a communicator whose peers failed
  AllReduceFn all_reduce = nullptr;
  BroadcastFn broadcast = nullptr;
  ReduceFn reduce = nullptr;
  AllGatherFn all_gather = nullptr;
  ReduceScatterFn reduce_scatter = nullptr;
  SendFn send = nullptr;
  RecvFn recv = nullptr;
  GroupFn group_start = nullptr;
  GroupFn group_end = nullptr;

  /// Throws ridge::Error naming `call` unless `result` is success.
  void check(Result result, const char* call, Comm comm = nullptr) const;
};

/// Forces NCCL_NVLS_ENABLE=0, then loads NCCL from the first of nccl_library_candidates that opens
/// and has every symbol above; once per process. Throws MissingLibraryError listing where it looked
/// and how to install NCCL.
const Library& load();
/// What force_nccl_nvls_off said when load() ran (empty: nothing was overridden).
const std::string& nvls_note();

/// NCCL's element type for a ridge dtype (fp32, fp16, bf16, fp64); throws UsageError otherwise.
DataType data_type(DType dtype);

}  // namespace ridge::detail::nccl

#define RIDGE_NCCL_CHECK(lib, call, comm) (lib).check((call), #call, (comm))
