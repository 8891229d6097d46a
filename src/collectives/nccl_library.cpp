// NCCL loaded with dlopen: builds and CI need neither NCCL nor a GPU.
#include "collectives/nccl_library.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::detail::nccl {

namespace {

std::string& nvls_note_storage() {
  static std::string note;
  return note;
}

template <typename Fn>
bool bind(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

Library open_library() {
  nvls_note_storage() = force_nccl_nvls_off();
  const auto env = environment_map();
  const auto candidates = nccl_library_candidates(env, env.count("RIDGE_NCCL_LIBRARY") ? std::vector<std::string>{}
                                                                                         : python_site_packages());
  std::string tried;
  for (const auto& path : candidates) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char* why = ::dlerror();
      tried += fmt::format("\n  {}: {}", path, why ? why : "not found");
      continue;
    }
    Library lib;
    lib.path = path;
    bool ok = bind(handle, "ncclGetVersion", lib.get_version) && bind(handle, "ncclGetUniqueId", lib.get_unique_id) &&
              bind(handle, "ncclCommInitRank", lib.comm_init_rank) &&
              bind(handle, "ncclCommInitAll", lib.comm_init_all) &&
              bind(handle, "ncclCommDestroy", lib.comm_destroy) && bind(handle, "ncclCommAbort", lib.comm_abort) &&
              bind(handle, "ncclGetErrorString", lib.get_error_string) &&
              bind(handle, "ncclAllReduce", lib.all_reduce) && bind(handle, "ncclBroadcast", lib.broadcast) &&
              bind(handle, "ncclReduce", lib.reduce) && bind(handle, "ncclAllGather", lib.all_gather) &&
              bind(handle, "ncclReduceScatter", lib.reduce_scatter) && bind(handle, "ncclSend", lib.send) &&
              bind(handle, "ncclRecv", lib.recv) && bind(handle, "ncclGroupStart", lib.group_start) &&
              bind(handle, "ncclGroupEnd", lib.group_end);
    if (!ok) {
      tried += fmt::format("\n  {}: opened, but lacks NCCL's symbols (not NCCL >= 2.7?)", path);
      ::dlclose(handle);
      continue;
    }
    bind(handle, "ncclGetLastError", lib.get_last_error);
    if (lib.get_version(&lib.version) != success) lib.version = 0;
    return lib;  // the handle stays open for the life of the process
  }
  throw MissingLibraryError(fmt::format(
      "NCCL is not available: no libnccl.so.2 could be loaded. Tried:{}\nInstall it (Debian/Ubuntu: apt install "
      "libnccl2; or pip install nvidia-nccl-cu13 into the python3 on PATH), or point RIDGE_NCCL_LIBRARY at "
      "libnccl.so.2",
      tried));
}

}  // namespace

void Library::check(Result result, const char* call, Comm comm) const {
  if (result == success) return;
  std::string text = get_error_string ? get_error_string(result) : "unknown error";
  if (get_last_error) {
    const char* last = get_last_error(comm);
    if (last && *last) text += fmt::format(" ({})", last);
  }
  std::string hint;
  switch (result) {
    case 1:
      hint = "a CUDA call inside NCCL failed: check the GPUs (ridge info) and that each rank has its own GPU";
      break;
    case 2:
      hint = "a system call failed (network, shared memory, /dev/shm size): rerun with NCCL_DEBUG=WARN to see which";
      break;
    case 3:
      hint = "NCCL hit an internal error: rerun with NCCL_DEBUG=INFO and report it with that output";
      break;
    case 4:
    case 5:
      hint = "NCCL refused the call's arguments: this is a ridge bug, please report it with the command line";
      break;
    case 6:
      hint = "another rank failed or went away: look at the other ranks' output";
      break;
    default:
      hint = "rerun with NCCL_DEBUG=WARN for NCCL's own explanation";
  }
  throw Error(fmt::format("{} failed: {} (ncclResult {}). {}", call, text, result, hint));
}

const Library& load() {
  static std::once_flag once;
  static std::optional<Library> library;
  static std::exception_ptr failure;
  std::call_once(once, [] {
    try {
      library = open_library();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
  return *library;
}

const std::string& nvls_note() { return nvls_note_storage(); }

DataType data_type(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return float32;
    case DType::fp16:
      return float16;
    case DType::bf16:
      return bfloat16;
    case DType::fp64:
      return float64;
    default:
      throw UsageError(fmt::format("NCCL collectives in ridge run fp32, fp16, bf16 or fp64, not {}", to_string(dtype)));
  }
}

}  // namespace ridge::detail::nccl
