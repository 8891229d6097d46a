// The CPU parts of `ridge collectives` and `ridge p2p`: nccl-tests' definitions, shapes, the
// expected outputs (checked against a host simulation of each collective over n ranks), launch
// detection, NVLS, the library lookups, the NCCL ABI declarations, combining ranks, knees, plots.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "collectives/nccl_library.hpp"
#include "collectives/rendezvous.hpp"
#include "ridge/collectives.hpp"
#include "ridge/errors.hpp"
#include "usage_message.hpp"

#if __has_include(<nccl.h>)
#include <nccl.h>
#define RIDGE_HAVE_NCCL_H 1
#endif

namespace ridge {
namespace {

TEST(CollectivesBusFactor, NcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::reduce_scatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::alltoall, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::send_recv, 8), 1.0);
  // World size 1: no byte crosses a link.
  EXPECT_EQ(bus_factor(CollectiveOp::all_reduce, 1), 0.0);
  EXPECT_EQ(bus_factor(CollectiveOp::all_gather, 1), 0.0);
  EXPECT_THROW(bus_factor(CollectiveOp::all_reduce, 0), UsageError);
  EXPECT_EQ(bus_factor_formula(CollectiveOp::all_reduce), "2(n-1)/n");
}

TEST(CollectivesBusFactor, RatesFromTime) {
  // 1 GiB all_reduce in 10 ms over 8 ranks: algbw 107.4 GB/s, busbw x 1.75.
  const auto r = collective_rates(CollectiveOp::all_reduce, double(1 << 30), 0.010, 8);
  EXPECT_NEAR(r.algbw_bytes_per_s, 107.374e9, 1e6);
  EXPECT_NEAR(r.busbw_bytes_per_s, r.algbw_bytes_per_s * 1.75, 1);
  EXPECT_THROW(collective_rates(CollectiveOp::all_reduce, 1, 0, 8), UsageError);
}

TEST(CollectivesNames, RoundTripAndAliases) {
  for (auto op : all_collective_ops()) EXPECT_EQ(collective_op_from_string(to_string(op)), op);
  EXPECT_EQ(collective_op_from_string("allreduce"), CollectiveOp::all_reduce);
  EXPECT_EQ(collective_op_from_string("sendrecv"), CollectiveOp::send_recv);
  EXPECT_THROW(collective_op_from_string("allscatter"), UsageError);
}

TEST(CollectivesShape, SizesAsNcclTestsCountThem) {
  auto s = collective_shape(CollectiveOp::all_gather, 1 << 20, DType::fp32, 4);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->recv_count, (1 << 20) / 4);
  EXPECT_EQ(s->send_count, s->recv_count / 4);
  EXPECT_EQ(s->bytes, double(1 << 20));
  s = collective_shape(CollectiveOp::reduce_scatter, 1000, DType::fp32, 3);  // 250 elements -> 249
  ASSERT_TRUE(s);
  EXPECT_EQ(s->send_count, 249);
  EXPECT_EQ(s->recv_count, 83);
  EXPECT_EQ(s->bytes, 996.0);
  // 8 bytes of fp32 over 4 ranks: less than an element each.
  EXPECT_FALSE(collective_shape(CollectiveOp::alltoall, 8, DType::fp32, 4));
  s = collective_shape(CollectiveOp::all_reduce, 8, DType::fp64, 4);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->send_count, 1);
  EXPECT_FALSE(collective_shape(CollectiveOp::all_reduce, 1, DType::fp16, 1));
}

TEST(CollectivesDtypes, OnlyWhatNcclReduces) {
  CollectivesOptions o;
  o.dtypes = {DType::fp32, DType::bf16, DType::fp32};
  EXPECT_EQ(plan_collectives(o).options.dtypes, (std::vector<DType>{DType::fp32, DType::bf16}));
  for (DType d : {DType::fp8_e4m3, DType::tf32}) {
    o.dtypes = {d};
    EXPECT_THROW(plan_collectives(o), UsageError) << to_string(d);
  }
}

