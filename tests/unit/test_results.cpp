#include <filesystem>

#include <gtest/gtest.h>
#include <zlib.h>

#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/result.hpp"
#include "ridge/writers.hpp"

using namespace ridge;

namespace {

ResultSet sample_set() {
  const char* argv[] = {"ridge", "timing", "--n", "4096"};
  ResultSet s;
  s.context = make_context(4, argv);
  DeviceDescription d;
  d.name = "Test GPU";
  d.sm_count = 132;
  d.compute_capability_major = 9;
  s.context.device = d;
  Record r;
  r.name = "timing";
  r.method = Method::cuda_events;
  r.dtype = DType::fp32;
  r.params = {{"n", 4096}, {"case", "large, quoted \"x\""}};
  r.samples_ms = {2.70, 2.72, 2.71, 2.75, 2.72};
  r.bytes = 3.0 * 4096 * 4096 * 4;
  r.flops = 2.0 * 4096 * 4096 * 4096;
  r.warnings = {"a, warning"};
  r.clocks_start.sm_mhz = 1980;
  finalize(r);
  s.records.push_back(r);
  return s;
}

}  // namespace

TEST(Results, JsonRoundTrip) {
  const ResultSet s = sample_set();
  const auto j = to_json(s);
  EXPECT_EQ(j["schema_version"], result_schema_version);
  EXPECT_EQ(j["records"][0]["median_ms"], 2.72);
  EXPECT_NEAR(j["records"][0]["flops_per_s"].get<double>(), 2.0 * 4096 * 4096 * 4096 / 2.72e-3, 1e3);
  const ResultSet back = result_set_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.records.size(), 1u);
  const Record& r = back.records[0];
  EXPECT_EQ(r.name, "timing");
  EXPECT_EQ(r.samples_ms, s.records[0].samples_ms);
  EXPECT_DOUBLE_EQ(r.summary.median, 2.72);
  EXPECT_EQ(r.params["n"], 4096);
  EXPECT_EQ(r.warnings, s.records[0].warnings);
  EXPECT_EQ(back.context.argv, s.context.argv);
  ASSERT_TRUE(back.context.device.has_value());
  EXPECT_EQ(back.context.device->sm_count, 132);
  EXPECT_EQ(back.context.device->compute_capability_major, 9);
  EXPECT_DOUBLE_EQ(r.clocks_start.sm_mhz, 1980);
}

TEST(Results, ContextHasVersionAndTime) {
  const ResultSet s = sample_set();
  EXPECT_FALSE(s.context.tool_version.empty());
  EXPECT_FALSE(s.context.git_sha.empty());
  EXPECT_EQ(s.context.timestamp_utc.size(), 20u);  // 2026-11-29T18:00:00Z
}

TEST(Results, RejectsForeignAndMalformedJson) {
  EXPECT_THROW(result_set_from_json(nlohmann::json::parse(R"({"a": 1})")), UsageError);
  EXPECT_THROW(result_set_from_json(nlohmann::json::parse(R"({"schema":"ridge.results","schema_version":999})")),
               UsageError);
  EXPECT_THROW(
      result_set_from_json(nlohmann::json::parse(R"({"schema":"ridge.results","schema_version":1,"context":{},"records":[{"name":"x"}]})")),
      UsageError);
}

// A record's method and dtype are typed in memory and named in JSON: every Method and DType
// (cupti_trace and none included) and "" for no dtype read back as they were written.
TEST(Results, MethodAndDtypeRoundTripByName) {
  for (Method method : all_methods)
    for (std::optional<DType> dtype : {std::optional<DType>(), std::optional<DType>(DType::fp8_e4m3)}) {
      Record r = sample_set().records[0];
      r.method = method;
      r.dtype = dtype;
      const auto j = to_json(r);
      EXPECT_EQ(j["method"], to_string(method));
      EXPECT_EQ(j["dtype"], dtype ? "fp8_e4m3" : "");
      const Record back = record_from_json(j);
      EXPECT_EQ(back.method, method);
      EXPECT_EQ(back.dtype, dtype);
      EXPECT_EQ(to_json(back).dump(), j.dump());
    }
  for (DType dtype : all_dtypes) {
    nlohmann::json j = to_json(sample_set().records[0]);
    j["dtype"] = to_string(dtype);
    EXPECT_EQ(record_from_json(j).dtype, dtype);
  }
}

