// Multi-rank traces: the rank a launcher gave a process, per-rank file names, the merged Perfetto
// trace (pid = rank) and the analysis across ranks. CPU-only.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/stats.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/trace/launch.hpp"
#include "ridge/trace/ranks.hpp"
#include "ridge/version.hpp"
#include "ridge/writers.hpp"
#include "trace/model/event_fields.hpp"
#include "trace/model/json_fields.hpp"
#include "trace/model/rank_finish.hpp"

extern char** environ;

namespace ridge::trace {

namespace {

namespace fs = std::filesystem;

/// GPU tracks of a rank sit above every host thread id (Linux tids stay below 2^22).
constexpr std::int64_t gpu_track_base = 1LL << 30;

std::optional<std::string> lookup(const EnvironmentMap& environment, const char* key) {
  auto it = environment.find(key);
  if (it == environment.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

int parse_count(const std::string& key, const std::string& text) {
  int value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || value < 0)
    throw UsageError(fmt::format("{}={} in the environment is not a whole number >= 0: check the launcher's settings", key, text));
  return value;
}

/// One launcher's variable names.
struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* job;
};

constexpr LauncherVariables launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_MCA_ess_base_jobid"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_JOBID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_ID"},
};

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "";
  return buffer;
}

double modification_time(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
}

}  // namespace

EnvironmentMap current_environment() {
  EnvironmentMap map;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) map.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return map;
}

std::optional<DistributedInfo> rank_from_environment(const EnvironmentMap& environment, const std::string& host) {
  for (const auto& v : launchers) {
    const auto rank = lookup(environment, v.rank);
    const auto size = lookup(environment, v.size);
    if (!rank || !size) continue;
    DistributedInfo info;
    info.launcher = v.launcher;
    info.rank = parse_count(v.rank, *rank);
    info.world_size = parse_count(v.size, *size);
    if (info.world_size == 0 || info.rank >= info.world_size)
      throw UsageError(fmt::format("{}={} and {}={} in the environment: the rank must lie in [0, world size)", v.rank,
                                   *rank, v.size, *size));
    if (const auto local = lookup(environment, v.local_rank)) info.local_rank = parse_count(v.local_rank, *local);
    if (const auto job = lookup(environment, v.job)) info.job = *job;
    if (info.launcher == "slurm" && !info.job.empty())
      if (const auto step = lookup(environment, "SLURM_STEP_ID")) info.job += "." + *step;
    info.host = host;
    return info;
  }
  return std::nullopt;
}

std::optional<DistributedInfo> current_rank() { return rank_from_environment(current_environment(), host_name()); }

std::string rank_trace_path(const std::string& output, int rank) {
  const fs::path p(output);
  return (p.parent_path() / fmt::format("{}.rank{}{}", p.stem().string(), rank, p.extension().string())).string();
}

std::string merged_trace_path(const std::string& output) {
  const fs::path p(output);
  std::string stem = p.stem().string();
  // "trace.rank0" -> "trace": a rank file names its run's merged trace too.
  if (const auto dot = stem.rfind(".rank"); dot != std::string::npos && dot + 5 < stem.size() &&
                                            std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dot + 5), stem.end(),
                                                        [](char c) { return c >= '0' && c <= '9'; }))
    stem.resize(dot);
  return (p.parent_path() / fmt::format("{}.merged{}", stem, p.extension().string())).string();
}

// ---- merge -------------------------------------------------------------------------------------

