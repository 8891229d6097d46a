/* The C interface of libridge_mpi.so, the only part of ridge that links MPI. ridge dlopens it when
   it runs under mpirun, so the ridge binary starts without libmpi. Every function returns 0 on
   success, else an MPI error code with a message in `error` (error_bytes long). */
#ifndef RIDGE_MPI_PLUGIN_ABI_H
#define RIDGE_MPI_PLUGIN_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

#define RIDGE_MPI_PLUGIN_ABI_VERSION 1

int ridge_mpi_abi_version(void);
/* MPI_Init (unless already initialized); rank and size in MPI_COMM_WORLD; the rank among the
   processes of this node (MPI_Comm_split_type MPI_COMM_TYPE_SHARED). */
int ridge_mpi_init(int* rank, int* size, int* local_rank, char* error, int error_bytes);
/* The root's `bytes` bytes to every rank. */
int ridge_mpi_broadcast(void* data, long long bytes, int root, char* error, int error_bytes);
/* Every rank's `bytes` bytes to the root, in rank order (recv: size * bytes, used on the root only). */
int ridge_mpi_gather(const void* send, long long bytes, void* recv, int root, char* error, int error_bytes);
int ridge_mpi_barrier(char* error, int error_bytes);
int ridge_mpi_finalize(void);
void ridge_mpi_abort(int code);

#ifdef __cplusplus
}
#endif
#endif