// Each collective simulated on the host over n ranks from the fill, compared with the expected
// values the GPU check uses: the check is right for n GPUs without needing them.
std::vector<std::vector<double>> simulate(CollectiveOp op, int n, std::int64_t chunk) {
  const std::int64_t count = (op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter ||
                              op == CollectiveOp::alltoall)
                                 ? chunk * n
                                 : chunk;
  const std::int64_t send_count = op == CollectiveOp::all_gather ? chunk : count;
  std::vector<std::vector<double>> send(n, std::vector<double>(send_count));
  for (int r = 0; r < n; ++r)
    for (std::int64_t i = 0; i < send_count; ++i) send[r][i] = collective_fill_value(r, i);
  std::vector<std::vector<double>> out(n);
  for (int r = 0; r < n; ++r) {
    auto& o = out[r];
    switch (op) {
      case CollectiveOp::all_reduce:
      case CollectiveOp::reduce:
        o.assign(count, 0);
        for (int k = 0; k < n; ++k)
          for (std::int64_t i = 0; i < count; ++i) o[i] += send[k][i];
        break;
      case CollectiveOp::all_gather:
        for (int k = 0; k < n; ++k) o.insert(o.end(), send[k].begin(), send[k].end());
        break;
      case CollectiveOp::reduce_scatter:
        o.assign(chunk, 0);
        for (int k = 0; k < n; ++k)
          for (std::int64_t i = 0; i < chunk; ++i) o[i] += send[k][r * chunk + i];
        break;
      case CollectiveOp::broadcast:
        o = send[0];
        break;
      case CollectiveOp::alltoall:
        for (int k = 0; k < n; ++k) o.insert(o.end(), send[k].begin() + r * chunk, send[k].begin() + (r + 1) * chunk);
        break;
      case CollectiveOp::send_recv:
        o = send[(r + n - 1) % n];
        break;
    }
  }
  return out;
}

TEST(CollectivesExpected, MatchesAHostSimulationForEveryOpAndRankCount) {
  for (auto op : all_collective_ops())
    for (int n : {1, 2, 3, 8})
      for (std::int64_t chunk : {1, 7, 40}) {
        const auto out = simulate(op, n, chunk);
        for (int r = 0; r < n; ++r)
          for (std::int64_t i = 0; i < static_cast<std::int64_t>(out[r].size()); ++i) {
            const auto want = collective_expected_value(op, r, n, chunk, i);
            if (op == CollectiveOp::reduce && r != 0) {
              EXPECT_FALSE(want);
              continue;
            }
            ASSERT_TRUE(want);
            ASSERT_EQ(*want, out[r][i]) << to_string(op) << " n=" << n << " rank " << r << " [" << i << "]";
          }
      }
}

TEST(CollectivesExpected, FillIsSmallExactIntegersAndNotConstant) {
  int zeros = 0;
  for (int i = 0; i < 900; ++i) {
    const double v = collective_fill_value(3, i);
    EXPECT_GE(v, -4);
    EXPECT_LE(v, 4);
    EXPECT_EQ(v, std::floor(v));
    zeros += v == 0;
  }
  EXPECT_GT(zeros, 50);
  EXPECT_LT(zeros, 150);
  // No shift of up to 4096 elements (a block or chunk landing off) reproduces the fill.
  for (int shift = 1; shift <= 4096; ++shift) {
    bool differs = false;
    for (int i = 0; i < 2048 && !differs; ++i) differs = collective_fill_value(0, i) != collective_fill_value(0, i + shift);
    ASSERT_TRUE(differs) << "the fill repeats after " << shift << " elements";
  }
  // A rank that returned its own data instead of the sum would be caught.
  EXPECT_NE(*collective_expected_value(CollectiveOp::all_reduce, 1, 4, 8, 5), collective_fill_value(1, 5));
  EXPECT_THROW(collective_expected_value(CollectiveOp::all_reduce, 4, 4, 8, 0), UsageError);
}

