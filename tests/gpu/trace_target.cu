// trace_target: the tracer's known workload as a program of its own, traced by injection in the
// GPU tests (`ridge trace -- trace_target`). Options:
//   --exit-code N   exit with N after the workload (exit-code pass-through)
//   --abort         call abort() after the workload (the trace must still be written)
//   --crash segv|abort|thread-exit  after the workload, fault on a null pointer, call abort(), or
//                   call exit(5) from a second thread while main waits: the trace must hold the
//                   workload's kernels all the same
//   --wait-for-signal  after the workload, print "ready" and wait (at most 120 s, then exit 4)
//                   for a signal to end the program (`ridge trace` forwards SIGINT/SIGTERM to it)
//   --many-kernels N  instead of the workload, launch N empty kernels on one stream (tracer
//                     throughput and dropped records: bench/trace_vs_torch_profiler.sh)
//   --graph N       instead of the workload, launch N times a CUDA graph of 4 empty kernels
//                   (graph kernels must join their cudaGraphLaunch call)
//   --numbered-steps N  instead of the workload, N NVTX steps whose kernels' grids tell their step
//                   (`ridge trace --schedule` keeps only the active steps: trace_workload.hpp)
//   --identical-steps N  instead of the workload, N NVTX steps that each launch the same copy
//                   kernels (`ridge trace --counters --counters-steps` replays by steps: trace_workload.hpp)
//   --profiler-windows  instead of the workload, launch kernels before, inside and after two
//                   profiler windows (cudaProfilerStart/Stop, then cuProfilerStart/Stop), with a
//                   start inside a window and a stop between them that must change nothing
//                   (`ridge trace --profiler-range` keeps only the windows: trace_workload.hpp)
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "measure/cuda/probes.hpp"
#include "trace_workload.hpp"

__global__ void outside_window_kernel() {}

/// Spins `ns` on the GPU's global timer.
__global__ void inside_window_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

namespace {

void launch_outside(cudaStream_t stream, int count) {
  for (int i = 0; i < count; ++i) {
    outside_window_kernel<<<1, 1, 0, stream>>>();
    RIDGE_CHECK_LAUNCH();
  }
  RIDGE_CHECK(cudaStreamSynchronize(stream));
}

void launch_inside(cudaStream_t stream, int count, double ns) {
  for (int i = 0; i < count; ++i) {
    inside_window_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(ns));
    RIDGE_CHECK_LAUNCH();
  }
}

/// The driver's cuProfilerStart/Stop, from the driver the runtime has loaded (this program links
/// the runtime statically and no driver library).
using DriverCall = CUresult (*)();
DriverCall driver_call(const char* name) {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  auto call = cuda != nullptr ? reinterpret_cast<DriverCall>(dlsym(cuda, name)) : nullptr;
  if (call == nullptr) throw ridge::Error(std::string("cannot find ") + name + " in the loaded CUDA driver");
  return call;
}

int profiler_windows() {
  namespace w = trace_workload::profiler_windows;
  cudaStream_t stream = nullptr;
  RIDGE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  launch_outside(stream, w::before);

  // Window 1 (runtime API), with a second start inside it that must change nothing.
  RIDGE_CHECK(cudaProfilerStart());
  nvtxRangePushA(w::window_range);
  launch_inside(stream, 2, 10e3);
  RIDGE_CHECK(cudaProfilerStart());
  launch_inside(stream, w::window1 - 2, 10e3);
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  nvtxRangePop();
  RIDGE_CHECK(cudaProfilerStop());

  RIDGE_CHECK(cudaProfilerStop());  // a stop while stopped: nothing
  launch_outside(stream, w::between);

  // Window 2 (driver API), stopped while its kernels still run.
  const DriverCall start = driver_call("cuProfilerStart"), stop = driver_call("cuProfilerStop");
  RIDGE_CHECK(start());
  launch_inside(stream, w::window2, w::window2_spin_ns);
  RIDGE_CHECK(stop());
  RIDGE_CHECK(cudaStreamSynchronize(stream));

  launch_outside(stream, w::after);
  RIDGE_CHECK(cudaStreamDestroy(stream));
  std::printf("trace_target: %d kernels inside 2 profiler windows, %d outside\n", w::inside, w::outside);
  return 0;
}

