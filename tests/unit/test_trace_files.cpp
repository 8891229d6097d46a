// Trace files: the streamed Chrome JSON reader gives what the earlier whole-DOM reader gave
// (goldens written by that reader, 6129aca), and Perfetto's protobuf format round-trips to the
// same Trace and the same analysis.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "golden.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/perfetto.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/writers.hpp"
#include "trace/model/protobuf_wire.hpp"
#include "trace_dump.hpp"

using namespace ridge::trace;

namespace {

std::string source_path(const std::string& relative) { return std::string(RIDGE_SOURCE_DIR) + "/" + relative; }

/// A long description as its first lines, its line count and an FNV-1a hash: the golden stays
/// small, and any difference in any line still changes it.
std::string digest(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  std::istringstream in(text);
  std::string line, head;
  std::size_t lines = 0;
  while (std::getline(in, line)) {
    if (lines < 40) head += line + "\n";
    ++lines;
  }
  return lines <= 300 ? text : fmt::format("{}... {} lines, fnv1a64 {:016x}\n", head, lines, hash);
}

struct StoredTrace {
  const char* path;
  const char* golden;
};
const StoredTrace stored_traces[] = {
    {"tests/cli/data/tiny_pytorch_trace.json", "trace_read_tiny_pytorch.txt"},
    {"results/h200/counters/gemm_trace.json.gz", "trace_read_gemm_counters.txt"},
    {"results/h200/profile/trace-graph.json", "trace_read_profile_graph.txt"},
    {"tests/cli/data/ranks.rank0.json", "trace_read_rank0.txt"},
    {"tests/cli/data/trace_negative_duration.json", "trace_read_negative_duration.txt"},
    {"results/h200/decode/kernels/trace_chain.json.gz", "trace_read_decode_chain.txt"},
    {"tests/unit/data/trace_all_fields.json", "trace_read_all_fields.txt"},
};

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "ridge_test_trace_files";
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST(TraceFiles, StreamedReaderGivesWhatTheWholeDocumentReaderGave) {
  for (const auto& s : stored_traces) {
    SCOPED_TRACE(s.path);
    const std::string path = source_path(s.path);
    const std::string described = describe_trace(load_chrome_trace(path));
    // Goldens too long to keep whole are kept as a digest of the same text.
    std::ifstream golden(source_path(std::string("tests/unit/golden/") + s.golden));
    std::stringstream expected;
    expected << golden.rdbuf();
    expect_matches_golden(s.golden, expected.str().find("fnv1a64") != std::string::npos ? digest(described) : described);
    // From memory (parse_chrome_json) as from the file.
    if (!std::string_view(s.path).ends_with(".gz")) {
      EXPECT_EQ(describe_trace(parse_chrome_json(ridge::read_text(path), path)), described);
    }
  }
}

TEST(TraceFiles, CountersAreFoundInTheMetadataOfGzippedTraces) {
  EXPECT_TRUE(chrome_trace_has_counters(source_path("results/h200/counters/gemm_trace.json.gz")));
  EXPECT_TRUE(trace_has_counters(source_path("results/h200/counters/gemm_trace.json.gz")));
  EXPECT_FALSE(trace_has_counters(source_path("tests/unit/data/trace_all_fields.json")));
  EXPECT_FALSE(trace_has_counters(source_path("tests/unit/data/no_such_trace.json")));
}

TEST(TraceFiles, MetadataAfterTheEventsIsReadAsBefore) {
  const std::string path = source_path("tests/unit/data/trace_all_fields.json");
  const auto doc = nlohmann::ordered_json::parse(ridge::read_text(path));
  nlohmann::ordered_json moved;
  moved["traceEvents"] = doc["traceEvents"];
  for (const auto& [key, value] : doc.items())
    if (key != "traceEvents") moved[key] = value;
  ASSERT_EQ(moved.begin().key(), "traceEvents");
  EXPECT_EQ(describe_trace(parse_chrome_json(moved.dump(), "moved.json")), describe_trace(load_chrome_trace(path)));
}

TEST(TraceFiles, NegativeTimesAreShiftedAsBefore) {
  // ts below 0 and metadata after the events: three passes, same as the DOM reader's shift.
  const std::string text = R"({"traceEvents":[
    {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":-5.5,"dur":2,"args":{"queued ns before start":100}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":9,"ts":-8,"dur":1}],
    "ridge":{"origin_ns":1000,"host_pid":9,"process_id":4,"collection_start_ns":500}})";
  const Trace t = parse_chrome_json(text, "neg.json");
  ASSERT_EQ(t.kernels.size(), 1u);
  ASSERT_EQ(t.api_calls.size(), 1u);
  // Earliest: 1000 - 8000 = -7000 ns, so everything moves by 7000.
  EXPECT_EQ(t.api_calls[0].start, 0u);
  EXPECT_EQ(t.api_calls[0].process, 4u);
  EXPECT_EQ(t.kernels[0].start, 1000u - 5500u + 7000u);
  EXPECT_EQ(t.kernels[0].end, t.kernels[0].start + 2000u);
  EXPECT_EQ(t.kernels[0].queued, t.kernels[0].start - 100u);
  EXPECT_EQ(t.collection_start, 500u + 7000u);
}

