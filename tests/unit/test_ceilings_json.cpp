// The one ceilings type (DeviceCeilings) from both its sources, its JSON forms, the cache of
// measured ceilings and the cache-folder lookup.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"

using namespace ridge;

namespace {

MeasuredCeilings sample_measurement() {
  MeasuredCeilings c;
  c.device_uuid = "GPU-1234";
  c.device_name = "NVIDIA H200";
  c.measured_at_utc = "2026-11-29T10:00:00Z";
  c.ceilings.source = CeilingsSource::measured;
  c.ceilings.memory_bytes_per_s = 4.41e12;
  c.ceilings.l2_bytes_per_s = 11.2e12;
  c.ceilings.peak_flops_per_s = {{"fp32", 55e12}, {"bf16", 700e12}, {"fp8_e4m3", 1300e12}};
  c.ceilings.empty_launch_us = 2.1;
  c.hbm_kernel = "read";
  c.fp32_observed_sm_mhz = 1755;
  c.max_sm_clock_mhz = 1980;
  c.notes = {"fp64: not measured"};
  return c;
}

// Sets or unsets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    remember(name);
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_)
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
  }

 private:
  void remember(const char* name) {
    for (const auto& s : saved_)
      if (s.first == name) return;
    const char* v = std::getenv(name);
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST(CeilingsJson, RoundTrips) {
  MeasuredCeilings c = sample_measurement();
  Record r;
  r.name = "ceiling.hbm.read";
  r.samples_ms = {0.25, 0.26};
  r.bytes = 1 << 30;
  finalize(r);
  c.records.push_back(r);
  c.from_cache = true;  // not part of the file

  const MeasuredCeilings back = ceilings_from_json(to_json(c));
  EXPECT_EQ(back.device_uuid, c.device_uuid);
  EXPECT_EQ(back.ceilings.source, CeilingsSource::measured);
  EXPECT_DOUBLE_EQ(back.ceilings.memory_bytes_per_s, 4.41e12);
  EXPECT_DOUBLE_EQ(back.ceilings.l2_bytes_per_s, 11.2e12);
  EXPECT_EQ(back.ceilings.peak_flops_per_s, c.ceilings.peak_flops_per_s);
  EXPECT_DOUBLE_EQ(back.ceilings.empty_launch_us, 2.1);
  EXPECT_EQ(back.ceilings.source_text, "measured on this GPU (2026-11-29T10:00:00Z)");
  EXPECT_EQ(back.hbm_kernel, "read");
  EXPECT_DOUBLE_EQ(back.fp32_observed_sm_mhz, 1755);
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].name, "ceiling.hbm.read");
  EXPECT_EQ(back.notes, c.notes);
  EXPECT_FALSE(back.from_cache);
}

TEST(CeilingsJson, CacheFileKeepsItsFlatKeys) {
  // The file format predates DeviceCeilings: fp32 under its own key, GEMM dtypes together.
  const auto j = to_json(sample_measurement());
  EXPECT_EQ(j["schema"], "ridge-ceilings-1");
  EXPECT_DOUBLE_EQ(j["hbm_bytes_per_s"].get<double>(), 4.41e12);
  EXPECT_DOUBLE_EQ(j["fp32_flops_per_s"].get<double>(), 55e12);
  EXPECT_FALSE(j["tensor_flops_per_s"].contains("fp32"));
  EXPECT_DOUBLE_EQ(j["tensor_flops_per_s"]["bf16"].get<double>(), 700e12);
  EXPECT_DOUBLE_EQ(j["empty_launch_us"].get<double>(), 2.1);
}