TEST(CollectivesLaunch, DetectsMpiTorchrunSlurmAndThreads) {
  auto info = detect_launch({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(info.kind, LaunchKind::mpi);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  info = detect_launch({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(info.kind, LaunchKind::mpi);
  EXPECT_EQ(info.local_rank, 0);
  info = detect_launch({{"PMIX_RANK", "1"}});  // rank only: MPI says the rest
  EXPECT_EQ(info.kind, LaunchKind::mpi);
  info = detect_launch({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}});
  EXPECT_EQ(info.kind, LaunchKind::env);
  EXPECT_EQ(info.local_rank, 1);
  info = detect_launch({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(info.kind, LaunchKind::env);
  EXPECT_EQ(info.rank, 5);
  // One SLURM task running ridge directly drives its GPUs with threads.
  EXPECT_EQ(detect_launch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}).kind, LaunchKind::threads);
  EXPECT_EQ(detect_launch({}).kind, LaunchKind::threads);
  EXPECT_EQ(detect_launch({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, "threads").kind, LaunchKind::threads);
  EXPECT_THROW(detect_launch({}, "env"), UsageError);
  EXPECT_THROW(detect_launch({}, "slurm"), UsageError);
  EXPECT_THROW(detect_launch({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), UsageError);
  EXPECT_THROW(detect_launch({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), UsageError);
}

TEST(CollectivesNvls, ForcedOffInTheProcessAndInChildEnvironments) {
  ::setenv(nccl_nvls_variable, "1", 1);
  force_nccl_nvls_off();
  ASSERT_NE(std::getenv(nccl_nvls_variable), nullptr);
  EXPECT_STREQ(std::getenv(nccl_nvls_variable), "0");
  const auto env = with_nccl_nvls_off({"PATH=/bin", "NCCL_NVLS_ENABLE=1", "NCCL_NVLS_ENABLE=2"});
  EXPECT_EQ(std::count(env.begin(), env.end(), std::string("NCCL_NVLS_ENABLE=0")), 1);
  EXPECT_EQ(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.rfind("NCCL_NVLS", 0) == 0; }), 1);
  EXPECT_EQ(env.front(), "PATH=/bin");
}

TEST(CollectivesLibraries, NcclLookupOrder) {
  auto c = nccl_library_candidates({}, {"/site/a", "/site/b"});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "libnccl.so.2");
  EXPECT_EQ(c[1], "/site/a/nvidia/nccl/lib/libnccl.so.2");
  c = nccl_library_candidates({{"RIDGE_NCCL_LIBRARY", "/x/libnccl.so.2"}}, {"/site/a"});
  EXPECT_EQ(c, std::vector<std::string>{"/x/libnccl.so.2"});
  EXPECT_EQ(nccl_version_text(22805), "2.28.5");
  const auto m = mpi_plugin_candidates({}, "/opt/ridge/bin");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], "/opt/ridge/bin/libridge_mpi.so");
  EXPECT_EQ(m[1], "/opt/ridge/lib/libridge_mpi.so");
}

#ifdef RIDGE_HAVE_NCCL_H
// ridge declares the NCCL ABI it calls itself; where nccl.h exists, the two must agree.
static_assert(sizeof(detail::nccl::UniqueId) == sizeof(ncclUniqueId));
static_assert(sizeof(ncclResult_t) == sizeof(detail::nccl::Result) && sizeof(ncclDataType_t) == sizeof(int));
static_assert(int{detail::nccl::float32} == int{ncclFloat32} && int{detail::nccl::float16} == int{ncclFloat16} &&
              int{detail::nccl::bfloat16} == int{ncclBfloat16} && int{detail::nccl::float64} == int{ncclFloat64});
static_assert(int{detail::nccl::sum} == int{ncclSum} && int{detail::nccl::max} == int{ncclMax} && detail::nccl::in_progress == int{ncclInProgress});
static_assert(std::is_same_v<detail::nccl::Comm, ncclComm_t>);
#endif

TEST(CollectivesRecords, CombinesRanksAndAddsBandwidths) {
  auto rank_record = [](std::vector<double> samples) {
    Record r;
    r.name = "collectives.all_reduce";
    r.method = Method::cuda_events;
    r.dtype = DType::fp32;
    r.bytes = 1e9;
    r.samples_ms = std::move(samples);
    r.verification = "passed";
    finalize(r);
    return r;
  };
  const Record r = combine_rank_records({rank_record({10, 12}), rank_record({12, 14})}, CollectiveOp::all_reduce, 2);
  EXPECT_EQ(r.samples_ms, (std::vector<double>{11, 13}));
  EXPECT_DOUBLE_EQ(r.summary.median, 12);
  EXPECT_NEAR(r.extra["algbw_bytes_per_s"].get<double>(), 1e9 / 0.012, 1);
  EXPECT_NEAR(r.extra["busbw_bytes_per_s"].get<double>(), 1e9 / 0.012, 1);  // 2(n-1)/n = 1 at n = 2
  EXPECT_EQ(r.extra["rank_median_ms"].size(), 2u);
  EXPECT_THROW(combine_rank_records({rank_record({1}), rank_record({1, 2})}, CollectiveOp::all_reduce, 2), Error);
}

CollectivesRun synthetic_run(int ranks, std::optional<CatalogEntry> entry) {
  CollectivesRun run;
  run.ranks = ranks;
  run.datasheet = std::move(entry);
  // busbw rises to a plateau of 400 GB/s: 70% (280) is first reached at 2^24 and 90% (360) at 2^26.
  const std::vector<std::pair<double, double>> curve = {
      {1 << 20, 40e9}, {1 << 22, 160e9}, {1 << 24, 300e9}, {1 << 26, 380e9}, {1 << 28, 400e9}};
  for (auto [bytes, busbw] : curve) {
    Record r;
    r.name = "collectives.all_reduce";
    r.method = Method::cuda_events;
    r.dtype = DType::fp32;
    r.bytes = bytes;
    const double factor = bus_factor(CollectiveOp::all_reduce, ranks);
    const double algbw = factor > 0 ? busbw / factor : busbw;
    r.samples_ms = {bytes / algbw * 1e3};
    finalize(r);
    r.params = {{"op", "all_reduce"}, {"placement", "out_of_place"}};
    r.extra["algbw_bytes_per_s"] = algbw;
    r.extra["busbw_bytes_per_s"] = algbw * factor;
    run.records.push_back(r);
  }
  return run;
}

TEST(CollectivesAnalysis, KneesOnBusbwAndLinkCeilingsOnThePlot) {
  CollectivesRun run = synthetic_run(8, catalog_entry("h200-sxm"));
  analyze_collectives(run);
  ASSERT_EQ(run.curves.size(), 1u);
  const auto& c = run.curves[0];
  EXPECT_FALSE(c.knees_on_algbw);
  EXPECT_NEAR(c.peak_busbw_bytes_per_s, 400e9, 1e3);
  ASSERT_EQ(c.knees.size(), 2u);
  ASSERT_TRUE(c.knees[0].size && c.knees[1].size);
  EXPECT_GT(*c.knees[0].size, double(1 << 22));
  EXPECT_LE(*c.knees[0].size, double(1 << 24));
  EXPECT_GT(*c.knees[1].size, double(1 << 24));
  EXPECT_LE(*c.knees[1].size, double(1 << 26));
  // H200 SXM: NVLink 900 GB/s both ways = 450 per direction; PCIe Gen5 128 = 64.
  const LinkCeilings links = link_ceilings(run.datasheet);
  EXPECT_DOUBLE_EQ(links.nvlink_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(links.pcie_bytes_per_s, 64e9);
  bool nvlink = false, pcie = false;
  for (const auto& s : run.plot.series) {
    if (s.name == "NVLink") nvlink = s.points.front().y == 450;
    if (s.name == "PCIe") pcie = s.points.front().y == 64;
  }
  EXPECT_TRUE(nvlink && pcie);
  EXPECT_NE(run.plot.y_label.find("busbw"), std::string::npos);
}

TEST(CollectivesAnalysis, WorldSizeOneUsesAlgbwAndSaysWhy) {
  CollectivesRun run = synthetic_run(1, std::nullopt);
  analyze_collectives(run);
  ASSERT_EQ(run.curves.size(), 1u);
  EXPECT_TRUE(run.curves[0].knees_on_algbw);
  EXPECT_EQ(run.curves[0].peak_busbw_bytes_per_s, 0);
  ASSERT_TRUE(run.curves[0].knees[0].size);
  EXPECT_NE(run.plot.y_label.find("algbw"), std::string::npos);
  const auto lines = collective_definitions({CollectiveOp::all_reduce, CollectiveOp::broadcast}, 1);
  bool says_zero = false;
  for (const auto& l : lines) says_zero |= l.find("busbw is 0 by definition") != std::string::npos;
  EXPECT_TRUE(says_zero);
}

std::string plan_error(const CollectivesOptions& o) {
  return test_support::usage_message([&] { plan_collectives(o); });
}

TEST(CollectivesPlan, ChecksEveryOptionNamingTheField) {
  CollectivesOptions o;
  const auto p = plan_collectives(o);
  EXPECT_EQ(p.options.ops.size(), 7u);
  EXPECT_EQ(p.options.sizes.front(), 8);
  EXPECT_EQ(p.options.placements.size(), 2u);
  o.sizes = {8, std::int64_t{1} << 34};
  EXPECT_EQ(plan_error(o).rfind("sizes: ", 0), 0u) << "above 8 GiB";
  o = {};
  o.sizes = {0};
  EXPECT_EQ(plan_error(o).rfind("sizes: ", 0), 0u);
  o = {};
  o.method = Method::spin_hold;
  EXPECT_EQ(plan_error(o).rfind("method: ", 0), 0u);
  o = {};
  o.placements = {};
  EXPECT_EQ(plan_error(o).rfind("placements: ", 0), 0u);
  o = {};
  o.ops = {};
  EXPECT_EQ(plan_error(o).rfind("ops: ", 0), 0u);
  o = {};
  o.launcher = "pbs";
  EXPECT_EQ(plan_error(o).rfind("launcher: ", 0), 0u);
  o = {};
  o.quick = true;
  EXPECT_EQ(plan_collectives(o).options.ops.size(), 3u);
  EXPECT_THROW(placement_from_string("sideways"), UsageError);
  EXPECT_EQ(placement_from_string("in"), Placement::in_place);
}

// The typed defaults are what `ridge collectives` ran before they were typed (its old default strings).
TEST(CollectivesPlan, DefaultsAreTheOldDefaultStrings) {
  const CollectivesOptions o;
  EXPECT_EQ(o.sizes, parse_sizes("2^3:2^29:4"));
  EXPECT_EQ(sizes_text(o.sizes), "2^3:2^29:x4");
  std::vector<CollectiveOp> old_ops;
  for (const auto& name : parse_list("all_reduce,all_gather,reduce_scatter,broadcast,reduce,alltoall,send_recv", "ops"))
    old_ops.push_back(collective_op_from_string(name));
  EXPECT_EQ(o.ops, old_ops);
  EXPECT_EQ(o.dtypes, std::vector<DType>{DType::fp32});
  EXPECT_EQ(o.placements, (std::vector<Placement>{placement_from_string("out"), placement_from_string("in")}));
  EXPECT_FALSE(o.method);
  const CollectiveShape shape = *collective_shape(o.ops.front(), o.sizes.front(), o.dtypes.front(), 1);
  EXPECT_EQ(collective_params(o.ops.front(), shape, o.placements.front(), 1),
            nlohmann::json::parse(R"({"op":"all_reduce","bytes":8,"send_count":2,"recv_count":2,)"
                                  R"("placement":"out_of_place","ranks":1})"));
}

TEST(CollectivesCatalog, LinkBandwidthsAreSourced) {
  int with_links = 0;
  for (const auto& e : builtin_catalog()) {
    if (e.nvlink_bytes_per_s > 0 || e.pcie_bytes_per_s > 0) {
      ++with_links;
      EXPECT_NE(e.interconnect_source.find("http"), std::string::npos) << e.key;
    }
  }
  EXPECT_GE(with_links, 5);
  EXPECT_THROW(parse_catalog(R"({"devices":[{"key":"x","name":"X","sm_count":1,"memory_gb":1,
    "bandwidth_gb_per_s":1,"peak_tflops":{"fp32":1},"source":"s","nvlink_gb_per_s":900}]})"),
               UsageError);  // a link bandwidth without its source
}

