// Multi-rank traces on synthetic events: rank detection per launcher, distributedInfo round trip,
// the merged trace's track layout and clock alignment, communication/computation overlap, the
// slowest rank of each step.
#include <gtest/gtest.h>

#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/ranks.hpp"
#include "ridge/trace/window.hpp"
#include "ridge/writers.hpp"

using namespace ridge::trace;
namespace fs = std::filesystem;

namespace {

/// One rank's synthetic trace: kernels on stream 7 of device 0 launched from thread 77, NVTX steps.
struct RankBuilder {
  Trace t;
  std::uint32_t next_correlation = 1;

  RankBuilder(int rank, int world_size, std::uint32_t process_id = 1000) {
    t.process_id = process_id + static_cast<std::uint32_t>(rank);
    t.command = "train.py";
    t.device_names[0] = "Test GPU";
    t.distributed.rank = rank;
    t.distributed.world_size = world_size;
    t.distributed.local_rank = rank;
    t.distributed.launcher = "openmpi";
    t.distributed.job = "job-42";
    t.distributed.host = "node1";
  }
  void kernel(const std::string& name, Nanoseconds start, Nanoseconds end, std::uint32_t stream = 7) {
    ApiCall a;
    a.name = t.strings.intern("cudaLaunchKernel");
    a.process = t.process_id;
    a.thread = 77;
    a.start = start > 3000 ? start - 3000 : 0;
    a.end = a.start + 1000;
    a.correlation = next_correlation++;
    t.api_calls.push_back(a);
    Kernel k;
    k.name = t.strings.intern(name);
    k.stream = stream;
    k.start = start;
    k.end = end;
    k.correlation = a.correlation;
    t.kernels.push_back(k);
  }
  void step(Nanoseconds start, Nanoseconds end) {
    NvtxRange r;
    r.name = t.strings.intern("step");
    r.process = t.process_id;
    r.thread = 77;
    r.start = start;
    r.end = end;
    t.ranges.push_back(r);
  }
  Trace done() {
    finalize(t);
    return t;
  }
};

struct TempFolder {
  fs::path path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "ridge-ranks-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

// ---- which rank a launcher made us ---------------------------------------------------------------

TEST(RankEnvironment, OutsideAJobThereIsNoRank) {
  EXPECT_FALSE(rank_from_environment({{"HOME", "/root"}, {"PATH", "/bin"}}).has_value());
  // Half a launcher's variables is not a job.
  EXPECT_FALSE(rank_from_environment({{"RANK", "3"}}).has_value());
}

TEST(RankEnvironment, OpenMpi) {
  const auto r = rank_from_environment({{"OMPI_COMM_WORLD_RANK", "3"},
                                        {"OMPI_COMM_WORLD_SIZE", "8"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                        {"OMPI_MCA_ess_base_jobid", "12345"}},
                                       "gpu-node-2");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->launcher, "openmpi");
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world_size, 8);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->job, "12345");
  EXPECT_EQ(r->host, "gpu-node-2");
}

TEST(RankEnvironment, MpichHydra) {
  const auto r = rank_from_environment({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->launcher, "mpich");
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->world_size, 2);
  EXPECT_EQ(r->local_rank, 0);
  EXPECT_EQ(r->job, "");
}

TEST(RankEnvironment, SlurmJobIdIncludesTheStep) {
  const auto r = rank_from_environment(
      {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}, {"SLURM_JOB_ID", "777"}, {"SLURM_STEP_ID", "2"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->launcher, "slurm");
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->world_size, 16);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->job, "777.2");
}

TEST(RankEnvironment, Torchrun) {
  const auto r = rank_from_environment(
      {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"TORCHELASTIC_RUN_ID", "abc"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->launcher, "torchrun");
  EXPECT_EQ(r->rank, 2);
  EXPECT_EQ(r->world_size, 4);
  EXPECT_EQ(r->job, "abc");
}

TEST(RankEnvironment, TheMostSpecificLauncherWins) {
  // torchrun inside a SLURM allocation: SLURM_PROCID is the agent's, RANK the worker's.
  auto r = rank_from_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"RANK", "5"}, {"WORLD_SIZE", "8"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->launcher, "torchrun");
  EXPECT_EQ(r->rank, 5);
  // mpirun inside an sbatch script: every process inherits SLURM_PROCID=0.
  r = rank_from_environment(
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->launcher, "openmpi");
  EXPECT_EQ(r->rank, 3);
}

