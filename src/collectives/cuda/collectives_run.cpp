// `ridge collectives` on the GPUs: one RankRunner per rank (a thread per GPU, or this process's
// one GPU under MPI or an environment launch), the same calls in the same order on every rank, and
// rank 0 combining each point's records as soon as every rank has measured it.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "collectives/cuda/collective_kernels.hpp"
#include "collectives/nccl_library.hpp"
#include "collectives/rendezvous.hpp"
#include "measure/cuda/cuda_check.hpp"
#include "ridge/checks.hpp"
#include "ridge/collectives.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

using Clock = std::chrono::steady_clock;

int elem_of(DType d) {
  switch (d) {
    case DType::fp32: return detail::collective_kernels::f32;
    case DType::fp16: return detail::collective_kernels::f16;
    case DType::bf16: return detail::collective_kernels::bf16;
    default: return detail::collective_kernels::f64;
  }
}

bool in_place_defined(CollectiveOp op) { return op != CollectiveOp::alltoall && op != CollectiveOp::send_recv; }

/// One point of the sweep, the same list on every rank.
struct Point {
  CollectiveOp op;
  DType dtype;
  Placement placement;
  CollectiveShape shape;
};

std::vector<Point> sweep_points_of(const CollectivesPlan& plan, int ranks) {
  std::vector<Point> points;
  for (auto op : plan.options.ops)
    for (auto dtype : plan.options.dtypes)
      for (auto placement : plan.options.placements) {
        if (placement == Placement::in_place && !in_place_defined(op)) continue;
        for (auto size : plan.options.sizes)
          if (auto shape = collective_shape(op, size, dtype, ranks)) points.push_back({op, dtype, placement, *shape});
      }
  return points;
}

/// Bytes each rank's two buffers need for every point.
std::pair<std::size_t, std::size_t> buffer_bytes(const std::vector<Point>& points) {
  std::size_t send = 4096, recv = 4096;
  for (const auto& p : points) {
    const auto element = static_cast<std::size_t>(bytes_per_element(p.dtype));
    send = std::max(send, static_cast<std::size_t>(p.shape.send_count) * element);
    recv = std::max(recv, static_cast<std::size_t>(std::max(p.shape.recv_count, p.shape.send_count)) * element);
  }
  return {send, recv};
}