int many_kernels(long count) {
  cudaStream_t stream = nullptr;
  RIDGE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ridge::launch_empty(stream);  // module load and context warm-up outside the timed loop
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < count; ++i) ridge::launch_empty(stream);
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RIDGE_CHECK(cudaStreamDestroy(stream));
  std::printf("trace_target: %ld empty kernels launched and finished in %.3f s (%.2f us per kernel)\n", count, seconds,
              seconds / static_cast<double>(count) * 1e6);
  return 0;
}

int graph_launches(long count) {
  cudaStream_t stream = nullptr;
  RIDGE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  RIDGE_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 4; ++i) ridge::launch_empty(stream);
  RIDGE_CHECK(cudaStreamEndCapture(stream, &graph));
  RIDGE_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (long i = 0; i < count; ++i) RIDGE_CHECK(cudaGraphLaunch(exec, stream));
  RIDGE_CHECK(cudaStreamSynchronize(stream));
  RIDGE_CHECK(cudaGraphExecDestroy(exec));
  RIDGE_CHECK(cudaGraphDestroy(graph));
  RIDGE_CHECK(cudaStreamDestroy(stream));
  std::printf("trace_target: %ld graph launches of 4 kernels (%ld kernels)\n", count, 4 * count);
  return 0;
}

/// Ends the program as `how` says, after its kernels ran: what a traced program may do to us.
int crash(const char* how) {
  if (std::strcmp(how, "segv") == 0) {
    // A store to a page with no access rights: a real fault, not undefined behaviour the compiler
    // may delete (it did delete a store through a null pointer: the program then ran on).
    void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
      std::perror("trace_target: mmap");
      return 1;
    }
    *static_cast<volatile int*>(page) = 1;
  } else if (std::strcmp(how, "abort") == 0) {
    std::abort();
  } else if (std::strcmp(how, "thread-exit") == 0) {
    std::thread([] { std::exit(5); }).join();  // exit runs the atexit handlers in this thread
  }
  std::fprintf(stderr, "trace_target: --crash %s did not end the program\n", how);
  return 1;
}

/// Says "ready" once the kernels are done, then waits for a signal's default action to end us.
int wait_for_signal() {
  std::printf("ready\n");
  std::fflush(stdout);
  for (int i = 0; i < 1200; ++i) ::usleep(100'000);
  std::fprintf(stderr, "trace_target: no signal came within 120 s\n");
  return 4;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  bool abort_at_end = false;
  long many = 0, graphs = 0, numbered = 0, identical = 0;
  bool windows = false, wait = false;
  const char* crash_how = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--exit-code") == 0 && i + 1 < argc) {
      exit_code = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--abort") == 0) {
      abort_at_end = true;
    } else if (std::strcmp(argv[i], "--many-kernels") == 0 && i + 1 < argc) {
      many = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--graph") == 0 && i + 1 < argc) {
      graphs = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--profiler-windows") == 0) {
      windows = true;
    } else if (std::strcmp(argv[i], "--numbered-steps") == 0 && i + 1 < argc) {
      numbered = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--identical-steps") == 0 && i + 1 < argc) {
      identical = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--crash") == 0 && i + 1 < argc) {
      crash_how = argv[++i];
    } else if (std::strcmp(argv[i], "--wait-for-signal") == 0) {
      wait = true;
    } else {
      std::fprintf(stderr, "usage: trace_target [--exit-code N] [--abort] [--crash segv|abort|thread-exit] "
                           "[--wait-for-signal] [--many-kernels N] [--graph N] [--profiler-windows] "
                           "[--numbered-steps N] [--identical-steps N]\n");
      return 2;
    }
  }
  int wrong = 0;
  try {
    if (many > 0) return many_kernels(many);
    if (graphs > 0) return graph_launches(graphs);
    if (windows) return profiler_windows();
    if (numbered > 0) return trace_workload::numbered_steps::run(static_cast<int>(numbered));
    if (identical > 0) return trace_workload::identical_steps::run(static_cast<int>(identical));
    wrong = trace_workload::run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_target: %s\n", e.what());
    return 1;
  }
  std::printf("trace_target: %d kernels in %d steps, output %s\n", trace_workload::total_kernels,
              trace_workload::steps, wrong == 0 ? "correct" : "WRONG");
  std::fflush(stdout);
  if (wrong != 0) return 3;
  if (abort_at_end) std::abort();
  if (crash_how != nullptr) return crash(crash_how);
  if (wait) return wait_for_signal();
  return exit_code;
}
