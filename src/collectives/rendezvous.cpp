#include "collectives/rendezvous.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "collectives/mpi/mpi_plugin_abi.h"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace fs = std::filesystem;

namespace {

class SingleProcess final : public Rendezvous {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void broadcast(void*, std::size_t) override {}
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }
  void abort(int) override {}
};

// ---- MPI through the plugin ----------------------------------------------------------------------

struct MpiPlugin {
  decltype(&ridge_mpi_abi_version) abi_version = nullptr;
  decltype(&ridge_mpi_init) init = nullptr;
  decltype(&ridge_mpi_broadcast) broadcast = nullptr;
  decltype(&ridge_mpi_gather) gather = nullptr;
  decltype(&ridge_mpi_barrier) barrier = nullptr;
  decltype(&ridge_mpi_finalize) finalize = nullptr;
  decltype(&ridge_mpi_abort) abort = nullptr;
};

template <typename Fn>
bool bind(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

MpiPlugin load_plugin() {
  std::string tried;
  for (const auto& path : mpi_plugin_candidates(environment_map(), executable_dir())) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char* why = ::dlerror();
      tried += fmt::format("\n  {}: {}", path, why ? why : "not found");
      continue;
    }
    MpiPlugin p;
    const bool ok = bind(handle, "ridge_mpi_abi_version", p.abi_version) && bind(handle, "ridge_mpi_init", p.init) &&
                    bind(handle, "ridge_mpi_broadcast", p.broadcast) && bind(handle, "ridge_mpi_gather", p.gather) &&
                    bind(handle, "ridge_mpi_barrier", p.barrier) && bind(handle, "ridge_mpi_finalize", p.finalize) &&
                    bind(handle, "ridge_mpi_abort", p.abort);
    if (!ok || p.abi_version() != RIDGE_MPI_PLUGIN_ABI_VERSION) {
      tried += fmt::format("\n  {}: not a libridge_mpi.so of this ridge version (rebuild ridge)", path);
      continue;
    }
    return p;
  }
  throw MissingLibraryError(fmt::format(
      "MPI launch, but ridge's MPI plugin (libridge_mpi.so) could not be loaded. Tried:{}\nIt is built beside "
      "the ridge binary when CMake finds MPI: install it (Debian/Ubuntu: apt install libopenmpi-dev; "
      "scripts/setup.sh does) and rebuild, or set RIDGE_MPI_PLUGIN. Without MPI, use the threads launcher",
      tried));
}

class Mpi final : public Rendezvous {
 public:
  explicit Mpi(LaunchInfo& info) : plugin_(load_plugin()) {
    char error[512] = {0};
    if (plugin_.init(&rank_, &size_, &info.local_rank, error, sizeof error) != 0)
      throw Error(fmt::format("{}; is this process started by mpirun?", error));
    info.rank = rank_;
    info.world_size = size_;
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void broadcast(void* data, std::size_t bytes) override {
    check(plugin_.broadcast(data, static_cast<long long>(bytes), 0, error_, sizeof error_));
  }
  std::vector<std::string> gather(const std::string& mine) override {
    // Lengths first, then every text padded to the longest.
    long long length = static_cast<long long>(mine.size());
    std::vector<long long> lengths(static_cast<std::size_t>(size_));
    check(plugin_.gather(&length, sizeof length, lengths.data(), 0, error_, sizeof error_));
    long long longest = 0;
    for (auto l : lengths) longest = std::max(longest, l);
    check(plugin_.broadcast(&longest, sizeof longest, 0, error_, sizeof error_));
    std::string padded = mine;
    padded.resize(static_cast<std::size_t>(longest));
    std::string all(static_cast<std::size_t>(rank_ == 0 ? longest * size_ : 0), '\0');
    check(plugin_.gather(padded.data(), longest, all.data(), 0, error_, sizeof error_));
    std::vector<std::string> out;
    if (rank_ != 0) return out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(static_cast<std::size_t>(r * longest), lengths[r]));
    return out;
  }
  void abort(int code) override { plugin_.abort(code); }
  void finish() override { plugin_.finalize(); }