// An unknown name is refused with its JSON path and the names accepted; aliases the CLI takes
// ("events", "fp8") are not record names.
TEST(Results, UnknownMethodOrDtypeNamesThePathAndTheNames) {
  const auto error = [](const char* key, const char* value) {
    auto j = to_json(sample_set());
    j["records"][0][key] = value;
    try {
      result_set_from_json(j);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("method", "foo"),
            "records[0].method: unknown method 'foo'; expected one of cpu_wall, wall_naive, wall_sync, cuda_events, "
            "spin_hold, graph_replay, cupti_trace, none");
  EXPECT_EQ(error("method", "events").rfind("records[0].method: unknown method 'events'", 0), 0u);
  EXPECT_EQ(error("dtype", "fp8"), "records[0].dtype: unknown dtype 'fp8'; expected one of fp32, tf32, fp16, bf16, "
                                   "fp8_e4m3, fp64");
  EXPECT_EQ(error("dtype", ""), "");
  EXPECT_EQ(error("method", "none"), "");
}

// Every result file ridge keeps under results/ still loads; the plain JSON ones write each record
// back byte for byte.
TEST(Results, StoredResultFilesLoadAndRoundTrip) {
  int files = 0, records = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(RIDGE_SOURCE_DIR) + "/results")) {
    const auto name = entry.path().filename().string();
    const bool plain = name.size() > 5 && name.ends_with(".json");
    if (!entry.is_regular_file() || !(plain || name.ends_with(".json.gz"))) continue;
    if (plain) {
      const auto j = read_json_file(entry.path());
      if (!j.is_object() || j.value("schema", "") != "ridge.results") continue;
      for (const auto& record : j["records"]) {
        EXPECT_EQ(to_json(record_from_json(record)).dump(), record.dump()) << entry.path();
        ++records;
      }
    } else {
      try {
        load_result_file(entry.path());
      } catch (const UsageError& e) {
        if (std::string(e.what()).find("not a ridge result file") == std::string::npos) ADD_FAILURE() << e.what();
        continue;
      }
    }
    ++files;
  }
  EXPECT_GT(files, 50);
  EXPECT_GT(records, 200);
}

TEST(Results, CsvHasHeaderAndEscapedRow) {
  const std::string csv = to_csv(sample_set());
  const auto first_newline = csv.find('\n');
  EXPECT_EQ(csv.substr(0, 12), "name,method,");
  EXPECT_NE(csv.find("\"case=large, quoted \"\"x\"\" n=4096\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"a, warning\""), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2);
  EXPECT_NE(first_newline, std::string::npos);
}

TEST(Results, MarkdownTable) {
  const std::string md = to_markdown(sample_set());
  EXPECT_NE(md.find("## timing"), std::string::npos);
  EXPECT_NE(md.find("| median ms |"), std::string::npos);
  EXPECT_NE(md.find("2.720 ms"), std::string::npos);
  EXPECT_NE(md.find("Test GPU"), std::string::npos);
}

TEST(Results, AtomicWriteAndLoad) {
  const auto dir = std::filesystem::temp_directory_path() / "ridge_test_results";
  std::filesystem::remove_all(dir);
  const auto path = (dir / "sub" / "r.json").string();
  write_text(path, to_json(sample_set()).dump());
  const ResultSet back = load_result_file(path);
  EXPECT_EQ(back.records.size(), 1u);
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir / "sub")) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_THROW(load_result_file(dir / "missing.json"), UsageError);
  write_text((dir / "bad.json").string(), "{not json");
  EXPECT_THROW(load_result_file(dir / "bad.json"), UsageError);
  std::filesystem::remove_all(dir);
}

