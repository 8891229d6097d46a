// trace_target: the tracer's known workload as a program of its own, traced by injection in the
// GPU tests (`ridge trace -- trace_target`). Options:
//   --exit-code N   exit with N after the workload (exit-code pass-through)
//   --abort         call abort() after the workload (the trace must still be written)
//   --many-kernels N  instead of the workload, launch N empty kernels on one stream (tracer
//                     throughput and dropped records: bench/trace_pytorch.sh)
//   --graph N       instead of the workload, launch N times a CUDA graph of 4 empty kernels
//                   (graph kernels must join their cudaGraphLaunch call)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "ridge/cuda_check.hpp"
#include "ridge/probes.hpp"
#include "trace_workload.hpp"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  bool abort_at_end = false;
  long many = 0, graphs = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--exit-code") == 0 && i + 1 < argc) {
      exit_code = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--abort") == 0) {
      abort_at_end = true;
    } else if (std::strcmp(argv[i], "--many-kernels") == 0 && i + 1 < argc) {
      many = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--graph") == 0 && i + 1 < argc) {
      graphs = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: trace_target [--exit-code N] [--abort] [--many-kernels N] [--graph N]\n");
      return 2;
    }
  }
  int wrong = 0;
  try {
    if (many > 0) return many_kernels(many);
    if (graphs > 0) return graph_launches(graphs);
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
  return exit_code;
}