namespace {

using detail::EventArg;
using detail::EventCategory;
using detail::name_of;

bool is_gpu_category(const std::string& cat) {
  return cat == name_of(EventCategory::kernel) || cat == name_of(EventCategory::memcpy) ||
         cat == name_of(EventCategory::memset) || cat == name_of(EventCategory::sync) ||
         cat == "gpu_user_annotation";  // PyTorch's NVTX-like ranges on a GPU track
}

/// A rank trace parsed and checked, ready to merge.
struct RankSource {
  std::string file;
  nlohmann::json doc;
  DistributedInfo info;
  nlohmann::json ridge_meta;  // the file's "ridge" object, or null (PyTorch's traces)
  Nanoseconds origin = 0;     // absolute time of ts = 0
};

RankSource read_rank_source(const std::string& file, const std::string& text) {
  RankSource s;
  s.file = file;
  try {
    s.doc = parse_json(text, file);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{} is not a JSON trace: {}", file, e.what()));
  }
  if (!s.doc.is_object() || !s.doc.contains("traceEvents") || !s.doc["traceEvents"].is_array())
    throw UsageError(fmt::format("{} is not a Chrome trace: no \"traceEvents\" array", file));
  if (s.doc.contains("ridge_merged"))
    throw UsageError(fmt::format("{} is already a merged trace: merge the rank files it was made from", file));
  const auto d = s.doc.find(name_of(EventArg::distributed));
  if (d == s.doc.end() || !d->is_object() || !d->contains("rank") || !(*d)["rank"].is_number_integer())
    throw UsageError(fmt::format("{} has no \"distributedInfo\" with a rank: it was not traced as one rank of a job "
                                 "(run `ridge trace` under mpirun, srun or torchrun)",
                                 file));
  using detail::integer_field;
  s.info.rank = integer_field(*d, "rank", 0, "distributedInfo");
  if (s.info.rank < 0) throw UsageError(fmt::format("{}: distributedInfo.rank is negative ({})", file, s.info.rank));
  s.info.world_size = integer_field(*d, "world_size", 0, "distributedInfo");
  s.info.backend = d->value("backend", std::string("nccl"));
  if (const auto r = s.doc.find(name_of(EventArg::ridge)); r != s.doc.end() && r->is_object()) {
    s.ridge_meta = *r;
    s.origin = integer_field(s.ridge_meta, "origin_ns", Nanoseconds{0}, "ridge");
    const nlohmann::json dist = s.ridge_meta.value("distributed", nlohmann::json::object());
    s.info.host = dist.value("host", std::string());
    s.info.job = dist.value("job", std::string());
    s.info.launcher = dist.value("launcher", std::string());
    s.info.local_rank = integer_field(dist, "local_rank", -1, "ridge.distributed");
  } else if (s.doc.contains("baseTimeNanoseconds") && s.doc["baseTimeNanoseconds"].is_number_unsigned()) {
    s.origin = s.doc["baseTimeNanoseconds"].get<Nanoseconds>();
  }
  return s;
}

void put_metadata(std::string& out, const char* what, std::int64_t pid, std::int64_t tid, const nlohmann::json& args) {
  out += nlohmann::json{{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", args}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  out += ",\n";
}


/// Appends one rank's events to `events` (its tracks renumbered into one process per rank, its
/// times shifted to the common origin, its flow ids past those of the ranks before it) and its
/// metadata to `ranks_meta`.
MergedRank append_rank(const RankSource& s, Nanoseconds global_origin, std::uint64_t& flow_offset, std::string& events,
                       nlohmann::json& ranks_meta) {
  MergedRank m;
  m.rank = s.info.rank;
  m.file = s.file;
  m.host = s.info.host;
  m.shift_ns = static_cast<std::int64_t>(s.origin - global_origin);
  if (!s.ridge_meta.is_null()) {
    m.process_id = detail::integer_field(s.ridge_meta, "process_id", std::uint32_t{0}, "ridge");
    m.command = s.ridge_meta.value("command", std::string());
  }
  const nlohmann::json& source_events = s.doc["traceEvents"];
  // Which source pids are GPUs, and the names the source gave its tracks.
  std::set<std::int64_t> gpu_pids;
  std::map<std::int64_t, std::string> process_names;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;
  std::uint64_t max_flow = 0;
  for (const auto& e : source_events) {
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", std::string());
    const std::int64_t pid = detail::id_field(e, "pid", 0);
    if (ph == "M") {
      const std::string what = e.value("name", std::string());
      const nlohmann::json args = e.value("args", nlohmann::json::object());
      if (what == "process_name" && args.contains("name") && args["name"].is_string()) process_names[pid] = args["name"];
      if (what == "thread_name" && args.contains("name") && args["name"].is_string())
        thread_names[{pid, detail::id_field(e, "tid", 0)}] = args["name"];
      continue;
    }
    if (is_gpu_category(e.value("cat", std::string()))) gpu_pids.insert(pid);
    if ((ph == "s" || ph == "f" || ph == "t") && e.contains("id")) max_flow = std::max<std::uint64_t>(max_flow, detail::id_field(e, "id", 0));
  }
  if (m.process_id == 0)
    for (const auto& [pid, name] : process_names)
      if (!gpu_pids.count(pid)) m.process_id = static_cast<std::uint32_t>(pid);

  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> track_ids;
  std::int64_t next_gpu_track = gpu_track_base;
  auto track_of = [&](std::int64_t pid, std::int64_t tid) {
    auto [it, inserted] = track_ids.emplace(std::pair{pid, tid}, 0);
    if (inserted) it->second = gpu_pids.count(pid) ? next_gpu_track++ : tid;
    return it->second;
  };
  for (const auto& e : source_events) {
    if (!e.is_object() || e.value("ph", std::string()) == "M") continue;
    nlohmann::json copy = e;
    const std::int64_t pid = detail::id_field(e, "pid", 0), tid = detail::id_field(e, "tid", 0);
    copy["pid"] = m.rank;
    copy["tid"] = track_of(pid, tid);
    if (auto ts = e.find("ts"); ts != e.end() && ts->is_number()) {
      const auto ns = static_cast<std::int64_t>(std::llround(ts->get<double>() * 1000.0)) + m.shift_ns;
      copy["ts"] = static_cast<double>(ns) / 1000.0;
    }
    if (copy.contains("id") && copy["id"].is_number()) copy["id"] = flow_offset + static_cast<std::uint64_t>(detail::id_field(e, "id", 0));
    events += copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    events += ",\n";
    ++m.events;
  }
  flow_offset += max_flow + 1;

  // Track names: one process per rank, its host threads first, then its GPU streams.
  put_metadata(events, "process_name", m.rank, 0,
               {{"name", fmt::format("rank {} ({}, pid {})", m.rank, m.host.empty() ? std::string("host ?") : m.host, m.process_id)}});
  put_metadata(events, "process_sort_index", m.rank, 0, {{"sort_index", m.rank}});
  for (const auto& [key, track] : track_ids) {
    const auto& [pid, tid] = key;
    std::string name;
    if (gpu_pids.count(pid)) {
      const auto p = process_names.find(pid);
      const auto t = thread_names.find(key);
      name = fmt::format("{}: {}", p != process_names.end() ? p->second : fmt::format("GPU {}", pid),
                         t != thread_names.end() ? t->second : fmt::format("stream {}", tid));
    } else {
      const auto t = thread_names.find(key);
      name = t != thread_names.end() ? t->second : fmt::format("thread {}", tid);
    }
    put_metadata(events, "thread_name", m.rank, track, {{"name", name}});
    put_metadata(events, "thread_sort_index", m.rank, track, {{"sort_index", track}});
  }

  nlohmann::json meta{{"rank", m.rank},       {"file", m.file},       {"host", m.host},
                      {"process_id", m.process_id}, {"command", m.command}, {"shift_ns", m.shift_ns},
                      {name_of(EventArg::distributed), s.doc[name_of(EventArg::distributed)]}};
  if (!s.ridge_meta.is_null()) meta[name_of(EventArg::ridge)] = s.ridge_meta;
  ranks_meta.push_back(std::move(meta));
  return m;
}

}  // namespace

MergeResult merge_rank_traces(const std::vector<std::pair<std::string, std::string>>& files_and_texts) {
  if (files_and_texts.empty()) throw UsageError("nothing to merge: give the rank traces (e.g. runs/trace.rank*.json)");
  std::vector<RankSource> sources;
  for (const auto& [file, text] : files_and_texts) sources.push_back(read_rank_source(file, text));
  std::sort(sources.begin(), sources.end(), [](const RankSource& a, const RankSource& b) { return a.info.rank < b.info.rank; });

  MergeResult result;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const RankSource& s = sources[i];
    if (i > 0 && sources[i - 1].info.rank == s.info.rank)
      throw UsageError(fmt::format("{} and {} are both rank {}: merge the files of one run", sources[i - 1].file, s.file, s.info.rank));
    if (s.info.world_size != sources.front().info.world_size)
      throw UsageError(fmt::format("{} says world size {}, {} says {}: merge the files of one run", sources.front().file,
                                   sources.front().info.world_size, s.file, s.info.world_size));
    if (s.info.job != sources.front().info.job)
      throw UsageError(fmt::format("{} is from job '{}', {} from job '{}': merge the files of one run (an older rank "
                                   "file may have been left in the folder)",
                                   sources.front().file, sources.front().info.job, s.file, s.info.job));
  }
  result.world_size = std::max(sources.front().info.world_size, sources.back().info.rank + 1);
  result.job = sources.front().info.job;
  if (static_cast<int>(sources.size()) < result.world_size) {
    std::vector<int> missing;
    std::set<int> present;
    for (const auto& s : sources) present.insert(s.info.rank);
    for (int r = 0; r < result.world_size; ++r)
      if (!present.count(r)) missing.push_back(r);
    result.notes.push_back(fmt::format("{} of {} ranks merged; missing: rank {}", sources.size(), result.world_size,
                                       fmt::join(missing, ", rank ")));
  }

  Nanoseconds global_origin = std::numeric_limits<Nanoseconds>::max();
  for (const auto& s : sources) global_origin = std::min(global_origin, s.origin);
  std::set<std::string> hosts;
  for (const auto& s : sources)
    if (!s.info.host.empty()) hosts.insert(s.info.host);
  result.hosts.assign(hosts.begin(), hosts.end());
  if (hosts.size() > 1)
    result.notes.push_back(fmt::format("the ranks ran on {} hosts ({}): each rank's times are its own host's clock, so "
                                       "ranks of different hosts line up only as well as those clocks agree (NTP: "
                                       "often within a millisecond; PTP: microseconds)",
                                       hosts.size(), fmt::join(result.hosts, ", ")));

  std::string events;
  nlohmann::json ranks_meta = nlohmann::json::array();
  std::uint64_t flow_offset = 0;
  for (const RankSource& s : sources) result.ranks.push_back(append_rank(s, global_origin, flow_offset, events, ranks_meta));
  if (events.size() >= 2) events.resize(events.size() - 2);  // the last ",\n"

  const nlohmann::json merged_meta{{"format", "ridge.merged_trace/1"},
                                   {"tool_version", tool_version()},
                                   {"world_size", result.world_size},
                                   {"job", result.job},
                                   {"origin_ns", global_origin},
                                   {"notes", result.notes},
                                   {"ranks", ranks_meta}};
  // "ridge_merged" first: is_merged_trace_file finds it in the file's first bytes.
  result.json = fmt::format("{{\"ridge_merged\":{},\n\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":{},\n"
                            "\"traceEvents\":[\n{}\n]}}\n",
                            merged_meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), global_origin, events);
  return result;
}

