// How ranks are launched and where the run-time libraries are: launch detection from the
// environment, NCCL_NVLS_ENABLE, the NCCL and MPI-plugin lookups. CPU only.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "ridge/collectives.hpp"
#include "ridge/errors.hpp"

extern char** environ;

namespace ridge {

namespace {

using Env = std::map<std::string, std::string>;

std::optional<std::string> lookup(const Env& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

int parse_count(const std::string& name, const std::string& value, int min) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || v < min || v > 1 << 24)
    throw UsageError(fmt::format("${} is '{}', which is not a whole number >= {}", name, value, min));
  return static_cast<int>(v);
}

// One family of launcher variables: rank, size and local rank (the last may be absent).
struct RankVariables {
  const char* rank;
  const char* size;
  const char* local_rank;
};

std::optional<LaunchInfo> read_family(const Env& env, const RankVariables& v, LaunchKind kind) {
  const auto rank = lookup(env, v.rank);
  const auto size = lookup(env, v.size);
  if (!rank || !size) return std::nullopt;
  LaunchInfo info;
  info.kind = kind;
  info.rank = parse_count(v.rank, *rank, 0);
  info.world_size = parse_count(v.size, *size, 1);
  info.source = fmt::format("{}/{}", v.rank, v.size);
  if (info.rank >= info.world_size)
    throw UsageError(fmt::format("${} = {} is not below ${} = {}", v.rank, info.rank, v.size, info.world_size));
  if (v.local_rank) {
    if (const auto local = lookup(env, v.local_rank)) {
      info.local_rank = parse_count(v.local_rank, *local, 0);
      info.source += fmt::format("/{}", v.local_rank);
    } else {
      info.local_rank = info.rank;  // one node assumed; said in source
      info.source += " (no local rank: GPU = rank)";
    }
  }
  return info;
}

const std::vector<RankVariables> mpi_families = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK"},
    {"PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK"},
};
const std::vector<RankVariables> env_families = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

std::optional<LaunchInfo> first_family(const Env& env, const std::vector<RankVariables>& families, LaunchKind kind) {
  for (const auto& f : families)
    if (auto info = read_family(env, f, kind)) return info;
  return std::nullopt;
}

bool any_mpi_variable(const Env& env) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE"})
    if (lookup(env, name)) return true;
  return false;
}

}  // namespace

std::string to_string(LaunchKind kind) {
  switch (kind) {
    case LaunchKind::threads:
      return "threads";
    case LaunchKind::mpi:
      return "mpi";
    case LaunchKind::env:
      return "env";
  }
  return "unknown";
}

Env environment_map() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

LaunchInfo detect_launch(const Env& env, const std::string& launcher) {
  if (launcher == "threads") return LaunchInfo{LaunchKind::threads, 0, 1, 0, "launcher threads"};
  if (launcher == "mpi") {
    // The plugin asks MPI itself; the variables only tell which rank prints what before that.
    if (auto info = first_family(env, mpi_families, LaunchKind::mpi)) return *info;
    return LaunchInfo{LaunchKind::mpi, 0, 1, 0, "launcher mpi (no launcher variables: a singleton MPI run)"};
  }
  if (launcher == "env") {
    if (auto info = first_family(env, env_families, LaunchKind::env)) return *info;
    throw UsageError("launcher env needs RANK and WORLD_SIZE (torchrun) or SLURM_PROCID and SLURM_NTASKS (srun) "
                     "in the environment");
  }
  if (launcher != "auto")
    throw UsageError(fmt::format("launcher: '{}' is not one of auto, threads, mpi, env", launcher));
  if (auto info = first_family(env, mpi_families, LaunchKind::mpi)) return *info;
  if (any_mpi_variable(env)) return LaunchInfo{LaunchKind::mpi, 0, 1, 0, "MPI launcher variables (rank from MPI)"};
  if (auto info = first_family(env, env_families, LaunchKind::env)) {
    // A single-task SLURM allocation running ridge directly is not a multi-process launch.
    if (info->world_size > 1 || info->source.rfind("RANK", 0) == 0) return *info;
  }
  return LaunchInfo{LaunchKind::threads, 0, 1, 0, "no launcher variables: one process, one thread per GPU"};
}

std::string force_nccl_nvls_off() {
  // The first call (ridge's main) sees what the user had set; later calls repeat its note.
  static std::once_flag once;
  static std::string note;
  std::call_once(once, [] {
    const char* before = std::getenv(nccl_nvls_variable);
    if (before && std::string(before) != "0")
      note = fmt::format("{} was '{}': ridge sets it to 0 (NVLink multicast stays off on shared machines)",
                         nccl_nvls_variable, before);
  });
  ::setenv(nccl_nvls_variable, "0", 1);
  return note;
}

std::vector<std::string> with_nccl_nvls_off(std::vector<std::string> env) {
  const std::string prefix = std::string(nccl_nvls_variable) + "=";
  std::erase_if(env, [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  env.push_back(prefix + "0");
  return env;
}

std::vector<std::string> nccl_library_candidates(const Env& env, const std::vector<std::string>& python_site_dirs) {
  if (auto explicit_path = lookup(env, "RIDGE_NCCL_LIBRARY")) return {*explicit_path};
  std::vector<std::string> out = {"libnccl.so.2"};
  auto add = [&](const std::filesystem::path& site) {
    const std::string path = (site / "nvidia" / "nccl" / "lib" / "libnccl.so.2").string();
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  };
  if (auto venv = lookup(env, "VIRTUAL_ENV")) {
    std::error_code ec;
    const std::filesystem::path lib = std::filesystem::path(*venv) / "lib";
    if (std::filesystem::is_directory(lib, ec))
      for (const auto& entry : std::filesystem::directory_iterator(lib, ec))
        if (entry.path().filename().string().rfind("python", 0) == 0) add(entry.path() / "site-packages");
  }
  for (const auto& dir : python_site_dirs) add(dir);
  return out;
}

std::vector<std::string> python_site_packages() {
  // The wheel lives wherever the user's python3 keeps its packages; ask it rather than guess.
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(
      ::popen("python3 -c 'import site,sys; print(\"\\n\".join(site.getsitepackages()+[site.getusersitepackages()]))' "
              "2>/dev/null",
              "r"),
      ::pclose);
  std::vector<std::string> out;
  if (!pipe) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe.get())) {
    std::string s = line;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

std::string nccl_version_text(int code) {
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100 + patch.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

std::vector<std::string> mpi_plugin_candidates(const Env& env, const std::string& executable_dir) {
  if (auto explicit_path = lookup(env, "RIDGE_MPI_PLUGIN")) return {*explicit_path};
  std::vector<std::string> out;
  if (!executable_dir.empty()) {
    const std::filesystem::path dir(executable_dir);
    out.push_back((dir / "libridge_mpi.so").string());
    out.push_back((dir.parent_path() / "lib" / "libridge_mpi.so").string());
  }
  out.push_back("libridge_mpi.so");
  return out;
}

}  // namespace ridge
