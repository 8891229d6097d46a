#pragma once
// How the processes of a run meet: share NCCL's unique id, gather results on rank 0, wait for each
// other. One process (threads launch): nothing to do. MPI: through libridge_mpi.so. Environment
// launch (torchrun, SLURM): files in a folder every rank sees.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ridge/collectives.hpp"

namespace ridge {

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Rank 0's `bytes` bytes at `data` to every process.
  virtual void broadcast(void* data, std::size_t bytes) = 0;
  /// Every process's text to rank 0, in rank order; other ranks get an empty list.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  /// Ends the whole job after a failure on one process, so the others do not wait forever.
  virtual void abort(int code) = 0;
  /// Called once when the run has finished (MPI_Finalize; the file rendezvous cleans its folder).
  virtual void finish() {}
};

/// A single process.
std::unique_ptr<Rendezvous> single_process_rendezvous();
/// MPI through the plugin (see mpi_plugin_candidates); `info` gets MPI's rank, size and local rank.
/// Throws MissingLibraryError when the plugin is not found, Error when MPI fails.
std::unique_ptr<Rendezvous> mpi_rendezvous(LaunchInfo& info);
/// Files in `folder` (created; shared by every rank), under a subfolder named by `run_key`.
/// Throws UsageError for an empty folder name. Waits at most `timeout_s` for the others.
std::unique_ptr<Rendezvous> file_rendezvous(const std::string& folder, const std::string& run_key, const LaunchInfo& info,
                                            double timeout_s = 300);
/// The run key of an environment launch: TORCHELASTIC_RUN_ID, else SLURM_JOB_ID.SLURM_STEP_ID,
/// else "run" (then the folder must not be shared by two runs at once).
std::string environment_run_key(const std::map<std::string, std::string>& env);

/// The folder of the running executable ("" when unknown).
std::string executable_dir();

}  // namespace ridge
