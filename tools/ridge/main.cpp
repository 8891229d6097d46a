// ridge: measure GPU work honestly and explain the number.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/collectives.hpp"
#include "ridge/errors.hpp"
#include "ridge/version.hpp"

namespace {

std::string version_text() {
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  cudaGetLastError();
  auto cuda = [](int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : std::string("none"); };
  return fmt::format("ridge {} (git {})\nbuilt with nvcc {}; CUDA runtime {}; driver supports CUDA {}",
                     ridge::tool_version(), ridge::git_sha(), ridge::build_cuda_version(), cuda(runtime),
                     cuda(driver));
}

// What to print for a library error: a usage error gets the option that sets the field it names,
// for the command that was given (the library names fields, not flags).
using GivenCommands = std::vector<std::pair<CLI::App*, const ridge::cli::Command*>>;
std::string error_text(const ridge::Error& e, const GivenCommands& given) {
  if (dynamic_cast<const ridge::UsageError*>(&e) == nullptr) return e.what();
  for (const auto& [sub, command] : given)
    if (sub->parsed()) return ridge::cli::naming_option(e.what(), *sub, *command);
  return e.what();
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can load NCCL or start a child: NVLink multicast stays off (README).
  ridge::force_nccl_nvls_off();
  ridge::cli::set_argv(argc, argv);
  CLI::App app{
      "ridge: measure GPU work honestly and explain the number.\n"
      "Times are medians of many samples after warm-up, on the GPU's clock unless a command says otherwise.\n"
      "Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 a result failed verification, 4 no usable GPU,\n"
      "5 `ridge compare` found a significant regression beyond its threshold, 6 `ridge compare` compared no record,\n"
      "7 a library loaded at run time (NCCL, ridge's MPI plugin) is missing."};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "print ridge's version, git sha and CUDA versions");

  auto& all = ridge::cli::commands();
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  GivenCommands given;
  for (auto& command : all) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    runners.emplace_back(sub, command.setup(*sub));
    given.emplace_back(sub, &command);
  }
  ridge::cli::reject_negative_unsigned(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(ridge::ExitCode::usage_error);
  } catch (const ridge::Error& e) {  // a setup step validated something and failed
    std::fprintf(stderr, "ridge: error: %s\n", error_text(e, given).c_str());
    return static_cast<int>(e.code());
  }
  if (show_version) {
    std::printf("%s\n", version_text().c_str());
    return 0;
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
    std::fprintf(stdout, "%s", app.help().c_str());
    return static_cast<int>(ridge::ExitCode::usage_error);
  } catch (const ridge::NoGpuError& e) {  // the library says why; the commands that still work are the CLI's to name
    std::fprintf(stderr,
                 "ridge: error: %s\n  Check `nvidia-smi`. Model-only commands still work without one: "
                 "`ridge roofline --device h100-sxm`, `ridge amdahl`, `ridge report` (model-only).\n",
                 e.what());
    return static_cast<int>(e.code());
  } catch (const ridge::Error& e) {
    std::fprintf(stderr, "ridge: error: %s\n", error_text(e, given).c_str());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ridge: error: out of host memory; try smaller sizes\n");
    return static_cast<int>(ridge::ExitCode::runtime_error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ridge: error: %s\n", e.what());
    return static_cast<int>(ridge::ExitCode::runtime_error);
  }
}
