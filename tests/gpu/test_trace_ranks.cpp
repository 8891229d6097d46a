// Multi-rank traces on the GPU: `ridge trace` inside ranks (launcher variables faked, and under
// OpenMPI's mpirun) and around a launcher (`ridge trace -- mpirun ...`). Each rank traces
// trace_target, whose kernels are known in advance; the ranks share GPU 0, which is all the
// tracer needs (no NCCL here).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gpu_test_util.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/ranks.hpp"
#include "ridge/writers.hpp"
#include "trace_workload.hpp"

namespace fs = std::filesystem;
using namespace ridge::trace;

namespace {

/// A fresh folder per test: rank files of another test must never count.
fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ridge-ranks-test-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

int shell(const std::string& line) {
  const int status = std::system(line.c_str());
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ridge_tool() { return (bin_dir() / "ridge").string(); }
std::string target() { return (bin_dir() / "trace_target").string(); }

/// mpirun, allowed to run as root (the GPU machine's user); "" when OpenMPI is missing.
std::string mpirun() {
  if (shell("command -v mpirun > /dev/null 2>&1") != 0) return "";
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe";
}

void expect_distributed_info(const fs::path& file, int rank, int world_size) {
  const nlohmann::json doc = ridge::read_json_file(file);
  ASSERT_TRUE(doc.contains("distributedInfo")) << file;
  EXPECT_EQ(doc["distributedInfo"]["rank"], rank) << file;
  EXPECT_EQ(doc["distributedInfo"]["world_size"], world_size) << file;
  EXPECT_EQ(doc["distributedInfo"]["backend"], "nccl") << file;
}

void expect_merged_ranks(const fs::path& merged, int world_size) {
  ASSERT_TRUE(is_merged_trace_file(merged.string())) << merged;
  const std::vector<Trace> ranks = load_rank_traces({merged.string()});
  ASSERT_EQ(ranks.size(), static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    EXPECT_EQ(ranks[r].distributed.rank, r);
    EXPECT_EQ(ranks[r].kernels.size(), static_cast<std::size_t>(trace_workload::total_kernels)) << "rank " << r;
  }
  const RankAnalysis a = analyze_ranks(ranks, "step");
  EXPECT_EQ(a.steps.size(), static_cast<std::size_t>(trace_workload::steps));
  for (const auto& r : a.ranks) {
    EXPECT_EQ(r.communication_kernels, 0u);  // trace_target runs no NCCL
    EXPECT_GT(r.computation_ns, 0u);
  }
}

}  // namespace

TEST(TraceRanksGpu, FakedRankZeroOfTwoWritesItsRankFileAndSaysNoMerge) {
  RIDGE_REQUIRE_GPU();
  const fs::path dir = fresh_folder("one-of-two");
  const std::string line = "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 " + ridge_tool() + " trace --merge-timeout 1 -o " +
                           (dir / "trace.json").string() + " -- " + target() + " > " + (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(shell(line), 0) << ridge::read_text(dir / "out.txt");
  const std::string out = ridge::read_text(dir / "out.txt");
  EXPECT_FALSE(fs::exists(dir / "trace.json")) << "a rank of several writes trace.rank<R>.json only";
  expect_distributed_info(dir / "trace.rank0.json", 0, 2);
  EXPECT_EQ(load_chrome_trace((dir / "trace.rank0.json").string()).distributed.launcher, "torchrun");
  EXPECT_NE(out.find("Rank 0 of 2 (torchrun)"), std::string::npos) << out;
  EXPECT_NE(out.find("no merged trace: 1 of 2 rank files appeared within 1 s"), std::string::npos) << out;
}

TEST(TraceRanksGpu, TwoFakedRanksWriteRankFilesAndRankZeroMergesThem) {
  RIDGE_REQUIRE_GPU();
  const fs::path dir = fresh_folder("two");
  auto rank = [&](int r) {
    return "RANK=" + std::to_string(r) + " WORLD_SIZE=2 " + ridge_tool() + " trace --step-range step -o " +
           (dir / "trace.json").string() + " -- " + target() + " > " + (dir / ("out" + std::to_string(r) + ".txt")).string() +
           " 2>&1";
  };
  const std::string line = rank(0) + " & zero=$!; " + rank(1) + "; one=$?; wait $zero; exit $(( $? | one ))";
  ASSERT_EQ(shell(line), 0) << ridge::read_text(dir / "out0.txt") << ridge::read_text(dir / "out1.txt");
  expect_distributed_info(dir / "trace.rank0.json", 0, 2);
  expect_distributed_info(dir / "trace.rank1.json", 1, 2);
  const std::string out0 = ridge::read_text(dir / "out0.txt");
  EXPECT_NE(out0.find("Merged trace of all ranks: " + (dir / "trace.merged.json").string()), std::string::npos) << out0;
  expect_merged_ranks(dir / "trace.merged.json", 2);
  // Rank 1 never merges.
  EXPECT_EQ(ridge::read_text(dir / "out1.txt").find("Merged trace"), std::string::npos);
}

TEST(TraceRanksGpu, MpirunOneRankCarriesDistributedInfo) {
  RIDGE_REQUIRE_GPU();
  const std::string launcher = mpirun();
  if (launcher.empty()) GTEST_SKIP() << "mpirun not found (OpenMPI is installed on the GPU machine, not here): skipped";
  const fs::path dir = fresh_folder("mpirun-np1");
  const std::string line = launcher + " -np 1 " + ridge_tool() + " trace -o " + (dir / "trace.json").string() + " -- " +
                           target() + " > " + (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(shell(line), 0) << ridge::read_text(dir / "out.txt");
  // World size 1: the file keeps its name, and still says which rank it is (HTA needs it).
  expect_distributed_info(dir / "trace.json", 0, 1);
  EXPECT_EQ(load_chrome_trace((dir / "trace.json").string()).distributed.launcher, "openmpi");
  EXPECT_NE(ridge::read_text(dir / "out.txt").find("Rank 0 of 1 (openmpi"), std::string::npos) << ridge::read_text(dir / "out.txt");
}

TEST(TraceRanksGpu, MpirunTwoRanksEachTracedWritesRankFilesAndAMergedTrace) {
  RIDGE_REQUIRE_GPU();
  const std::string launcher = mpirun();
  if (launcher.empty()) GTEST_SKIP() << "mpirun not found (OpenMPI is installed on the GPU machine, not here): skipped";
  const fs::path dir = fresh_folder("mpirun-np2");
  const std::string line = launcher + " -np 2 " + ridge_tool() + " trace --step-range step -o " + (dir / "trace.json").string() +
                           " -- " + target() + " > " + (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(shell(line), 0) << ridge::read_text(dir / "out.txt");
  expect_distributed_info(dir / "trace.rank0.json", 0, 2);
  expect_distributed_info(dir / "trace.rank1.json", 1, 2);
  expect_merged_ranks(dir / "trace.merged.json", 2);
}

TEST(TraceRanksGpu, RidgeTraceAroundMpirunNamesEachRanksFile) {
  RIDGE_REQUIRE_GPU();
  const std::string launcher = mpirun();
  if (launcher.empty()) GTEST_SKIP() << "mpirun not found (OpenMPI is installed on the GPU machine, not here): skipped";
  const fs::path dir = fresh_folder("around-mpirun");
  // The injection library reaches every rank's process through the environment mpirun passes on.
  const std::string line = ridge_tool() + " trace -o " + (dir / "trace.json").string() + " -- sh -c '" + launcher +
                           " -x CUDA_INJECTION64_PATH -x NVTX_INJECTION64_PATH -np 2 " + target() + "' > " +
                           (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(shell(line), 0) << ridge::read_text(dir / "out.txt");
  expect_distributed_info(dir / "trace.rank0.json", 0, 2);
  expect_distributed_info(dir / "trace.rank1.json", 1, 2);
  expect_merged_ranks(dir / "trace.merged.json", 2);
}