MergeResult merge_rank_trace_files(const std::vector<std::string>& files, const std::string& output) {
  std::vector<std::pair<std::string, std::string>> texts;
  std::set<std::string> seen;
  for (const auto& f : files) {
    if (!seen.insert(fs::weakly_canonical(f).string()).second) throw UsageError(fmt::format("{} is given twice", f));
    if (!output.empty() && fs::exists(output) && fs::equivalent(f, output))
      throw UsageError(fmt::format("the merged trace would replace its own input {}: choose another -o", f));
    texts.emplace_back(f, read_text(f));
  }
  MergeResult result = merge_rank_traces(texts);
  if (!output.empty()) write_text(output, result.json);
  return result;
}

std::vector<std::string> wait_for_rank_files(const std::string& output, int world_size, double timeout_seconds,
                                             double not_before) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_seconds));
  std::vector<std::string> found;
  while (true) {
    found.clear();
    for (int r = 0; r < world_size; ++r) {
      const std::string path = rank_trace_path(output, r);
      if (modification_time(path) >= not_before) found.push_back(path);
    }
    if (static_cast<int>(found.size()) == world_size || std::chrono::steady_clock::now() >= deadline) return found;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

namespace {

/// <stem>.rank<N><ext> files beside `output` written since `not_before`.
std::vector<std::string> rank_files_beside(const std::string& output, double not_before) {
  const fs::path p(output);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.stem().string() + ".rank";
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != p.extension()) continue;
    const std::string digits = entry.path().stem().string().substr(prefix.size());
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (modification_time(entry.path().string()) >= not_before) found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

}  // namespace ridge::trace

namespace ridge::detail {

using namespace ridge::trace;

void finish_rank_traces(const ProgramTraceOptions& o, const std::optional<DistributedInfo>& rank, double started,
                        ProgramTrace& result) {
  if (o.output.empty()) return;
  constexpr double launch_skew_seconds = 2;
  const double not_before = started - launch_skew_seconds;
  const std::string merged = o.merged_output.empty() ? merged_trace_path(o.output) : o.merged_output;
  std::vector<std::string> files;
  if (rank && rank->world_size > 1) {
    result.distributed = *rank;
    result.trace_file = rank_trace_path(o.output, rank->rank);
    if (rank->rank != 0 || o.merge_timeout_seconds <= 0) return;
    files = wait_for_rank_files(o.output, rank->world_size, o.merge_timeout_seconds, not_before);
    if (static_cast<int>(files.size()) < rank->world_size) {
      result.notes.push_back(fmt::format("no merged trace: {} of {} rank files appeared within {} s; merge them later "
                                         "(merge_rank_trace_files; on the command line, ridge trace's merge) from {} into {}",
                                         files.size(), rank->world_size, o.merge_timeout_seconds,
                                         (fs::path(o.output).parent_path() /
                                          (fs::path(o.output).stem().string() + ".rank*" + fs::path(o.output).extension().string()))
                                             .string(),
                                         merged));
      return;
    }
  } else {
    if (rank) result.distributed = *rank;
    // The program was the launcher (`ridge trace -- mpirun -np N prog`): each rank's process wrote
    // its own rank file, all of them done by now.
    files = rank_files_beside(o.output, not_before);
    for (const auto& f : files) result.other_traces.push_back(f);
    if (files.empty() || o.merge_timeout_seconds <= 0) return;
  }
  try {
    const MergeResult m = merge_rank_trace_files(files, merged);
    result.merged_trace = merged;
    for (const auto& note : m.notes) result.notes.push_back("merged trace: " + note);
  } catch (const std::exception& e) {
    result.notes.push_back(fmt::format("no merged trace: {}", e.what()));
  }
}

}  // namespace ridge::detail

namespace ridge::trace {

// ---- analysis ----------------------------------------------------------------------------------

bool is_communication_kernel(std::string_view name) {
  if (name.size() < 4) return false;
  return std::equal(name.begin(), name.begin() + 4, "nccl", [](char a, char b) { return (a | 0x20) == b; });
}

RankAnalysis analyze_ranks(const std::vector<Trace>& traces, const std::string& step_range) {
  RankAnalysis result;
  result.step_range = step_range;
  std::vector<const Trace*> ordered;
  for (const auto& t : traces) ordered.push_back(&t);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Trace* a, const Trace* b) { return a->distributed.rank < b->distributed.rank; });
  std::vector<std::vector<StepStat>> steps_by_rank;
  for (const Trace* t : ordered) {
    RankCommunication r;
    r.rank = t->distributed.rank;
    r.host = t->distributed.host;
    result.world_size = std::max({result.world_size, t->distributed.world_size, r.rank + 1});
    std::vector<std::pair<Nanoseconds, Nanoseconds>> communication, computation, all;
    for (const auto& k : t->kernels) {
      const bool comm = is_communication_kernel(t->strings.at(k.name));
      (comm ? communication : computation).emplace_back(k.start, k.end);
      all.emplace_back(k.start, k.end);
      ++(comm ? r.communication_kernels : r.computation_kernels);
    }
    r.communication_ns = union_length(std::move(communication));
    r.computation_ns = union_length(std::move(computation));
    r.gpu_busy_ns = union_length(std::move(all));
    // |A ∩ B| = |A| + |B| - |A ∪ B|
    r.overlap_ns = r.communication_ns + r.computation_ns - r.gpu_busy_ns;
    r.exposed_communication_ns = r.communication_ns - r.overlap_ns;
    r.overlap_fraction_of_communication =
        r.communication_ns > 0 ? static_cast<double>(r.overlap_ns) / static_cast<double>(r.communication_ns) : 0.0;
    if (!step_range.empty()) {
      AnalysisOptions options;
      options.top = 1;
      options.step_range = step_range;
      steps_by_rank.push_back(analyze(*t, options).steps);
      r.steps = steps_by_rank.back().size();
    }
    result.ranks.push_back(r);
  }
  for (std::size_t i = 1; i < result.ranks.size(); ++i)
    if (result.ranks[i].rank == result.ranks[i - 1].rank)
      throw UsageError(fmt::format("two traces are rank {}: analyze the files of one run", result.ranks[i].rank));

  if (!steps_by_rank.empty()) {
    std::size_t common = steps_by_rank.front().size();
    for (const auto& s : steps_by_rank) common = std::min(common, s.size());
    std::map<int, std::size_t> slowest_count;
    for (std::size_t i = 0; i < common; ++i) {
      StepAcrossRanks step;
      step.index = i;
      std::vector<double> durations;
      for (std::size_t r = 0; r < steps_by_rank.size(); ++r) {
        const Nanoseconds d = steps_by_rank[r][i].duration_ns;
        step.duration_ns_by_rank.push_back(d);
        durations.push_back(static_cast<double>(d));
        if (r == 0 || d > step.slowest_ns) {
          step.slowest_ns = d;
          step.slowest_rank = result.ranks[r].rank;
        }
        if (r == 0 || d < step.fastest_ns) step.fastest_ns = d;
      }
      step.median_ns = median(durations);
      step.lead_over_median_ns = static_cast<double>(step.slowest_ns) - step.median_ns;
      ++slowest_count[step.slowest_rank];
      result.steps.push_back(std::move(step));
    }
    bool uneven = false;
    for (const auto& s : steps_by_rank) uneven |= s.size() != common;
    if (uneven)
      result.findings.push_back(fmt::format("the ranks have different numbers of '{}' ranges; the first {} of each are compared",
                                            step_range, common));
    if (common == 0)
      result.findings.push_back(fmt::format("no step to compare: not every rank has an NVTX range named '{}'", step_range));
    for (const auto& [rank, count] : slowest_count)
      if (result.steps.size() >= 2 && 2 * count > result.steps.size() && result.ranks.size() > 1)
        result.findings.push_back(fmt::format("rank {} was the slowest in {} of {} steps: the others wait for it at "
                                              "their next collective",
                                              rank, count, result.steps.size()));
  }
  for (const auto& r : result.ranks)
    if (r.communication_ns > 0 && r.exposed_communication_ns * 2 > r.communication_ns)
      result.findings.push_back(fmt::format("rank {}: {} of its {} of communication ran with no computation beside it "
                                            "(exposed); overlapping it with computation would hide it",
                                            r.rank, format_percent(static_cast<double>(r.exposed_communication_ns) /
                                                                   static_cast<double>(r.communication_ns)),
                                            format_ms(static_cast<double>(r.communication_ns) / 1e6)));
  if (static_cast<int>(result.ranks.size()) < result.world_size)
    result.findings.push_back(fmt::format("only {} of {} ranks are in the analysis", result.ranks.size(), result.world_size));
  return result;
}

