// GPU tests of `ridge collectives` and `ridge p2p` at world size 1 (one H200): every op, a few sizes,
// each dtype, in-place and out-of-place, checked before timing; the p2p rows checked. They need NCCL
// (libnccl.so.2 or the nvidia-nccl wheel) and skip, saying so, without it or without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "collectives/nccl_library.hpp"
#include "gpu_test_util.hpp"
#include "ridge/collectives.hpp"
#include "ridge/errors.hpp"

namespace ridge {
namespace {

#define RIDGE_REQUIRE_NCCL()                                                         \
  do {                                                                               \
    try {                                                                            \
      detail::nccl::load();                                                                  \
    } catch (const MissingLibraryError& e) {                                         \
      GTEST_SKIP() << "NCCL not loadable (" << e.what() << "): skipped";             \
    }                                                                                \
  } while (0)

TEST(CollectivesGpu, EveryOpDtypeAndPlacementCheckedAtWorldSizeOne) {
  RIDGE_REQUIRE_GPU();
  RIDGE_REQUIRE_NCCL();
  CollectivesOptions o;
  o.sizes = {8, 4096, 1000000, 1 << 26};  // 1000000: not a power of two
  o.dtypes = collective_dtypes();
  o.samples = 3;
  o.warmup = 1;
  o.gpus = 1;
  o.launcher = "threads";
  const CollectivesRun run = run_collectives(o);
  EXPECT_EQ(run.ranks, 1);
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  // 7 ops x 4 dtypes x 4 sizes out-of-place, 5 ops in-place; minus sizes below one element (8 B fp64 is 1).
  EXPECT_GE(run.records.size(), 7u * 4u * 3u + 5u * 4u * 3u);
  for (const auto& r : run.records) {
    EXPECT_EQ(r.verification, "passed") << r.name;
    EXPECT_GT(r.summary.median, 0) << r.name;
    EXPECT_GT(r.extra.value("algbw_bytes_per_s", 0.0), 0) << r.name;
    const auto op = collective_op_from_string(r.params.value("op", ""));
    if (bus_factor(op, 1) == 0) {
      EXPECT_EQ(r.extra.value("busbw_bytes_per_s", -1.0), 0.0) << r.name;
    }
    EXPECT_EQ(r.extra["ranks"].size(), 1u);
  }
  EXPECT_FALSE(run.curves.empty());
  for (const auto& c : run.curves) EXPECT_EQ(c.knees_on_algbw, bus_factor(c.op, 1) == 0);
  EXPECT_FALSE(run.plot.series.empty());
}

TEST(CollectivesGpu, GraphReplayAndEventsBothWork) {
  RIDGE_REQUIRE_GPU();
  RIDGE_REQUIRE_NCCL();
  for (const char* method : {"graph", "events"}) {
    CollectivesOptions o;
    o.ops = {CollectiveOp::all_reduce, CollectiveOp::send_recv};
    o.sizes = {1 << 20};
    o.method = method_from_string(method);
    o.samples = 3;
    o.gpus = 1;
    o.launcher = "threads";
    const CollectivesRun run = run_collectives(o);
    ASSERT_EQ(run.records.size(), 3u) << method;  // all_reduce out + in, send_recv out
    for (const auto& r : run.records) EXPECT_EQ(r.method, std::string(method) == "graph" ? Method::graph_replay : Method::cuda_events);
  }
}

TEST(P2pGpu, MatrixAndHostRowsChecked) {
  RIDGE_REQUIRE_GPU();
  P2pOptions o;
  o.gpus = 1;
  o.bytes = 64 << 20;
  o.samples = 3;
  o.warmup = 1;
  const P2pRun run = run_p2p(o);
  ASSERT_EQ(run.gpus, 1);
  int ce = 0, sm = 0, host = 0;
  for (const auto& r : run.records) {
    EXPECT_EQ(r.verification, "passed") << r.name;
    EXPECT_GT(r.summary.median, 0);
    ce += r.name == "p2p.ce";
    sm += r.name == "p2p.sm";
    host += r.name == "p2p.host";
  }
  EXPECT_EQ(ce, 2);    // bandwidth and latency, device-local
  EXPECT_EQ(sm, 2);
  EXPECT_EQ(host, 4);  // H2D and D2H, pinned and pageable
  EXPECT_GT(run.matrices[0].value[0][0], 100);  // GB/s: any GPU copies its own memory faster than that
}

}  // namespace
}  // namespace ridge