// gzip-compresses `text` as `gzip` does (deflate with a gzip wrapper).
static std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(Writers, CompressedResultFilesAndFoldersLoad) {
  const auto dir = std::filesystem::temp_directory_path() / "ridge_test_gzip";
  std::filesystem::remove_all(dir);
  const std::string compressed = gzip(to_json(sample_set()).dump());
  write_text((dir / "r.json.gz").string(), compressed);
  EXPECT_EQ(load_result_file(dir / "r.json.gz").records.size(), 1u);
  write_text((dir / "report" / "results.json.gz").string(), compressed);  // a report folder, compressed
  EXPECT_EQ(load_result_file(dir / "report").records.size(), 1u);
  write_text((dir / "cut.json.gz").string(), compressed.substr(0, compressed.size() / 2));
  try {
    load_result_file(dir / "cut.json.gz");
    ADD_FAILURE() << "a truncated gzip file loaded";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cut.json.gz"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Checks, ImpossibleResultIsFlagged) {
  Record r;
  r.name = "x";
  r.samples_ms = {0.01, 0.01, 0.01};  // 4096^3 FP32 in 10 us would be 13,700 TFLOP/s
  r.flops = 2.0 * 4096 * 4096 * 4096;
  r.bytes = 3.0 * 4096 * 4096 * 4;
  finalize(r);
  const auto w = add_plausibility_warnings(r, DeviceCeilings{.source_text = "datasheet", .memory_bytes_per_s = 4.8e12, .peak_flops_per_s = {{"fp32", 67e12}}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("impossible"), std::string::npos);
}

TEST(Checks, PlausibleResultHasNoWarning) {
  Record r;
  r.samples_ms = {2.72, 2.73, 2.71};
  r.flops = 2.0 * 4096 * 4096 * 4096;
  r.bytes = 3.0 * 4096 * 4096 * 4;
  finalize(r);
  EXPECT_TRUE(add_plausibility_warnings(r, DeviceCeilings{.source_text = "datasheet", .memory_bytes_per_s = 4.8e12, .peak_flops_per_s = {{"fp32", 67e12}}}).empty());
}

TEST(Checks, SpreadCacheAndClockWarnings) {
  Record r;
  r.samples_ms = {1, 2, 3, 4, 10};
  r.params = {{"working_set_bytes", 1e6}};
  r.clocks_start.sm_mhz = 1980;
  r.clocks_end.sm_mhz = 1400;
  finalize(r);
  const auto w = add_plausibility_warnings(r, std::nullopt, 50e6);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("high spread"), std::string::npos);
  EXPECT_NE(w[1].find("cache-resident"), std::string::npos);
  EXPECT_NE(w[2].find("clocks moved"), std::string::npos);
}

TEST(Checks, ClockActivityDuringSamplingIsFlagged) {
  Record r;
  r.samples_ms = {1.0, 1.0, 1.0};
  r.extra["clocks_during"] = {{"readings", 12}, {"sm_mhz_min", 1590.0}, {"sm_mhz_max", 1980.0},
                              {"throttle_reason_names", "sw_power_cap"}};
  finalize(r);
  const auto w = add_plausibility_warnings(r, std::nullopt);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1590-1980 MHz"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("sw_power_cap"), std::string::npos);
  Record steady;
  steady.samples_ms = {1.0, 1.0, 1.0};
  steady.extra["clocks_during"] = {{"readings", 12}, {"sm_mhz_min", 1980.0}, {"sm_mhz_max", 1980.0}};
  finalize(steady);
  EXPECT_TRUE(add_plausibility_warnings(steady, std::nullopt).empty());
}