TEST(CeilingsJson, ReadsACacheFileWrittenBeforeDeviceCeilings) {
  // Written by ridge before the ceilings type was unified (and without the optional keys).
  const auto old = nlohmann::json::parse(R"({
    "schema": "ridge-ceilings-1", "device_uuid": "GPU-old", "device_name": "NVIDIA H200",
    "measured_at_utc": "2026-11-29T09:00:00Z", "hbm_bytes_per_s": 4.2e12, "hbm_kernel": "copy",
    "l2_bytes_per_s": 1.1e13, "fp32_flops_per_s": 5.1e13,
    "tensor_flops_per_s": {"bf16": 6.8e14, "fp16": 6.9e14, "tf32": 3.4e14, "fp8_e4m3": 1.2e15},
    "empty_launch_us": 2.5, "notes": []})");
  const MeasuredCeilings c = ceilings_from_json(old);
  EXPECT_DOUBLE_EQ(c.ceilings.memory_bytes_per_s, 4.2e12);
  EXPECT_DOUBLE_EQ(c.ceilings.peak_flops("fp32"), 5.1e13);
  EXPECT_DOUBLE_EQ(c.ceilings.peak_flops("tf32"), 3.4e14);
  EXPECT_EQ(c.ceilings.peak_flops_per_s.size(), 5u);
  EXPECT_DOUBLE_EQ(c.ceilings.empty_launch_us, 2.5);
  EXPECT_DOUBLE_EQ(c.empty_launch_graph_us, 0);
}

TEST(CeilingsJson, RejectsOtherSchemasAndMissingFields) {
  const auto good = to_json(sample_measurement());
  auto j = good;
  j["schema"] = "something-else";
  EXPECT_THROW(ceilings_from_json(j), UsageError);
  auto k = good;
  k.erase("hbm_bytes_per_s");
  EXPECT_THROW(ceilings_from_json(k), UsageError);
  auto zero = good;
  zero["fp32_flops_per_s"] = 0;
  EXPECT_THROW(ceilings_from_json(zero), UsageError);
}