class RankRunner {
 public:
  RankRunner(const detail::nccl::Library& lib, detail::nccl::Comm comm, int device, int rank, int ranks, const CollectivesPlan& plan,
             std::pair<std::size_t, std::size_t> bytes)
      : lib_(lib), comm_(comm), device_(device), rank_(rank), ranks_(ranks), plan_(plan) {
    RIDGE_CHECK(cudaSetDevice(device_));
    RIDGE_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    allocate(&send_, bytes.first);
    allocate(&recv_, bytes.second);
    RIDGE_CHECK(cudaMalloc(reinterpret_cast<void**>(&counters_), 2 * sizeof(unsigned long long)));
    RIDGE_CHECK(cudaMalloc(reinterpret_cast<void**>(&agree_), sizeof(double)));
  }
  ~RankRunner() {
    cudaSetDevice(device_);
    cudaFree(send_);
    cudaFree(recv_);
    cudaFree(counters_);
    cudaFree(agree_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  RankRunner(const RankRunner&) = delete;
  RankRunner& operator=(const RankRunner&) = delete;

  /// Checks the point on this rank, then times it. Every rank must call this for the same points.
  Record run(const Point& p) {
    RIDGE_CHECK(cudaSetDevice(device_));
    const auto [send, recv] = pointers(p);
    const CollectiveCheck check = check_point(p, send, recv);
    // Every rank learns whether any failed, so all stop together rather than wait for each other.
    if (agree_max(check.passed ? 0 : 1) > 0) {
      if (!check.passed)
        throw VerificationError(fmt::format("{} {} {} at {} bytes, rank {} of {}: {}", to_string(p.op),
                                            to_string(p.dtype), to_string(p.placement), p.shape.bytes, rank_, ranks_,
                                            check.summary()));
      throw VerificationError(fmt::format("{} {} {} at {} bytes failed its check on another rank", to_string(p.op),
                                          to_string(p.dtype), to_string(p.placement), p.shape.bytes));
    }
    const double estimate_ms = agree_max(time_one_call(p, send, recv));
    const Method method = plan_.options.method.value_or(auto_method(estimate_ms));
    CudaOptions o;
    o.warmup = plan_.options.warmup;
    o.samples = plan_.options.samples;
    // Derived from the agreed estimate, so every rank makes the same calls.
    o.repeats = static_cast<int>(std::clamp(std::ceil(0.5 / std::max(estimate_ms, 1e-4)), 1.0, 100.0));
    o.stream = stream_;
    // Structured bindings are copied into the lambda: older clang cannot capture them by reference.
    const Measurement m = measure(method, [&, send = send, recv = recv](cuda_stream s) { issue(p, send, recv, s); }, o);
    Record r = to_record(m, "collectives." + to_string(p.op), p.dtype,
                         collective_params(p.op, p.shape, p.placement, ranks_), p.shape.bytes);
    r.verification = "passed";
    extra_key::check.set(r, check.summary());
    extra_key::method_auto.set(r, !plan_.options.method.has_value());
    return r;
  }

  /// Ends this communicator so ranks waiting on a failed one return (threads launch).
  void abort() {
    if (lib_.comm_abort) lib_.comm_abort(comm_);
  }

 private:
  static void allocate(void** p, std::size_t bytes) {
    if (cudaMalloc(p, bytes) != cudaSuccess) {
      cudaGetLastError();
      throw Error(fmt::format("cannot allocate {:.2f} GiB on the GPU for the collectives' buffers: use smaller sizes",
                              double(bytes) / double(1ULL << 30)));
    }
  }

  std::pair<void*, void*> pointers(const Point& p) const {
    if (p.placement == Placement::out_of_place) return {send_, recv_};
    const std::size_t block = static_cast<std::size_t>(p.shape.chunk * rank_) * bytes_per_element(p.dtype);
    auto* base = static_cast<char*>(recv_);
    if (p.op == CollectiveOp::all_gather) return {base + block, base};
    if (p.op == CollectiveOp::reduce_scatter) return {base, base + block};
    return {base, base};
  }

  void issue(const Point& p, const void* send, void* recv, cuda_stream s) {
    const int dt = detail::nccl::data_type(p.dtype);
    const auto count = static_cast<std::size_t>(p.shape.send_count);
    const auto chunk = static_cast<std::size_t>(p.shape.chunk);
    switch (p.op) {
      case CollectiveOp::all_reduce:
        RIDGE_NCCL_CHECK(lib_, lib_.all_reduce(send, recv, count, dt, detail::nccl::sum, comm_, s), comm_);
        return;
      case CollectiveOp::all_gather:
        RIDGE_NCCL_CHECK(lib_, lib_.all_gather(send, recv, chunk, dt, comm_, s), comm_);
        return;
      case CollectiveOp::reduce_scatter:
        RIDGE_NCCL_CHECK(lib_, lib_.reduce_scatter(send, recv, chunk, dt, detail::nccl::sum, comm_, s), comm_);
        return;
      case CollectiveOp::broadcast:
        RIDGE_NCCL_CHECK(lib_, lib_.broadcast(send, recv, count, dt, 0, comm_, s), comm_);
        return;
      case CollectiveOp::reduce:
        RIDGE_NCCL_CHECK(lib_, lib_.reduce(send, recv, count, dt, detail::nccl::sum, 0, comm_, s), comm_);
        return;
      case CollectiveOp::alltoall: {
        const std::size_t block = chunk * static_cast<std::size_t>(bytes_per_element(p.dtype));
        RIDGE_NCCL_CHECK(lib_, lib_.group_start(), comm_);
        for (int peer = 0; peer < ranks_; ++peer) {
          RIDGE_NCCL_CHECK(lib_, lib_.send(static_cast<const char*>(send) + peer * block, chunk, dt, peer, comm_, s),
                           comm_);
          RIDGE_NCCL_CHECK(lib_, lib_.recv(static_cast<char*>(recv) + peer * block, chunk, dt, peer, comm_, s), comm_);
        }
        RIDGE_NCCL_CHECK(lib_, lib_.group_end(), comm_);
        return;
      }
      case CollectiveOp::send_recv:
        RIDGE_NCCL_CHECK(lib_, lib_.group_start(), comm_);
        RIDGE_NCCL_CHECK(lib_, lib_.send(send, count, dt, (rank_ + 1) % ranks_, comm_, s), comm_);
        RIDGE_NCCL_CHECK(lib_, lib_.recv(recv, count, dt, (rank_ + ranks_ - 1) % ranks_, comm_, s), comm_);
        RIDGE_NCCL_CHECK(lib_, lib_.group_end(), comm_);
        return;
    }
  }

  CollectiveCheck check_point(const Point& p, void* send, void* recv) {
    const auto element = static_cast<std::size_t>(bytes_per_element(p.dtype));
    // Poison (0xFF.. is NaN in every float type) whatever the op writes, then fill the input.
    const std::size_t poisoned =
        std::max(p.shape.recv_count, p.placement == Placement::in_place ? p.shape.send_count : 0) * element;
    RIDGE_CHECK(cudaMemsetAsync(p.placement == Placement::in_place ? recv_ : recv, 0xFF, poisoned, stream_));
    detail::collective_kernels::launch_fill(send, p.shape.send_count, elem_of(p.dtype), rank_, stream_);
    RIDGE_CHECK_LAUNCH();
    issue(p, send, recv, stream_);
    RIDGE_CHECK(cudaMemsetAsync(counters_, 0, sizeof(unsigned long long), stream_));
    RIDGE_CHECK(cudaMemsetAsync(counters_ + 1, 0xFF, sizeof(unsigned long long), stream_));
    detail::collective_kernels::launch_check(recv, p.shape.recv_count, elem_of(p.dtype), static_cast<int>(p.op), rank_, ranks_,
                                     p.shape.chunk, counters_, stream_);
    RIDGE_CHECK_LAUNCH();
    unsigned long long host[2] = {0, 0};
    RIDGE_CHECK(cudaMemcpyAsync(host, counters_, sizeof host, cudaMemcpyDeviceToHost, stream_));
    RIDGE_CHECK(cudaStreamSynchronize(stream_));
    CollectiveCheck c;
    const bool defined = p.op != CollectiveOp::reduce || rank_ == 0;
    c.checked = defined ? p.shape.recv_count : 0;
    c.mismatches = static_cast<std::int64_t>(host[0]);
    c.passed = c.mismatches == 0;
    if (!c.passed) {
      c.first_bad_index = static_cast<std::int64_t>(host[1]);
      c.first_bad_expected =
          collective_expected_value(p.op, rank_, ranks_, p.shape.chunk, c.first_bad_index).value_or(0.0);
    }
    return c;
  }

  double time_one_call(const Point& p, const void* send, void* recv) {
    cudaEvent_t start = nullptr, end = nullptr;
    RIDGE_CHECK(cudaEventCreate(&start));
    RIDGE_CHECK(cudaEventCreate(&end));
    float ms = 0;
    cudaError_t status = cudaEventRecord(start, stream_);
    if (status == cudaSuccess) {
      issue(p, send, const_cast<void*>(recv), stream_);
      status = cudaEventRecord(end, stream_);
    }
    if (status == cudaSuccess) status = cudaEventSynchronize(end);
    if (status == cudaSuccess) status = cudaEventElapsedTime(&ms, start, end);
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    RIDGE_CHECK(status);
    return ms;
  }

  /// The largest of every rank's `value` (an all_reduce of one double).
  double agree_max(double value) {
    RIDGE_CHECK(cudaMemcpyAsync(agree_, &value, sizeof value, cudaMemcpyHostToDevice, stream_));
    RIDGE_NCCL_CHECK(lib_, lib_.all_reduce(agree_, agree_, 1, detail::nccl::float64, detail::nccl::max, comm_, stream_), comm_);
    RIDGE_CHECK(cudaMemcpyAsync(&value, agree_, sizeof value, cudaMemcpyDeviceToHost, stream_));
    RIDGE_CHECK(cudaStreamSynchronize(stream_));
    return value;
  }

  const detail::nccl::Library& lib_;
  detail::nccl::Comm comm_;
  int device_, rank_, ranks_;
  const CollectivesPlan& plan_;
  cudaStream_t stream_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  unsigned long long* counters_ = nullptr;
  double* agree_ = nullptr;
};

RankInfo describe_rank(int rank, int local_rank, int device) {
  RankInfo info;
  info.rank = rank;
  info.local_rank = local_rank;
  info.hostname = make_context(0, nullptr).hostname;
  info.device = describe_device(device);
  info.clocks_start = read_clocks(device);
  return info;
}

/// Rank 0 turns each point's per-rank records into one record and hands it on.
struct Combiner {
  CollectivesRun& run;
  const SweepCallbacks& callbacks;
  void add(const Point& p, const std::vector<Record>& per_rank) {
    run.records.push_back(combine_rank_records(per_rank, p.op, run.ranks));
    if (callbacks.on_record) callbacks.on_record(run.records.back());
  }
};

void run_threads(CollectivesRun& run, const detail::nccl::Library& lib, const SweepCallbacks& callbacks) {
  const int visible = device_count();
  const int gpus = run.plan.options.gpus == 0 ? visible : run.plan.options.gpus;
  if (gpus > visible)
    throw UsageError(fmt::format("gpus {}: only {} GPU{} visible", gpus, visible, visible == 1 ? " is" : "s are"));
  run.ranks = gpus;
  const auto rank_points = sweep_points_of(run.plan, gpus);
  std::vector<int> devices(gpus);
  for (int i = 0; i < gpus; ++i) devices[i] = i;
  std::vector<detail::nccl::Comm> comms(gpus, nullptr);
  RIDGE_NCCL_CHECK(lib, lib.comm_init_all(comms.data(), gpus, devices.data()), nullptr);
  struct Destroy {
    const detail::nccl::Library& lib;
    std::vector<detail::nccl::Comm>& comms;
    ~Destroy() {
      for (auto c : comms)
        if (c) lib.comm_destroy(c);
    }
  } destroy{lib, comms};

  for (int r = 0; r < gpus; ++r) run.rank_info.push_back(describe_rank(r, r, r));
  const auto bytes = buffer_bytes(rank_points);
  std::vector<std::unique_ptr<RankRunner>> runners(gpus);
  for (int r = 0; r < gpus; ++r)
    runners[r] = std::make_unique<RankRunner>(lib, comms[r], r, r, gpus, run.plan, bytes);

  Combiner combiner{run, callbacks};
  std::vector<Record> slot(gpus);
  std::size_t current = 0;
  std::mutex failure_mutex;
  std::exception_ptr failure;
  std::atomic<bool> aborted{false};
  auto after_point = [&]() noexcept {
    if (failure) return;
    try {
      if (callbacks.on_progress) callbacks.on_progress(current, rank_points.size(), to_string(rank_points[current].op));
      combiner.add(rank_points[current], slot);
    } catch (...) {
      failure = std::current_exception();
    }
    ++current;
  };
  std::barrier sync(gpus, after_point);
  std::vector<std::thread> threads;
  for (int r = 0; r < gpus; ++r)
    threads.emplace_back([&, r] {
      try {
        for (const auto& p : rank_points) {
          if (aborted) break;
          slot[r] = runners[r]->run(p);
          sync.arrive_and_wait();
          if (failure) break;
        }
      } catch (...) {
        {
          std::lock_guard lock(failure_mutex);
          if (!failure) failure = std::current_exception();
        }
        if (!aborted.exchange(true))
          for (auto& runner : runners) runner->abort();  // others may wait inside NCCL for this rank
        sync.arrive_and_drop();
      }
    });
  for (auto& t : threads) t.join();
  if (aborted) std::fill(comms.begin(), comms.end(), nullptr);  // aborted communicators are freed already
  if (failure) std::rethrow_exception(failure);
  for (int r = 0; r < gpus; ++r) run.rank_info[r].clocks_end = read_clocks(r);
}

void run_processes(CollectivesRun& run, const detail::nccl::Library& lib, Rendezvous& rendezvous,
                   const SweepCallbacks& callbacks) {
  run.ranks = rendezvous.size();
  const int visible = device_count();
  const int device = run.launch.local_rank % visible;
  RIDGE_CHECK(cudaSetDevice(device));
  detail::nccl::UniqueId id{};
  if (rendezvous.rank() == 0) RIDGE_NCCL_CHECK(lib, lib.get_unique_id(&id), nullptr);
  rendezvous.broadcast(&id, sizeof id);
  detail::nccl::Comm comm = nullptr;
  RIDGE_NCCL_CHECK(lib, lib.comm_init_rank(&comm, run.ranks, id, rendezvous.rank()), nullptr);
  struct Destroy {
    const detail::nccl::Library& lib;
    detail::nccl::Comm comm;
    ~Destroy() { lib.comm_destroy(comm); }
  } destroy{lib, comm};
  RankInfo me = describe_rank(rendezvous.rank(), run.launch.local_rank, device);
  const auto points = sweep_points_of(run.plan, run.ranks);
  RankRunner runner(lib, comm, device, rendezvous.rank(), run.ranks, run.plan, buffer_bytes(points));
  Combiner combiner{run, callbacks};
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (run.root && callbacks.on_progress) callbacks.on_progress(i, points.size(), to_string(points[i].op));
    const Record mine = runner.run(points[i]);
    const auto texts = rendezvous.gather(json_text(to_json(mine), -1));
    if (!run.root) continue;
    std::vector<Record> per_rank;
    for (std::size_t r = 0; r < texts.size(); ++r)
      per_rank.push_back(record_from_json(parse_json(texts[r], fmt::format("rank {}'s record", r)),
                                          fmt::format("rank {}", r)));
    combiner.add(points[i], per_rank);
  }
  me.clocks_end = read_clocks(device);
  const auto infos = rendezvous.gather(json_text(to_json(me), -1));
  for (const auto& text : infos) run.rank_info.push_back(rank_info_from_json(parse_json(text, "a rank's description")));
}

}  // namespace