TEST(TraceFiles, CorruptInputIsAUsageErrorNamingTheFile) {
  const auto truncated = scratch("truncated.json.gz");
  {
    std::string gz = ridge::read_text(source_path("results/h200/counters/gemm_trace.json.gz"));
    std::ofstream(truncated, std::ios::binary) << gz.substr(0, gz.size() / 2);
  }
  try {
    load_trace(truncated.string());
    ADD_FAILURE() << "a truncated gzip stream was read";
  } catch (const ridge::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated.json.gz"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_trace(std::filesystem::temp_directory_path().string()), ridge::UsageError);
  EXPECT_THROW(parse_chrome_json("[1,2", "x.json"), ridge::UsageError);
  EXPECT_THROW(parse_chrome_json(R"({"traceEvents":{}})", "x.json"), ridge::UsageError);
}

// ---- Perfetto's protobuf format ----------------------------------------------------------------

TEST(TracePerfetto, StoredTracesRoundTripToTheSameTraceAndAnalysis) {
  for (const auto& s : stored_traces) {
    SCOPED_TRACE(s.path);
    const Trace json = load_chrome_trace(source_path(s.path));
    const Trace back = parse_perfetto_trace(to_perfetto_trace(json), "memory.pftrace");
    EXPECT_EQ(describe_trace(back), describe_trace(json));
    const AnalysisOptions options{.top = 10, .step_range = "step"};
    EXPECT_EQ(format_analysis(analyze(back, options)), format_analysis(analyze(json, options)));
  }
}

TEST(TracePerfetto, FilesAreWrittenByNameAndReadByContent) {
  const Trace t = load_chrome_trace(source_path("tests/unit/data/trace_all_fields.json"));
  const auto pf = scratch("run.pftrace"), json = scratch("run.json"), explicit_pf = scratch("run.bin");
  write_trace(t, pf.string());
  write_trace(t, json.string());
  write_trace(t, explicit_pf.string(), TraceFormat::perfetto);
  EXPECT_EQ(resolve_trace_format(TraceFormat::from_file_name, pf.string()), TraceFormat::perfetto);
  EXPECT_EQ(resolve_trace_format(TraceFormat::from_file_name, json.string()), TraceFormat::chrome_json);
  EXPECT_EQ(ridge::read_text(json).front(), '{');
  // A .pftrace is a protobuf Trace: packets (field 1, length-delimited), the first one 4 bytes.
  const std::string bytes = ridge::read_text(pf);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(bytes.substr(0, 2), std::string("\x0a\x04", 2));
  EXPECT_LT(bytes.size(), ridge::read_text(json).size() / 2);
  for (const auto& p : {pf, explicit_pf, json}) EXPECT_EQ(describe_trace(load_trace(p.string())), describe_trace(t)) << p;
  EXPECT_EQ(load_perfetto_trace(pf.string()).kernels.size(), 4u);
}

TEST(TracePerfetto, PacketsUsePerfettosFieldNumbers) {
  // Decoded with the numbers of Perfetto's protos, written out here rather than taken from the
  // writer: TracePacket.timestamp 8, trusted_packet_sequence_id 10, track_event 11,
  // interned_data 12, track_descriptor 60; TrackEvent.type 9 (1 begin, 2 end), track_uuid 11,
  // name_iid 10, category_iids 3, debug_annotations 4; InternedData.event_names 2;
  // TrackDescriptor.uuid 1, thread 4 (ThreadDescriptor.pid 1, tid 2).
  Trace t;
  t.process_id = 31;
  t.kernels.push_back({});
  t.kernels[0].name = t.strings.intern("only_kernel");
  t.kernels[0].start = 1000;
  t.kernels[0].end = 1500;
  t.kernels[0].stream = 3;
  t.api_calls.push_back({ApiDomain::runtime, t.strings.intern("cudaLaunchKernel"), 31, 32, 900, 950, 0, 0});
  finalize(t);
  const std::string bytes = to_perfetto_trace(t);
  using namespace ridge::trace::wire;
  MessageReader trace(bytes);
  Field packet;
  std::map<std::uint64_t, std::string> names;  // EventName iid -> name
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> events;  // (timestamp, type, name)
  bool thread_track = false;
  while (trace.next(packet)) {
    ASSERT_EQ(packet.number, 1u);
    MessageReader p(packet.bytes);
    Field f;
    std::uint64_t ts = 0, sequence = 0;
    while (p.next(f)) {
      if (f.number == 8) ts = f.value;
      if (f.number == 10) sequence = f.value;
      if (f.number == 12) {
        MessageReader interned(f.bytes);
        Field e;
        while (interned.next(e))
          if (e.number == 2) {
            MessageReader name(e.bytes);
            Field g;
            std::uint64_t iid = 0;
            std::string text;
            while (name.next(g)) (g.number == 1 ? (void)(iid = g.value) : (void)(text = std::string(g.bytes)));
            names[iid] = text;
          }
      }
      if (f.number == 60) {
        MessageReader d(f.bytes);
        Field g;
        while (d.next(g))
          if (g.number == 4) {
            MessageReader th(g.bytes);
            Field h;
            std::uint64_t pid = 0, tid = 0;
            while (th.next(h)) (h.number == 1 ? (void)(pid = h.value) : h.number == 2 ? (void)(tid = h.value) : (void)0);
            thread_track = thread_track || (pid == 31 && tid == 32);
          }
      }
      if (f.number == 11) {
        MessageReader e(f.bytes);
        Field g;
        std::uint64_t type = 0, name_iid = 0;
        while (e.next(g)) {
          if (g.number == 9) type = g.value;
          if (g.number == 10) name_iid = g.value;
        }
        events.emplace_back(ts, type, name_iid != 0 ? names.at(name_iid) : std::string());
      }
    }
    ASSERT_EQ(p.error(), nullptr);
    EXPECT_EQ(sequence, 1u);
  }
  ASSERT_EQ(trace.error(), nullptr);
  EXPECT_TRUE(thread_track);
  // The metadata instant first (type 3), then the launch and the kernel, times relative to the first.
  const std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> expected = {
      {0, 3, "ridge metadata"}, {0, 1, "cudaLaunchKernel"}, {50, 2, ""}, {100, 1, "only_kernel"}, {600, 2, ""}};
  EXPECT_EQ(events, expected);
}

TEST(TracePerfetto, OverlappingSlicesThatDoNotNestKeepTheirTimes) {
  // nvtxRangeStart/End ranges may overlap on a thread; Perfetto nests the slices of a track, so
  // the writer puts the one that does not nest on a lane of its own.
  Trace t;
  const auto a = t.strings.intern("a"), b = t.strings.intern("b"), k = t.strings.intern("k");
  t.ranges.push_back({a, 1, 1, 100, 300, 0, false});
  t.ranges.push_back({b, 1, 1, 200, 400, 0, false});
  t.ranges.push_back({a, 1, 1, 400, 400, 0, false});  // empty, where b ends
  t.ranges.push_back({b, 1, 1, 150, 250, 0, false});
  for (Nanoseconds s : {100u, 150u, 150u}) {
    Kernel kernel;
    kernel.name = k;
    kernel.start = s;
    kernel.end = s + 100;
    t.kernels.push_back(kernel);
  }
  finalize(t);
  EXPECT_EQ(describe_trace(parse_perfetto_trace(to_perfetto_trace(t))), describe_trace(t));
}

TEST(TracePerfetto, MalformedBytesAreAUsageError) {
  const Trace t = load_chrome_trace(source_path("tests/unit/data/trace_all_fields.json"));
  const std::string bytes = to_perfetto_trace(t);
  EXPECT_THROW(parse_perfetto_trace(bytes.substr(0, bytes.size() - 3), "cut.pftrace"), ridge::UsageError);
  const auto cut = scratch("cut.pftrace");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    load_trace(cut.string());
    ADD_FAILURE() << "a truncated .pftrace was read";
  } catch (const ridge::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.pftrace"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_perfetto_trace(std::string("\x0a\x05\x50", 3)), ridge::UsageError);
}

TEST(TracePerfetto, QueueTimesBeforeTheOriginSurvive) {
  // Python's ridge.trace records no launch calls: a kernel's queue time may come before every
  // recorded event, hence before the file's origin.
  Trace t;
  Kernel k;
  k.name = t.strings.intern("first");
  k.start = 10'000;
  k.end = 12'000;
  k.queued = 4'000;
  t.kernels.push_back(k);
  finalize(t);
  ASSERT_EQ(t.origin(), 10'000u);
  const Trace json = parse_chrome_json(to_chrome_json(t));
  ASSERT_EQ(json.kernels.at(0).queued, 4'000u);
  EXPECT_EQ(describe_trace(parse_perfetto_trace(to_perfetto_trace(t))), describe_trace(json));
}