TEST(RankEnvironment, MalformedVariablesAreUsageErrors) {
  EXPECT_THROW(rank_from_environment({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}}), ridge::UsageError);
  EXPECT_THROW(rank_from_environment({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}}), ridge::UsageError);
  EXPECT_THROW(rank_from_environment({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), ridge::UsageError);
  EXPECT_THROW(rank_from_environment({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), ridge::UsageError);
  try {
    rank_from_environment({{"SLURM_PROCID", "1O"}, {"SLURM_NTASKS", "4"}});
    FAIL() << "no error";
  } catch (const ridge::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_PROCID=1O"), std::string::npos) << e.what();
  }
}

TEST(RankPaths, RankAndMergedNames) {
  EXPECT_EQ(rank_trace_path("runs/trace.json", 3), "runs/trace.rank3.json");
  EXPECT_EQ(rank_trace_path("trace.json", 0), "trace.rank0.json");
  EXPECT_EQ(merged_trace_path("runs/trace.json"), "runs/trace.merged.json");
  EXPECT_EQ(merged_trace_path("runs/trace.rank12.json"), "runs/trace.merged.json");
  EXPECT_EQ(merged_trace_path("runs/my.ranking.json"), "runs/my.ranking.merged.json");
}

// ---- distributedInfo ---------------------------------------------------------------------------

TEST(DistributedInfo, WrittenWhereHolisticTraceAnalysisLooksAndReadBack) {
  RankBuilder b(1, 2);
  b.kernel("gemm", 10'000, 20'000);
  const Trace t = b.done();
  const std::string text = to_chrome_json(t);
  const nlohmann::json doc = nlohmann::json::parse(text);
  // HTA: data["distributedInfo"]["rank"], an int >= 0.
  ASSERT_TRUE(doc.contains("distributedInfo"));
  EXPECT_EQ(doc["distributedInfo"]["rank"], 1);
  EXPECT_EQ(doc["distributedInfo"]["world_size"], 2);
  EXPECT_EQ(doc["distributedInfo"]["backend"], "nccl");

  const Trace back = parse_chrome_json(text);
  EXPECT_EQ(back.distributed.rank, 1);
  EXPECT_EQ(back.distributed.world_size, 2);
  EXPECT_EQ(back.distributed.local_rank, 1);
  EXPECT_EQ(back.distributed.launcher, "openmpi");
  EXPECT_EQ(back.distributed.job, "job-42");
  EXPECT_EQ(back.distributed.host, "node1");
  // A windowed trace keeps it.
  Window w;
  w.skip_kernels = 0;
  w.skip_seconds = 1e-9;
  EXPECT_EQ(apply_window(back, w).distributed.rank, 1);
}

TEST(DistributedInfo, AbsentOutsideAJob) {
  Trace t;
  finalize(t);
  const nlohmann::json doc = nlohmann::json::parse(to_chrome_json(t));
  EXPECT_FALSE(doc.contains("distributedInfo"));
  EXPECT_FALSE(parse_chrome_json(to_chrome_json(t)).distributed.known());
}

// ---- communication against computation -----------------------------------------------------------

TEST(RankAnalysis, NcclKernelsAreCommunication) {
  EXPECT_TRUE(is_communication_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(is_communication_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t"));
  EXPECT_TRUE(is_communication_kernel("NCCLKernel"));
  EXPECT_FALSE(is_communication_kernel("my_nccl_helper"));
  EXPECT_FALSE(is_communication_kernel("ncc"));
  EXPECT_FALSE(is_communication_kernel("ampere_bf16_gemm"));
}

TEST(RankAnalysis, OverlapIsTheIntersectionOfTheTwoUnions) {
  RankBuilder b(0, 1);
  // communication [0,100) and [200,300) on one stream; computation [50,150) and [250,260) on another,
  // plus [120,140) inside the first computation kernel (counted once).
  b.kernel("ncclDevKernel_AllReduce", 0 + 10'000, 100 + 10'000, 1);
  b.kernel("ncclDevKernel_AllReduce", 200 + 10'000, 300 + 10'000, 1);
  b.kernel("gemm", 50 + 10'000, 150 + 10'000, 2);
  b.kernel("gemm", 120 + 10'000, 140 + 10'000, 3);
  b.kernel("add", 250 + 10'000, 260 + 10'000, 2);
  const RankAnalysis a = analyze_ranks({b.done()});
  ASSERT_EQ(a.ranks.size(), 1u);
  const RankCommunication& r = a.ranks[0];
  EXPECT_EQ(r.communication_kernels, 2u);
  EXPECT_EQ(r.computation_kernels, 3u);
  EXPECT_EQ(r.communication_ns, 200u);
  EXPECT_EQ(r.computation_ns, 110u);
  EXPECT_EQ(r.gpu_busy_ns, 250u);
  EXPECT_EQ(r.overlap_ns, 60u);  // [50,100) and [250,260)
  EXPECT_EQ(r.exposed_communication_ns, 140u);
  EXPECT_DOUBLE_EQ(r.overlap_fraction_of_communication, 0.3);
  // 70% of the communication is exposed: worth saying.
  ASSERT_FALSE(a.findings.empty());
  EXPECT_NE(a.findings.front().find("exposed"), std::string::npos);
}

TEST(RankAnalysis, NoCommunicationMeansNoOverlap) {
  RankBuilder b(0, 1);
  b.kernel("gemm", 10'000, 20'000);
  const RankAnalysis a = analyze_ranks({b.done()});
  EXPECT_EQ(a.ranks[0].communication_ns, 0u);
  EXPECT_EQ(a.ranks[0].overlap_ns, 0u);
  EXPECT_EQ(a.ranks[0].computation_ns, 10'000u);
  EXPECT_EQ(a.ranks[0].overlap_fraction_of_communication, 0.0);
}

std::vector<Trace> three_ranks_with_steps() {
  // Step durations (µs): rank 0: 10, 10, 10; rank 1: 12, 30, 11; rank 2: 11, 10, 40.
  const Nanoseconds durations[3][3] = {{10'000, 10'000, 10'000}, {12'000, 30'000, 11'000}, {11'000, 10'000, 40'000}};
  std::vector<Trace> ranks;
  for (int r = 2; r >= 0; --r) {  // out of order on purpose: the analysis orders by rank
    RankBuilder b(r, 3);
    Nanoseconds at = 100'000;
    for (int s = 0; s < 3; ++s) {
      b.step(at, at + durations[r][s]);
      b.kernel("gemm", at + 3'000, at + 5'000);
      b.kernel("ncclDevKernel_AllReduce", at + 5'000, at + durations[r][s]);
      at += 100'000;
    }
    ranks.push_back(b.done());
  }
  return ranks;
}

TEST(RankAnalysis, SlowestRankOfEachStepAndItsLeadOverTheMedian) {
  const RankAnalysis a = analyze_ranks(three_ranks_with_steps(), "step");
  EXPECT_EQ(a.world_size, 3);
  ASSERT_EQ(a.ranks.size(), 3u);
  EXPECT_EQ(a.ranks[0].rank, 0);
  EXPECT_EQ(a.ranks[2].rank, 2);
  EXPECT_EQ(a.ranks[1].steps, 3u);
  ASSERT_EQ(a.steps.size(), 3u);
  EXPECT_EQ(a.steps[0].slowest_rank, 1);
  EXPECT_EQ(a.steps[0].slowest_ns, 12'000u);
  EXPECT_DOUBLE_EQ(a.steps[0].median_ns, 11'000);
  EXPECT_DOUBLE_EQ(a.steps[0].lead_over_median_ns, 1'000);
  EXPECT_EQ(a.steps[0].fastest_ns, 10'000u);
  EXPECT_EQ(a.steps[1].slowest_rank, 1);
  EXPECT_DOUBLE_EQ(a.steps[1].lead_over_median_ns, 20'000);
  EXPECT_EQ(a.steps[2].slowest_rank, 2);
  EXPECT_DOUBLE_EQ(a.steps[2].median_ns, 11'000);
  EXPECT_DOUBLE_EQ(a.steps[2].lead_over_median_ns, 29'000);
  EXPECT_EQ(a.steps[2].duration_ns_by_rank, (std::vector<Nanoseconds>{10'000, 11'000, 40'000}));
  bool said = false;
  for (const auto& f : a.findings) said |= f.find("rank 1 was the slowest in 2 of 3 steps") != std::string::npos;
  EXPECT_TRUE(said) << format_rank_analysis(a);
  const std::string text = format_rank_analysis(a);
  EXPECT_NE(text.find("lead on median"), std::string::npos);
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j["steps"][1]["slowest_rank"], 1);
  EXPECT_EQ(j["ranks"][2]["communication_kernels"], 3);
}

TEST(RankAnalysis, UnevenStepCountsCompareTheCommonSteps) {
  std::vector<Trace> ranks = three_ranks_with_steps();
  ranks[0].ranges.pop_back();  // rank 2 (built first) lost its last step
  const RankAnalysis a = analyze_ranks(ranks, "step");
  EXPECT_EQ(a.steps.size(), 2u);
  bool said = false;
  for (const auto& f : a.findings) said |= f.find("different numbers") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(RankAnalysis, TwoTracesOfOneRankAreRefused) {
  RankBuilder a(0, 2), b(0, 2);
  EXPECT_THROW(analyze_ranks({a.done(), b.done()}), ridge::UsageError);
}

// ---- the merged trace --------------------------------------------------------------------------

namespace {

/// Two rank traces whose clocks start 5 µs apart (rank 1 later), as files.
std::vector<std::pair<std::string, std::string>> two_rank_texts() {
  RankBuilder r0(0, 2), r1(1, 2);
  r0.kernel("gemm", 1'000'000, 1'004'000);
  r0.kernel("ncclDevKernel_AllReduce", 1'004'000, 1'010'000);
  r0.step(999'000, 1'010'000);
  r1.kernel("gemm", 1'005'000, 1'012'000);
  r1.kernel("ncclDevKernel_AllReduce", 1'012'000, 1'014'000);
  r1.step(1'004'000, 1'014'000);
  r1.t.distributed.host = "node2";
  return {{"trace.rank1.json", to_chrome_json(r1.done())}, {"trace.rank0.json", to_chrome_json(r0.done())}};
}

}  // namespace

TEST(MergeRanks, OneProcessTrackPerRankWithItsThreadsAndStreams) {
  const MergeResult m = merge_rank_traces(two_rank_texts());
  EXPECT_EQ(m.world_size, 2);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].rank, 0);
  EXPECT_EQ(m.ranks[0].file, "trace.rank0.json");
  EXPECT_EQ(m.job, "job-42");
  EXPECT_EQ(m.hosts, (std::vector<std::string>{"node1", "node2"}));
  bool clock_note = false;
  for (const auto& n : m.notes) clock_note |= n.find("2 hosts") != std::string::npos;
  EXPECT_TRUE(clock_note);

  const nlohmann::json doc = nlohmann::json::parse(m.json);
  EXPECT_FALSE(doc.contains("distributedInfo"));  // not one rank: HTA reads the rank files
  std::map<std::int64_t, std::string> process_names;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;
  std::set<std::uint64_t> flow_starts;
  std::map<std::int64_t, std::vector<double>> kernel_ts;
  for (const auto& e : doc["traceEvents"]) {
    const std::int64_t pid = e["pid"];
    EXPECT_TRUE(pid == 0 || pid == 1) << e.dump();
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[pid] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[{pid, e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "s") {
      EXPECT_TRUE(flow_starts.insert(e["id"].get<std::uint64_t>()).second) << "flow id reused";
    }
    if (e.value("cat", "") == "kernel") {
      EXPECT_GE(e["tid"].get<std::int64_t>(), 1LL << 30);  // GPU streams sit after the host threads
      kernel_ts[pid].push_back(e["ts"]);
    }
  }
  EXPECT_EQ(process_names[0], "rank 0 (node1, pid 1000)");
  EXPECT_EQ(process_names[1], "rank 1 (node2, pid 1001)");
  EXPECT_EQ(thread_names[(std::pair<std::int64_t, std::int64_t>{0, 77})], "thread 77");
  bool stream_track = false;
  for (const auto& [key, name] : thread_names) stream_track |= key.first == 1 && name == "GPU 0: Test GPU: stream 7";
  EXPECT_TRUE(stream_track);
  EXPECT_EQ(flow_starts.size(), 4u);
  // One timeline: rank 0 starts at its launch call (997 µs), the merged origin; rank 1's first
  // kernel began at 1005 µs on the same clock.
  ASSERT_EQ(kernel_ts[1].size(), 2u);
  EXPECT_DOUBLE_EQ(kernel_ts[0][0], 3.0);
  EXPECT_DOUBLE_EQ(kernel_ts[1][0], 8.0);
  EXPECT_EQ(doc["ridge_merged"]["origin_ns"], 997'000);
}

TEST(MergeRanks, ReadBackGivesEachRankItsEventsOnTheOriginalClock) {
  TempFolder dir;
  std::vector<std::string> files;
  for (const auto& [name, text] : two_rank_texts()) {
    files.push_back((dir.path / name).string());
    ridge::write_text(files.back(), text);
  }
  const std::string merged = (dir.path / "trace.merged.json").string();
  merge_rank_trace_files(files, merged);
  EXPECT_TRUE(is_merged_trace_file(merged));
  EXPECT_FALSE(is_merged_trace_file(files[0]));

  const std::vector<Trace> from_merged = load_rank_traces({merged});
  const std::vector<Trace> from_files = load_rank_traces(files);
  ASSERT_EQ(from_merged.size(), 2u);
  ASSERT_EQ(from_files.size(), 2u);
  const Trace& rank1 = from_merged[1];
  EXPECT_EQ(rank1.distributed.rank, 1);
  EXPECT_EQ(rank1.distributed.world_size, 2);
  EXPECT_EQ(rank1.process_id, 1001u);
  ASSERT_EQ(rank1.kernels.size(), 2u);
  EXPECT_EQ(rank1.kernels[0].start, 1'005'000u);
  EXPECT_EQ(rank1.kernels[0].stream, 7u);
  ASSERT_EQ(rank1.ranges.size(), 1u);
  EXPECT_EQ(rank1.ranges[0].process, 1001u);
  EXPECT_EQ(rank1.api_calls.size(), 2u);

  // The same analysis either way.
  const RankAnalysis a = analyze_ranks(from_merged, "step"), b = analyze_ranks(from_files, "step");
  EXPECT_EQ(to_json(a), to_json(b));
  EXPECT_EQ(a.ranks[0].communication_ns, 6'000u);
  EXPECT_EQ(a.steps.at(0).slowest_rank, 0);  // 11 µs against 10 µs

  // The merged trace never replaces one of its inputs.
  EXPECT_THROW(merge_rank_trace_files(files, files[0]), ridge::UsageError);
}

TEST(MergeRanks, RefusesWhatIsNotOneRunsRankFiles) {
  auto texts = two_rank_texts();
  // The same rank twice.
  EXPECT_THROW(merge_rank_traces({texts[0], texts[0]}), ridge::UsageError);
  // No distributedInfo.
  Trace plain;
  finalize(plain);
  try {
    merge_rank_traces({texts[0], {"plain.json", to_chrome_json(plain)}});
    FAIL() << "no error";
  } catch (const ridge::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("plain.json has no \"distributedInfo\""), std::string::npos) << e.what();
  }
  // Numbers beyond their type's range: refused, not cast (a double past an integer's range is undefined).
  for (const auto& [pointer, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"/ridge/origin_ns", 1e30}, {"/distributedInfo/world_size", 1e20}, {"/distributedInfo/rank", -1},
           {"/distributedInfo/rank", 4294967296LL}}) {
    nlohmann::json bad = nlohmann::json::parse(texts[0].second);
    bad[nlohmann::json::json_pointer(pointer)] = value;
    EXPECT_THROW(merge_rank_traces({{"bad.json", bad.dump()}, texts[1]}), ridge::UsageError) << pointer << " = " << value;
  }
  // Another job's rank 1 (a file left from an earlier run).
  RankBuilder stale(1, 2);
  stale.t.distributed.job = "job-41";
  EXPECT_THROW(merge_rank_traces({texts[1], {"old.json", to_chrome_json(stale.done())}}), ridge::UsageError);
  // Not JSON; nothing at all; a merged trace as input.
  EXPECT_THROW(merge_rank_traces({{"x.json", "{"}}), ridge::UsageError);
  EXPECT_THROW(merge_rank_traces({}), ridge::UsageError);
  EXPECT_THROW(merge_rank_traces({{"m.json", merge_rank_traces(texts).json}}), ridge::UsageError);
}

TEST(MergeRanks, MissingRanksAreNamed) {
  RankBuilder r0(0, 4), r2(2, 4);
  const MergeResult m = merge_rank_traces({{"r0.json", to_chrome_json(r0.done())}, {"r2.json", to_chrome_json(r2.done())}});
  EXPECT_EQ(m.world_size, 4);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes.front().find("missing: rank 1, rank 3"), std::string::npos) << m.notes.front();
}

TEST(MergeRanks, WaitingForRankFilesIgnoresOlderOnes) {
  TempFolder dir;
  const std::string output = (dir.path / "trace.json").string();
  ridge::write_text(rank_trace_path(output, 0), "{}");
  ridge::write_text(rank_trace_path(output, 1), "{}");
  // Rank 1's file is from an hour ago: an earlier run.
  const timeval old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimes(rank_trace_path(output, 1).c_str(), old), 0);
  const double now = static_cast<double>(::time(nullptr));
  EXPECT_EQ(wait_for_rank_files(output, 2, 0.0, now - 60), (std::vector<std::string>{rank_trace_path(output, 0)}));
  EXPECT_EQ(wait_for_rank_files(output, 2, 0.0, now - 7200).size(), 2u);
  EXPECT_EQ(wait_for_rank_files(output, 3, 0.2, now - 7200).size(), 2u);  // rank 2 never comes
}