 private:
  void check(int rc) {
    if (rc != 0) throw Error(fmt::format("{} (rank {} of {})", error_, rank_, size_));
  }
  MpiPlugin plugin_;
  int rank_ = 0, size_ = 1;
  char error_[512] = {0};
};

// ---- files in a shared folder --------------------------------------------------------------------

class Files final : public Rendezvous {
 public:
  Files(fs::path folder, const LaunchInfo& info, double timeout_s)
      : folder_(std::move(folder)), rank_(info.rank), size_(info.world_size), timeout_s_(timeout_s) {
    if (rank_ != 0) return;  // the others only read until rank 0 has written
    std::error_code ec;
    if (fs::exists(folder_, ec) && !fs::is_empty(folder_, ec))
      throw UsageError(fmt::format("rendezvous: {} holds files of an earlier run (one that did not finish?); remove "
                                   "it, or give this run another folder",
                                   folder_.string()));
    fs::create_directories(folder_, ec);
    if (ec) throw UsageError(fmt::format("rendezvous: cannot create {}: {}", folder_.string(), ec.message()));
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void broadcast(void* data, std::size_t bytes) override {
    const fs::path path = folder_ / fmt::format("broadcast-{}", rounds_++);
    if (rank_ == 0) {
      write_text(path.string(), std::string(static_cast<const char*>(data), bytes));
      return;
    }
    const std::string text = wait_for(path, bytes);
    std::memcpy(data, text.data(), bytes);
  }
  std::vector<std::string> gather(const std::string& mine) override {
    const int round = rounds_++;
    write_text((folder_ / fmt::format("gather-{}-rank-{}", round, rank_)).string(), mine);
    write_text((folder_ / fmt::format("gather-{}-rank-{}.done", round, rank_)).string(), "");
    std::vector<std::string> out;
    if (rank_ != 0) return out;
    for (int r = 0; r < size_; ++r) {
      wait_for(folder_ / fmt::format("gather-{}-rank-{}.done", round, r), 0);
      out.push_back(read_text(folder_ / fmt::format("gather-{}-rank-{}", round, r)));
    }
    return out;
  }
  void abort(int code) override { std::_Exit(code); }
  void finish() override {
    // Rank 0 read everything it needed; the others have read the broadcasts before NCCL could start.
    if (rank_ != 0) return;
    std::error_code ec;
    fs::remove_all(folder_, ec);
  }

 private:
  std::string wait_for(const fs::path& path, std::size_t bytes) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    for (;;) {
      std::error_code ec;
      if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) >= bytes) return read_text(path);
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(fmt::format("rank {} waited {:.0f} s for {} from another rank: is every rank running with the same "
                                "rendezvous folder, on a filesystem they all see?",
                                rank_, timeout_s_, path.string()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  fs::path folder_;
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 300;
  int rounds_ = 0;
};

}  // namespace

std::unique_ptr<Rendezvous> single_process_rendezvous() { return std::make_unique<SingleProcess>(); }

std::unique_ptr<Rendezvous> mpi_rendezvous(LaunchInfo& info) { return std::make_unique<Mpi>(info); }

std::unique_ptr<Rendezvous> file_rendezvous(const std::string& folder, const std::string& run_key, const LaunchInfo& info,
                                            double timeout_s) {
  if (folder.empty())
    throw UsageError("an environment launch (torchrun/SLURM variables) needs a rendezvous folder: one every rank "
                     "sees, where rank 0 leaves NCCL's id and the others their results");
  return std::make_unique<Files>(fs::path(folder) / ("ridge-" + run_key), info, timeout_s);
}

std::string environment_run_key(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  std::string key = get("TORCHELASTIC_RUN_ID");
  if (key.empty() && !get("SLURM_JOB_ID").empty())
    key = get("SLURM_JOB_ID") + "." + (get("SLURM_STEP_ID").empty() ? "0" : get("SLURM_STEP_ID"));
  if (key.empty()) key = "run";
  for (auto& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return key;
}

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace ridge
