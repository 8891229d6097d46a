// libridge_mpi.so: the MPI calls of a multi-process run, behind the C interface of mpi_plugin_abi.h.
#include <mpi.h>

#include <climits>
#include <cstdio>

#include "mpi_plugin_abi.h"

namespace {

int report(int code, const char* call, char* error, int error_bytes) {
  if (code == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  if (error && error_bytes > 0) std::snprintf(error, static_cast<std::size_t>(error_bytes), "%s failed: %s", call, text);
  return code == 0 ? 1 : code;
}

int too_large(long long bytes, char* error, int error_bytes) {
  if (bytes >= 0 && bytes <= INT_MAX) return 0;
  if (error && error_bytes > 0)
    std::snprintf(error, static_cast<std::size_t>(error_bytes), "%lld bytes do not fit one MPI message", bytes);
  return 1;
}

}  // namespace

extern "C" {

int ridge_mpi_abi_version(void) { return RIDGE_MPI_PLUGIN_ABI_VERSION; }

int ridge_mpi_init(int* rank, int* size, int* local_rank, char* error, int error_bytes) {
  int initialized = 0;
  if (int rc = MPI_Initialized(&initialized)) return report(rc, "MPI_Initialized", error, error_bytes);
  if (!initialized)
    if (int rc = MPI_Init(nullptr, nullptr)) return report(rc, "MPI_Init", error, error_bytes);
  // Errors come back as codes, so ridge can say what failed instead of MPI aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank)) return report(rc, "MPI_Comm_rank", error, error_bytes);
  if (int rc = MPI_Comm_size(MPI_COMM_WORLD, size)) return report(rc, "MPI_Comm_size", error, error_bytes);
  MPI_Comm node = MPI_COMM_NULL;
  if (int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node))
    return report(rc, "MPI_Comm_split_type", error, error_bytes);
  const int rc = MPI_Comm_rank(node, local_rank);
  MPI_Comm_free(&node);
  return report(rc, "MPI_Comm_rank (node)", error, error_bytes);
}

int ridge_mpi_broadcast(void* data, long long bytes, int root, char* error, int error_bytes) {
  if (int rc = too_large(bytes, error, error_bytes)) return rc;
  return report(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast", error,
                error_bytes);
}

int ridge_mpi_gather(const void* send, long long bytes, void* recv, int root, char* error, int error_bytes) {
  if (int rc = too_large(bytes, error, error_bytes)) return rc;
  return report(MPI_Gather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE, root,
                           MPI_COMM_WORLD),
                "MPI_Gather", error, error_bytes);
}

int ridge_mpi_barrier(char* error, int error_bytes) {
  return report(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", error, error_bytes);
}

int ridge_mpi_finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized ? 0 : MPI_Finalize();
}

void ridge_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

}  // extern "C"
