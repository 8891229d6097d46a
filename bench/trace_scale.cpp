// trace_scale: writes the synthetic trace of a long training run that bench/trace_scale.sh
// analyzes: STEPS NVTX "step" ranges of KERNELS kernels each, every kernel launched by a
// cudaLaunchKernel call with its correlation id, on one stream, names from a set of 24. CPU only.
// Figures: results/cpu/trace_scale/ (with the command).
//
//   trace_scale --steps N --kernels-per-step K [--launches yes|no] --out FILE     (FILE.pftrace: Perfetto's format)
// --launches no writes the kernels and step ranges only (no launch calls, so no flow arrows either):
// the shape of the 310 MB trace of 1M kernels that issue 27 states its 5 s target on.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <fmt/format.h>

#include "ridge/trace/events.hpp"
#include "ridge/trace/trace_file.hpp"

namespace {

ridge::trace::Trace synthetic_run(std::size_t steps, std::size_t kernels_per_step, bool launches) {
  using namespace ridge::trace;
  Trace t;
  t.process_id = 4242;
  t.command = "python train.py (synthetic)";
  t.device_names[0] = "synthetic GPU";
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<Nanoseconds> kernel_ns(2'000, 12'000), launch_gap_ns(1'500, 6'000);
  std::vector<std::uint32_t> names;
  for (int i = 0; i < 24; ++i)
    names.push_back(t.strings.intern(fmt::format("void at::native::kernel_{}<float, {}>(at::TensorIteratorBase&, float*)", i, 128 << (i % 3))));
  const std::uint32_t launch = t.strings.intern("cudaLaunchKernel"), step = t.strings.intern("step");
  const std::uint32_t sync = t.strings.intern("cudaStreamSynchronize");
  Nanoseconds host = 1'000'000'000, gpu = host;
  std::uint32_t correlation = 1;
  t.collection_start = host - 1000;
  t.kernels.reserve(steps * kernels_per_step);
  t.api_calls.reserve(steps * (kernels_per_step + 1));
  for (std::size_t s = 0; s < steps; ++s) {
    NvtxRange r;
    r.name = step;
    r.process = t.process_id;
    r.thread = t.process_id;
    r.start = host;
    for (std::size_t k = 0; k < kernels_per_step; ++k) {
      ApiCall a;
      a.name = launch;
      a.process = t.process_id;
      a.thread = t.process_id;
      a.start = host;
      a.end = host + 1'800;
      a.correlation = correlation;
      if (launches) t.api_calls.push_back(a);
      Kernel kernel;
      kernel.name = names[(s * 7 + k) % names.size()];
      kernel.stream = 7;
      kernel.start = std::max(gpu, a.end + 2'500);
      kernel.end = kernel.start + kernel_ns(rng);
      kernel.grid = {static_cast<std::int32_t>(1024 + k), 1, 1};
      kernel.block = {256, 1, 1};
      kernel.correlation = correlation++;
      kernel.registers_per_thread = 32;
      t.kernels.push_back(kernel);
      gpu = kernel.end;
      host = a.end + launch_gap_ns(rng);
    }
    ApiCall wait;  // the step ends when the host has waited for its last kernel
    wait.name = sync;
    wait.process = wait.thread = t.process_id;
    wait.start = host;
    wait.end = std::max(host, gpu) + 3'000;
    wait.correlation = correlation++;
    if (launches) t.api_calls.push_back(wait);
    host = wait.end + 1'000;
    r.end = host;
    t.ranges.push_back(r);
    host += 20'000;  // between steps: the data loader
  }
  t.collection_stop = host;
  finalize(t);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t steps = 5'000, kernels = 200;
  std::string out;
  bool launches = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps") steps = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--kernels-per-step") kernels = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--out") out = argv[i + 1];
    else if (flag == "--launches") launches = std::string(argv[i + 1]) != "no";
    else {
      std::fprintf(stderr, "usage: trace_scale [--steps N] [--kernels-per-step K] [--launches yes|no] --out FILE\n");
      return 2;
    }
  }
  if (out.empty() || steps == 0 || kernels == 0) {
    std::fprintf(stderr, "usage: trace_scale [--steps N] [--kernels-per-step K] [--launches yes|no] --out FILE(.json|.pftrace)\n");
    return 2;
  }
  const ridge::trace::Trace t = synthetic_run(steps, kernels, launches);
  ridge::trace::write_trace(t, out);
  std::printf("%s: %zu steps x %zu kernels = %zu kernels, %zu events\n", out.c_str(), steps, kernels, t.kernels.size(),
              t.event_count());
  return 0;
}