bool is_merged_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head - 1);
  return std::string_view(head, static_cast<std::size_t>(in.gcount())).find("{\"ridge_merged\":") == 0;
}

std::vector<Trace> load_rank_traces(const std::vector<std::string>& files) {
  if (files.empty()) throw UsageError("no trace to analyze");
  std::vector<Trace> traces;
  if (files.size() == 1 && is_merged_trace_file(files.front())) {
    const nlohmann::json doc = read_json_file(files.front());
    const nlohmann::json& meta = doc.at("ridge_merged");
    using detail::integer_field;
    const auto origin = integer_field(meta, "origin_ns", Nanoseconds{0}, "ridge_merged");
    std::map<std::int64_t, nlohmann::json> events_by_rank;
    for (const auto& e : doc.value("traceEvents", nlohmann::json::array()))
      if (e.is_object() && e.contains("pid") && e["pid"].is_number_integer()) {
        auto& list = events_by_rank[e["pid"].get<std::int64_t>()];
        if (list.is_null()) list = nlohmann::json::array();
        list.push_back(e);
      }
    for (const auto& rank_meta : meta.value("ranks", nlohmann::json::array())) {
      const int rank = integer_field(rank_meta, "rank", 0, "ridge_merged.ranks[]");
      nlohmann::json ridge = rank_meta.value(name_of(EventArg::ridge), nlohmann::json::object());
      ridge["origin_ns"] = origin;  // the merged file's times are relative to the merged origin
      ridge["host_pid"] = rank;     // host threads sit in the rank's process track
      ridge["process_id"] = integer_field(rank_meta, "process_id", std::uint32_t{0}, "ridge_merged.ranks[]");
      nlohmann::json sub{{name_of(EventArg::ridge), ridge},
                         {"traceEvents", events_by_rank[rank].is_null() ? nlohmann::json::array() : events_by_rank[rank]},
                         {name_of(EventArg::distributed), rank_meta.value(name_of(EventArg::distributed), nlohmann::json::object())}};
      traces.push_back(parse_chrome_json(sub.dump()));
      traces.back().distributed.rank = rank;
      traces.back().distributed.world_size = integer_field(meta, "world_size", 0, "ridge_merged");
      traces.back().distributed.host = rank_meta.value("host", std::string());
    }
    return traces;
  }
  for (const auto& f : files) {
    traces.push_back(load_trace(f));
    if (!traces.back().distributed.known()) {
      if (files.size() > 1)
        throw UsageError(fmt::format("{} has no \"distributedInfo\" with a rank: analyze rank traces written under a "
                                     "launcher (mpirun, srun, torchrun), or a merged trace",
                                     f));
      traces.back().distributed.rank = 0;
      traces.back().distributed.world_size = 1;
    }
  }
  return traces;
}