TEST(P2pMatrixTest, AssemblesRecordsIntoAMatrix) {
  std::vector<Record> records;
  auto add = [&](int s, int d, const std::string& name, double ms) {
    Record r;
    r.name = name;
    r.bytes = 1e9;
    r.samples_ms = {ms};
    finalize(r);
    r.params = p2p_params(s, d, "one_way", "device", 1000000000, "bandwidth");
    records.push_back(r);
  };
  add(0, 1, "p2p.ce", 10);
  add(1, 0, "p2p.ce", 20);
  add(0, 1, "p2p.sm", 10.1);
  const auto m = p2p_matrix(records, 2, "p2p.ce", "one_way", "bandwidth", "t");
  EXPECT_NEAR(m.value[0][1], 100, 1e-9);
  EXPECT_NEAR(m.value[1][0], 50, 1e-9);
  EXPECT_TRUE(std::isnan(m.value[0][0]));
  P2pRun run;
  run.gpus = 2;
  run.records = records;
  analyze_p2p(run);
  ASSERT_FALSE(run.findings.empty());
  EXPECT_NE(run.findings[0].text.find("within 2%"), std::string::npos);
  P2pOptions o;
  o.bytes = 6;
  EXPECT_THROW(validate(o), UsageError);
}

TEST(CollectivesRendezvous, FilesBroadcastAndGatherAcrossThreeRanks) {
  const auto dir = std::filesystem::temp_directory_path() / ("ridge-rdv-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<std::string> gathered;
  std::vector<std::string> received(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // rank 0 creates the folder
      auto rdv = file_rendezvous(dir.string(), "test", LaunchInfo{LaunchKind::env, r, 3, r, "test"}, 10);
      char id[16] = {0};
      if (r == 0) std::snprintf(id, sizeof id, "unique-id");
      rdv->broadcast(id, sizeof id);
      received[r] = id;
      auto all = rdv->gather("rank " + std::to_string(r));
      if (r == 0) gathered = all;
    });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(received, (std::vector<std::string>{"unique-id", "unique-id", "unique-id"}));
  EXPECT_EQ(gathered, (std::vector<std::string>{"rank 0", "rank 1", "rank 2"}));
  std::filesystem::remove_all(dir);
  EXPECT_THROW(file_rendezvous("", "k", LaunchInfo{}), UsageError);
  EXPECT_EQ(environment_run_key({{"SLURM_JOB_ID", "42"}}), "42.0");
}

TEST(CollectivesNcclLoad, MissingLibraryIsExitCodeSeven) {
  // NCCL is loaded once per process: this test owns the first load in the unit-test binary.
  ::setenv("RIDGE_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  try {
    detail::nccl::load();
    FAIL() << "loading a missing NCCL succeeded";
  } catch (const MissingLibraryError& e) {
    EXPECT_EQ(e.code(), ExitCode::missing_library);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnccl.so.2"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("nvidia-nccl-cu13"), std::string::npos);
  }
  ::unsetenv("RIDGE_NCCL_LIBRARY");
  EXPECT_STREQ(std::getenv(nccl_nvls_variable), "0");  // set before the load was tried
}

}  // namespace
}  // namespace ridge