TEST(DeviceCeilings, SameFieldsFromTheCatalogAndFromAMeasurement) {
  const CatalogEntry& h200 = catalog_entry("h200-sxm");
  const DeviceCeilings& sheet = h200.ceilings;
  EXPECT_EQ(sheet.source, CeilingsSource::datasheet);
  EXPECT_EQ(sheet.source_text, "datasheet of " + h200.name);
  EXPECT_DOUBLE_EQ(sheet.memory_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(sheet.l2_bytes_per_s, 0);  // datasheets do not publish it
  EXPECT_NEAR(sheet.peak_flops("bf16"), 989.5e12, 1e12);
  EXPECT_NEAR(sheet.ridge_point("bf16"), 989.5e12 / 4.8e12, 0.5);
  EXPECT_EQ(*h200.peak(DType::bf16), sheet.peak_flops("bf16"));

  const DeviceCeilings measured = ceilings_from_json(to_json(sample_measurement())).ceilings;
  EXPECT_EQ(measured.source, CeilingsSource::measured);
  // Both answer the same questions the same way.
  for (const DeviceCeilings* c : {&sheet, &measured}) {
    EXPECT_TRUE(c->usable());
    EXPECT_GT(c->roof_for("bf16"), c->roof_for("fp32"));
    EXPECT_DOUBLE_EQ(c->roof_for("fp8"), c->peak_flops("fp8_e4m3"));
    EXPECT_THROW(c->roof_for("int4"), UsageError);  // never another dtype's roof
    EXPECT_THROW(c->roof_for("fp4"), UsageError) << "neither lists FP4";
    EXPECT_DOUBLE_EQ(c->ridge_point("fp32"), c->peak_flops("fp32") / c->memory_bytes_per_s);
  }
  EXPECT_DOUBLE_EQ(measured.peak_flops("fp16"), 0);
  EXPECT_DOUBLE_EQ(measured.ridge_point("fp16"), 0);
  EXPECT_DOUBLE_EQ(measured.highest_peak_flops(), 1300e12);

  // The JSON form of the type reads back the same, whichever the source.
  for (const DeviceCeilings& c : {sheet, measured}) {
    const DeviceCeilings back = device_ceilings_from_json(to_json(c));
    EXPECT_EQ(back.source, c.source);
    EXPECT_EQ(back.source_text, c.source_text);
    EXPECT_DOUBLE_EQ(back.memory_bytes_per_s, c.memory_bytes_per_s);
    EXPECT_DOUBLE_EQ(back.l2_bytes_per_s, c.l2_bytes_per_s);
    EXPECT_EQ(back.peak_flops_per_s, c.peak_flops_per_s);
    EXPECT_DOUBLE_EQ(back.empty_launch_us, c.empty_launch_us);
  }
  EXPECT_THROW(device_ceilings_from_json(nlohmann::json{{"source", "guessed"}}), UsageError);
}

TEST(DeviceCeilings, ComparisonRowsAndTheClockAdjustedFp32Note) {
  const CatalogEntry& h200 = catalog_entry("h200-sxm");
  const MeasuredCeilings m = sample_measurement();
  const auto rows = compare_ceilings(h200, m);
  ASSERT_GE(rows.size(), 4u);
  EXPECT_EQ(rows[0].ceiling, "memory bandwidth");
  EXPECT_TRUE(rows[0].bandwidth);
  EXPECT_NEAR(rows[0].fraction_of_datasheet(), 4.41 / 4.8, 1e-12);
  EXPECT_EQ(rows[1].ceiling, "L2 bandwidth");
  EXPECT_TRUE(std::isnan(rows[1].fraction_of_datasheet()));
  const CeilingComparison* fp32 = nullptr;
  const CeilingComparison* fp16 = nullptr;
  for (const auto& r : rows) {
    if (r.dtype == "fp32") fp32 = &r;
    if (r.dtype == "fp16") fp16 = &r;
  }
  ASSERT_TRUE(fp32 && fp16);
  // 55 TFLOP/s at 1755 of 1980 MHz against 67 TFLOP/s at 1980 MHz: 92.6% at that clock.
  EXPECT_NE(fp32->note.find("SM clock 1755 of 1980 MHz: 93% of the datasheet at that clock"), std::string::npos)
      << fp32->note;
  EXPECT_EQ(fp16->note, "not measured");
  EXPECT_DOUBLE_EQ(fp16->measured, 0);
  // Model only: no L2 row, no notes.
  const auto sheet_only = compare_ceilings(h200, std::nullopt);
  for (const auto& r : sheet_only) {
    EXPECT_NE(r.ceiling, "L2 bandwidth");
    EXPECT_TRUE(r.note.empty()) << r.ceiling;
  }
}

TEST(CeilingsCache, FolderHonoursEachVariableInOrder) {
  ScopedEnv env;
  env.set("RIDGE_CACHE_DIR", "/tmp/ridge-cache-test");
  env.set("XDG_CACHE_HOME", "/tmp/xdg");
  env.set("HOME", "/home/someone");
  EXPECT_EQ(cache_folder(), "/tmp/ridge-cache-test");
  env.set("RIDGE_CACHE_DIR", "");  // empty counts as unset
  EXPECT_EQ(cache_folder(), "/tmp/xdg/ridge");
  env.set("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(cache_folder(), "/home/someone/.cache/ridge");
  env.set("HOME", nullptr);
  EXPECT_EQ(cache_folder(), std::filesystem::temp_directory_path() / "ridge-cache");
}

TEST(CeilingsCache, PathFollowsTheFolder) {
  ScopedEnv env;
  env.set("RIDGE_CACHE_DIR", "/tmp/ridge-cache-test");
  EXPECT_EQ(ceilings_cache_path("GPU-ab12"), "/tmp/ridge-cache-test/ceilings-GPU-ab12.json");
  EXPECT_EQ(ceilings_cache_path("GPU/../x"), "/tmp/ridge-cache-test/ceilings-GPU____x.json");  // no path tricks
  env.set("RIDGE_CACHE_DIR", nullptr);
  env.set("XDG_CACHE_HOME", nullptr);
  env.set("HOME", "/home/someone");
  EXPECT_EQ(ceilings_cache_path("GPU-ab12"), "/home/someone/.cache/ridge/ceilings-GPU-ab12.json");
}

TEST(CeilingsCache, CachedCeilingsLoadOrSayWhyNot) {
  ScopedEnv env;
  const auto dir = std::filesystem::temp_directory_path() / "ridge-unit-cache";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  env.set("RIDGE_CACHE_DIR", dir.c_str());

  std::string problem;
  EXPECT_FALSE(cached_ceilings("GPU-1234", &problem).has_value());
  EXPECT_TRUE(problem.empty()) << "no file is not a problem";

  std::ofstream(ceilings_cache_path("GPU-1234")) << to_json(sample_measurement()).dump(2);
  const auto c = cached_ceilings("GPU-1234", &problem);
  ASSERT_TRUE(c.has_value()) << problem;
  EXPECT_TRUE(c->from_cache);
  EXPECT_EQ(c->cache_file, ceilings_cache_path("GPU-1234"));
  EXPECT_DOUBLE_EQ(c->ceilings.memory_bytes_per_s, 4.41e12);

  // A file under another device's name, and a broken file, are not used, and say why.
  std::filesystem::copy_file(ceilings_cache_path("GPU-1234"), ceilings_cache_path("GPU-other"));
  EXPECT_FALSE(cached_ceilings("GPU-other", &problem).has_value());
  EXPECT_NE(problem.find("another device"), std::string::npos) << problem;
  std::ofstream(ceilings_cache_path("GPU-broken")) << "{ not json";
  problem.clear();
  EXPECT_FALSE(cached_ceilings("GPU-broken", &problem).has_value());
  EXPECT_NE(problem.find(ceilings_cache_path("GPU-broken")), std::string::npos) << problem;
  std::filesystem::remove_all(dir);
}

// Four processes ask for the ceilings of one device at once with no cache: one measures, the
// others wait for it and use its file; the file is whole at every moment.
TEST(CeilingsCache, ConcurrentProcessesMeasureOnceAndNeverCorruptTheCache) {
  ScopedEnv env;
  const auto dir = std::filesystem::temp_directory_path() / ("ridge-unit-cache-race-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  env.set("RIDGE_CACHE_DIR", dir.c_str());
  const std::filesystem::path measured_log = dir / "measured.log";
  std::filesystem::create_directories(dir);

  constexpr int processes = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        const MeasuredCeilings c = cached_or_measured_ceilings("GPU-1234", false, [&] {
          std::ofstream(measured_log, std::ios::app) << ::getpid() << "\n";
          ::usleep(300'000);  // a measurement takes a while: the others arrive during it
          return sample_measurement();
        });
        if (c.ceilings.memory_bytes_per_s != 4.41e12) status = 3;
      } catch (...) {
        status = 4;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = -1;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::ifstream log(measured_log);
  int measurements = 0;
  for (std::string line; std::getline(log, line);) ++measurements;
  EXPECT_EQ(measurements, 1) << "only the first process measures";
  std::string problem;
  EXPECT_TRUE(cached_ceilings("GPU-1234", &problem).has_value()) << problem;

  // --refresh measures even with a cache, and a waiting process says whose numbers it returns.
  bool waited = true;
  const MeasuredCeilings fresh = cached_or_measured_ceilings("GPU-1234", true, [] { return sample_measurement(); }, &waited);
  EXPECT_FALSE(waited);
  EXPECT_FALSE(fresh.from_cache);
  EXPECT_EQ(fresh.cache_file, ceilings_cache_path("GPU-1234"));
  std::filesystem::remove_all(dir);
}

TEST(CeilingsMode, ParsesTheFourModes) {
  EXPECT_EQ(ceilings_mode_from_string("auto"), CeilingsMode::cached);
  EXPECT_EQ(ceilings_mode_from_string("measure"), CeilingsMode::measure);
  EXPECT_EQ(ceilings_mode_from_string("refresh"), CeilingsMode::refresh);
  EXPECT_EQ(ceilings_mode_from_string("none"), CeilingsMode::none);
  EXPECT_THROW(ceilings_mode_from_string("cached"), UsageError);

  CeilingsLookup lookup;
  EXPECT_FALSE(lookup.best().has_value());
  lookup.datasheet = catalog_entry("h100-sxm");
  EXPECT_EQ(lookup.best()->source, CeilingsSource::datasheet);
  lookup.measured = sample_measurement();
  EXPECT_EQ(lookup.best()->source, CeilingsSource::measured);
  EXPECT_DOUBLE_EQ(lookup.datasheet_ceilings()->memory_bytes_per_s, 3.35e12);
}