CollectivesRun run_collectives(const CollectivesOptions& options, const SweepCallbacks& callbacks) {
  const auto started = Clock::now();
  CollectivesRun run;
  run.plan = plan_collectives(options);
  run.launch = detect_launch(environment_map(), run.plan.options.launcher);
  if (run.launch.kind == LaunchKind::env && run.plan.options.rendezvous.empty())
    throw UsageError(fmt::format("launched by {} (one process per GPU): give a rendezvous folder, one every rank "
                                 "sees, or use mpirun",
                                 run.launch.source));
  // The launcher first (a missing MPI plugin is exit 7), then NCCL (likewise), then the GPU.
  std::unique_ptr<Rendezvous> rendezvous;
  if (run.launch.kind == LaunchKind::mpi)
    rendezvous = mpi_rendezvous(run.launch);
  else if (run.launch.kind == LaunchKind::env)
    rendezvous = file_rendezvous(run.plan.options.rendezvous, environment_run_key(environment_map()), run.launch);
  const detail::nccl::Library& lib = detail::nccl::load();
  run.nccl_library = lib.path;
  run.nccl_version = nccl_version_text(lib.version);
  run.nvls_note = detail::nccl::nvls_note();
  run.root = run.launch.rank == 0;
  try {
    require_gpu(0);
    if (rendezvous) {
      run_processes(run, lib, *rendezvous, callbacks);
    } else {
      run_threads(run, lib, callbacks);
    }
  } catch (const Error& e) {
    if (rendezvous && rendezvous->size() > 1) {
      // The other processes wait on this one inside NCCL: end the job, saying why first.
      std::fprintf(stderr, "ridge: error on rank %d: %s\n", rendezvous->rank(), e.what());
      std::fflush(stderr);
      rendezvous->abort(static_cast<int>(e.code()));
    }
    throw;
  }
  if (rendezvous) rendezvous->finish();
  if (!run.rank_info.empty()) run.datasheet = match_device(run.rank_info.front().device);
  // Every record carries every rank's GPU and clocks, so a result file alone says where it ran.
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& info : run.rank_info) ranks.push_back(to_json(info));
  for (auto& r : run.records) extra_key::ranks.set(r, ranks);
  if (run.root) analyze_collectives(run);
  run.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return run;
}

}  // namespace ridge
