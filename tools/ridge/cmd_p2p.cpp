// `ridge p2p`: GPU-to-GPU bandwidth and latency matrices (copy engine and SM copies, one way and both
// ways) and host copies (pinned and pageable), every copy checked. run_p2p (ridge/collectives.hpp)
// does the work; this file prints it.
#include <cmath>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/collectives.hpp"
#include "ridge/format.hpp"
#include "sweep_support.hpp"

namespace ridge::cli {

namespace {

void print_matrix(std::FILE* out, const P2pMatrix& m) {
  fmt::print(out, "\n{}\n{:>8}", m.title, "src\\dst");
  for (int d = 0; d < m.gpus; ++d) fmt::print(out, " {:>9}", fmt::format("GPU {}", d));
  fmt::print(out, "\n");
  for (int s = 0; s < m.gpus; ++s) {
    fmt::print(out, "{:>8}", fmt::format("GPU {}", s));
    for (int d = 0; d < m.gpus; ++d)
      fmt::print(out, " {:>9}", std::isnan(m.value[s][d]) ? std::string("-") : fmt::format("{:.2f}", m.value[s][d]));
    fmt::print(out, "\n");
  }
}

struct P2pCommand {
  P2pOptions options;
  bool no_host = false;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "p2p", "GPU-to-GPU and host copies: bandwidth and latency matrices, copy engine vs SM copies, each copy checked",
    76, [](CLI::App& app) {
      auto c = std::make_shared<P2pCommand>();
      auto& o = c->options;
      app.footer("Bytes are counted once per copy (as nvbandwidth does); both ways counts both directions. With one\n"
                 "GPU the matrix is 1x1: device-local copies. '-' = not measured (no peer access for SM copies;\n"
                 "both ways only between two GPUs).");
      app.add_option("--gpus", o.gpus, "visible GPUs to use (0 = all)")->default_val(o.gpus);
      app.add_option("--bytes", o.bytes, "bytes per bandwidth copy")->default_val(o.bytes);
      app.add_option("--latency-bytes", o.latency_bytes, "bytes per latency copy (graph replay of 20 copies)")
          ->default_val(o.latency_bytes);
      app.add_option("--samples", o.samples, "timed samples per copy (median reported)")->default_val(o.samples);
      app.add_option("--warmup", o.warmup, "untimed copies before sampling")->default_val(o.warmup);
      app.add_flag("--no-host", c->no_host, "skip host-to-device and device-to-host copies");
      c->exports.add_to(app);
      return [c] {
        c->exports.check();
        c->options.host = !c->no_host;
        validate(c->options);  // before the GPU: a bad value is exit 2 anywhere
        std::FILE* out = human_stream(c->exports);
        auto row = [](std::FILE* f, const Record& r) {
          const int src = r.params.value(param_key::src, 0), dst = r.params.value(param_key::dst, 0);
          auto end = [](int g) { return g < 0 ? std::string("host") : fmt::format("GPU {}", g); };
          fmt::print(f, "{:<9} {:<6} -> {:<6} {:<9} {:<9} {:>10} {:>11} {:>10}  checked\n", r.name, end(src), end(dst),
                     r.params.value(param_key::direction, ""), r.params.value(param_key::memory, ""),
                     format_bytes(r.bytes), format_ms(r.summary.median),
                     fmt::format("{:.2f} GB/s", r.bytes_per_s() / 1e9));
          std::fflush(f);
        };
        const P2pRun run = run_p2p(c->options, sweep_callbacks("p2p", out, row));
        for (const auto& m : run.matrices) print_matrix(out, m);
        fmt::print(out, "\n");
        print_findings(out, run.findings);
        fmt::print(out, "{} measurements in {:.1f} s\n", run.records.size(), run.seconds);
        ResultSet set = new_result_set(0);
        set.records = run.records;
        finish_result_set(set, 0);
        c->exports.write(set);
        return 0;
      };
    }});

}  // namespace
}  // namespace ridge::cli
