// `ridge collectives`: NCCL collectives over sizes, each checked before it is timed, with algbw and
// busbw as nccl-tests defines them, knees and a plot. run_collectives (ridge/collectives.hpp) does
// the work; this file prints it.
#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/collectives.hpp"
#include "ridge/format.hpp"
#include "sweep_support.hpp"

namespace ridge::cli {

namespace {

void print_row(std::FILE* out, const Record& r) {
  fmt::print(out, "{:<15} {:<5} {:<13} {:>10} {:>8} {:>11} {:>10} {:>10}  {} {}\n", r.params.value(param_key::op, ""),
             to_string(r.dtype), r.params.value(param_key::placement, ""), format_bytes(r.bytes),
             r.method == Method::graph_replay ? "graph" : "events", format_ms(r.summary.median),
             fmt::format("{:.2f}", extra_key::algbw_bytes_per_s.get(r) / 1e9),
             fmt::format("{:.2f}", extra_key::busbw_bytes_per_s.get(r) / 1e9),
             r.verification == "passed" ? "ok" : r.verification, warning_tags(r));
  std::fflush(out);
}

struct CollectivesCommand {
  CollectivesOptions options;
  std::string svg;
  ExportOptions exports;
};

}  // namespace

namespace {

RIDGE_REGISTER_COMMAND(Command{
    "collectives", "NCCL all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, send/recv: algbw, busbw, knees",
    75, [](CLI::App& app) {
      auto c = std::make_shared<CollectivesCommand>();
      auto& o = c->options;
      app.footer(
          "Ranks: one process drives every visible GPU, one thread each (--launcher threads, the default without a\n"
          "launcher); under `mpirun -np N ridge collectives ...` one process per GPU (MPI through libridge_mpi.so);\n"
          "under torchrun/srun (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS) with --rendezvous DIR. NCCL is loaded at\n"
          "run time (libnccl.so.2, or the nvidia-nccl wheel of python3); NCCL_NVLS_ENABLE is forced to 0.\n"
          "Exit codes: 3 an output was wrong, 4 no GPU, 7 NCCL or the MPI plugin is missing.");
      add_list_option(app, "--ops", o.ops, collective_op_from_string,
                      "comma list: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, send_recv");
      add_sizes_option(app, o.sizes,
                       "bytes per call as nccl-tests counts them (8 B .. 8 GiB): a list, powers (2^20) or ranges "
                       "START:END[:STEP] (a bare STEP multiplies)");
      add_list_option(app, "--dtypes", o.dtypes, dtype_from_string, "comma list of fp32, fp16, bf16, fp64");
      add_list_option(app, "--placement", o.placements, placement_from_string,
                      "out (out-of-place), in (in-place; not alltoall, send_recv), or out,in");
      add_method_option(app, o.method, "timing: auto (graph replay under 1 ms per call, events above), events, graph");
      app.add_option("--samples", o.samples, "timed samples per size (median reported)")->default_val(o.samples);
      app.add_option("--warmup", o.warmup, "untimed calls before sampling")->default_val(o.warmup);
      app.add_option("--launcher", o.launcher, "auto, threads, mpi, env")->default_val(o.launcher);
      app.add_option("--gpus", o.gpus, "threads launch: visible GPUs to use (0 = all)")->default_val(o.gpus);
      app.add_option("--rendezvous", o.rendezvous, "env launch: a folder every rank sees (NCCL id, results)")
          ->type_name("DIR");
      app.add_option("--svg", c->svg, "write busbw (algbw at 1 rank) vs size, with NVLink/PCIe ceilings, to FILE")
          ->type_name("FILE");
      app.add_flag("--quick", o.quick, "all_reduce, all_gather, reduce_scatter at 2^10..2^28 every 16x, 10 samples");
      c->exports.add_to(app);
      return [c] {
        c->exports.check();
        std::FILE* out = human_stream(c->exports);
        bool header = false;
        auto on_record = [&](std::FILE* f, const Record& r) {
          if (!header) {
            fmt::print(f, "\n{:<15} {:<5} {:<13} {:>10} {:>8} {:>11} {:>10} {:>10}  {}\n", "op", "dtype", "placement",
                       "size", "method", "time", "algbw GB/s", "busbw GB/s", "check");
            header = true;
          }
          print_row(f, r);
        };
        const CollectivesRun run = run_collectives(c->options, sweep_callbacks("collectives", out, on_record));
        if (!run.root) return 0;  // rank 0 prints and writes for everyone
        fmt::print(out, "\nNCCL {} ({}); {} rank{} launched by {} ({})\n", run.nccl_version, run.nccl_library,
                   run.ranks, run.ranks == 1 ? "" : "s", to_string(run.launch.kind), run.launch.source);
        fmt::print(out, "NCCL_NVLS_ENABLE=0 (NVLink multicast off){}\n", run.nvls_note.empty() ? "" : "; " + run.nvls_note);
        for (const auto& info : run.rank_info)
          fmt::print(out, "  rank {} on {} GPU {} ({}), SM clock {:.0f} -> {:.0f} MHz\n", info.rank, info.hostname,
                     info.device.index, info.device.name, info.clocks_start.sm_mhz, info.clocks_end.sm_mhz);
        for (const auto& line : collective_definitions(run.plan.options.ops, run.ranks)) fmt::print(out, "{}\n", line);
        fmt::print(out, "time = mean over ranks of each sample; every size's output checked on every rank first\n\n");
        print_findings(out, run.findings);
        if (!c->svg.empty() && !run.plot.series.empty()) {
          write_plot(c->svg, run.plot);
          fmt::print(out, "plot written to {}\n", c->svg);
        }
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