// ---- output ------------------------------------------------------------------------------------

std::string format_merge_result(const MergeResult& m, const std::string& output) {
  std::string out = fmt::format("Merged {} rank trace(s) of world size {} into {}: one process track per rank (pid = "
                                "rank) - open it in https://ui.perfetto.dev\n",
                                m.ranks.size(), m.world_size, output);
  for (const auto& r : m.ranks)
    out += fmt::format("  rank {}: {} ({} events, host {}, pid {})\n", r.rank, r.file, r.events,
                       r.host.empty() ? "?" : r.host, r.process_id);
  return out;
}

std::string format_rank_analysis(const RankAnalysis& a) {
  auto t = [](double ns) { return format_ms(ns / 1e6); };
  std::string out = fmt::format("Ranks: {} of world size {} (communication = NCCL kernels, computation = every other kernel)\n",
                                a.ranks.size(), a.world_size);
  out += fmt::format("  {:>4}  {:<16} {:>13} {:>13} {:>13} {:>13} {:>10} {:>13}\n", "rank", "host", "communication",
                     "computation", "overlap", "exposed comm", "overlap %", "kernels c/k");
  for (const auto& r : a.ranks)
    out += fmt::format("  {:>4}  {:<16} {:>13} {:>13} {:>13} {:>13} {:>10} {:>13}\n", r.rank, r.host.empty() ? "?" : r.host,
                       t(static_cast<double>(r.communication_ns)), t(static_cast<double>(r.computation_ns)),
                       t(static_cast<double>(r.overlap_ns)), t(static_cast<double>(r.exposed_communication_ns)),
                       r.communication_ns > 0 ? format_percent(r.overlap_fraction_of_communication) : std::string("-"),
                       fmt::format("{}/{}", r.communication_kernels, r.computation_kernels));
  if (!a.step_range.empty()) {
    out += fmt::format("\nSteps ('{}' ranges, host time), the slowest rank of each:\n", a.step_range);
    out += fmt::format("  {:>5}  {:>7} {:>12} {:>12} {:>12} {:>14}\n", "step", "slowest", "its time", "median", "fastest",
                       "lead on median");
    for (const auto& s : a.steps)
      out += fmt::format("  {:>5}  {:>7} {:>12} {:>12} {:>12} {:>14}\n", s.index, s.slowest_rank,
                         t(static_cast<double>(s.slowest_ns)), t(s.median_ns), t(static_cast<double>(s.fastest_ns)),
                         t(s.lead_over_median_ns));
  }
  for (const auto& f : a.findings) out += "! " + f + "\n";
  return out;
}

nlohmann::json to_json(const RankAnalysis& a) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : a.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"communication_kernels", r.communication_kernels},
                     {"computation_kernels", r.computation_kernels},
                     {"communication_ns", r.communication_ns},
                     {"computation_ns", r.computation_ns},
                     {"overlap_ns", r.overlap_ns},
                     {"exposed_communication_ns", r.exposed_communication_ns},
                     {"gpu_busy_ns", r.gpu_busy_ns},
                     {"overlap_fraction_of_communication", r.overlap_fraction_of_communication},
                     {"steps", r.steps}});
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : a.steps)
    steps.push_back({{"index", s.index},
                     {"slowest_rank", s.slowest_rank},
                     {"slowest_ns", s.slowest_ns},
                     {"median_ns", s.median_ns},
                     {"fastest_ns", s.fastest_ns},
                     {"lead_over_median_ns", s.lead_over_median_ns},
                     {"duration_ns_by_rank", s.duration_ns_by_rank}});
  return {{"world_size", a.world_size}, {"step_range", a.step_range}, {"ranks", ranks}, {"steps", steps}, {"findings", a.findings}};
}

}  // namespace ridge::trace
