#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ridge/catalog.hpp"
#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

using namespace ridge;

namespace {

std::string source_catalog_text() { return read_text(std::string(RIDGE_SOURCE_DIR) + "/data/catalog.json"); }

DeviceDescription device(const std::string& name, int sms, double memory_bytes) {
  DeviceDescription d;
  d.name = name;
  d.sm_count = sms;
  d.memory_bytes = static_cast<std::int64_t>(memory_bytes);
  return d;
}

// A minimal valid document with one entry, to break field by field.
nlohmann::json one_entry() {
  return nlohmann::json::parse(R"({"devices": [{
    "key": "test-gpu", "name": "Test GPU", "match_names": ["Test GPU"], "sm_count": 10,
    "memory_gb": 8, "bandwidth_gb_per_s": 500, "l2_mib": 4,
    "peak_tflops": {"fp32": 10, "bf16": 100}, "sparse_peak_tflops": {"bf16": 200},
    "source": "made up for a test"}]})");
}

std::string error_of(const nlohmann::json& doc) {
  try {
    parse_catalog(doc.dump());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Catalog, BuiltInMatchesTheSourceFile) {
  // The compiled-in text is data/catalog.json: same entries, same order.
  const auto from_file = parse_catalog(source_catalog_text());
  const auto& built_in = builtin_catalog();
  ASSERT_EQ(from_file.size(), built_in.size());
  for (std::size_t i = 0; i < built_in.size(); ++i) EXPECT_EQ(from_file[i].key, built_in[i].key);
}

TEST(Catalog, EveryEntryIsCompleteAndConsistent) {
  const auto& entries = builtin_catalog();
  std::set<std::string> keys;
  for (const auto& e : entries) keys.insert(e.key);
  for (const char* required : {"h100-sxm", "h100-pcie", "h200-sxm", "a100-sxm-80gb", "a100-40gb", "rtx-4090",
                               "rtx-3090", "l40s", "l4", "t4", "b200", "gh200", "dgx-spark-gb10"})
    EXPECT_TRUE(keys.count(required)) << "missing catalog entry " << required;
  for (const auto& e : entries) {
    SCOPED_TRACE(e.key);
    EXPECT_FALSE(e.source.empty());
    EXPECT_FALSE(e.name.empty());
    EXPECT_FALSE(e.match_names.empty());
    EXPECT_GT(e.sm_count, 0);
    EXPECT_GT(e.memory_bytes, 1e9);
    EXPECT_GT(e.ceilings.memory_bytes_per_s, 100e9);
    ASSERT_TRUE(e.peak(DType::fp32).has_value()) << "every GPU has an FP32 peak";
    for (const auto& [name, sparse] : e.sparse_peak_flops)
      if (e.ceilings.peak_flops(name) > 0) {
        EXPECT_LE(e.ceilings.peak_flops(name), sparse) << name;
      }
    // Tensor peaks sit above the FP32 FMA peak; FP8 is at least BF16's rate.
    if (auto bf16 = e.peak(DType::bf16)) {
      EXPECT_GT(*bf16, *e.peak(DType::fp32));
    }
    if (auto fp8 = e.peak(DType::fp8_e4m3)) {
      EXPECT_GE(*fp8, *e.peak(DType::bf16));
    }
  }
  // GeForce parts carry the half-rate accumulate note.
  EXPECT_NE(catalog_entry("rtx-4090").notes.find("half"), std::string::npos);
  EXPECT_NE(catalog_entry("rtx-3090").notes.find("half"), std::string::npos);
  EXPECT_FALSE(catalog_entry("t4").peak(DType::bf16).has_value());
  EXPECT_FALSE(catalog_entry("a100-sxm-80gb").peak(DType::fp8_e4m3).has_value());
}

TEST(Catalog, SeedH100RidgePointFromTheCatalog) {
  const auto& h100 = catalog_entry("h100-sxm");
  EXPECT_NEAR(ridge_point(*h100.peak(DType::bf16), h100.ceilings.memory_bytes_per_s), 295, 1.0);
  const auto& h200 = catalog_entry("h200-sxm");
  EXPECT_NEAR(h200.ceilings.memory_bytes_per_s, 4.8e12, 1e9);
  EXPECT_NEAR(*h200.peak(DType::bf16), 989.5e12, 1e12);
}

TEST(Catalog, MatchesRunningDevicesByName) {
  auto h200 = match_device(device("NVIDIA H200", 132, 150.1e9));
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->key, "h200-sxm");
  EXPECT_EQ(match_device(device("NVIDIA H200 NVL", 132, 150.1e9))->key, "h200-nvl");
  EXPECT_EQ(match_device(device("NVIDIA H100 80GB HBM3", 132, 85.5e9))->key, "h100-sxm");
  EXPECT_EQ(match_device(device("NVIDIA H100 PCIe", 114, 85.5e9))->key, "h100-pcie");
  EXPECT_EQ(match_device(device("NVIDIA GH200 480GB", 132, 102e9))->key, "gh200");
  EXPECT_EQ(match_device(device("NVIDIA A100-SXM4-40GB", 108, 42.5e9))->key, "a100-40gb");
  EXPECT_EQ(match_device(device("NVIDIA GeForce RTX 4090", 128, 25.4e9))->key, "rtx-4090");
  EXPECT_EQ(match_device(device("NVIDIA L4", 58, 23.8e9))->key, "l4");
  EXPECT_EQ(match_device(device("NVIDIA L40S", 142, 48e9))->key, "l40s");
  EXPECT_EQ(match_device(device("Tesla T4", 40, 15.8e9))->key, "t4");
  // SM count unknown (0): the name decides.
  EXPECT_EQ(match_device(device("NVIDIA H200", 0, 0))->key, "h200-sxm");
}

TEST(Catalog, UnknownOrCutDownDevicesDoNotMatch) {
  EXPECT_FALSE(match_device(device("Mystery Accelerator 9000", 7, 3e9)).has_value());
  EXPECT_FALSE(match_device(device("", 132, 150e9)).has_value());
  // Name of a known part but a different SM count (a MIG slice, or the L40 vs the L4): no match.
  EXPECT_FALSE(match_device(device("NVIDIA H200", 16, 18e9)).has_value());
  EXPECT_FALSE(match_device(device("NVIDIA L40", 142, 48e9)).has_value());
  // No name match, but the same SMs and memory: the fallback finds it.
  EXPECT_EQ(match_device(device("NVIDIA A100 80GB PCIe", 108, 85e9))->key, "a100-sxm-80gb");
}

TEST(Catalog, UnknownKeyListsTheKnownOnes) {
  try {
    catalog_entry("h300");
    FAIL();
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("h300"), std::string::npos);
    EXPECT_NE(what.find("h100-sxm"), std::string::npos);
    EXPECT_NE(what.find("dgx-spark-gb10"), std::string::npos);
  }
  EXPECT_EQ(catalog_entry("H100-SXM").key, "h100-sxm");  // keys are case-insensitive
}

TEST(Catalog, BadFilesAreRejectedNamingEntryAndField) {
  EXPECT_TRUE(error_of(one_entry()).empty()) << error_of(one_entry());
  EXPECT_NE(std::string(error_of(nlohmann::json::array())).find("no entries"), std::string::npos);

  auto no_source = one_entry();
  no_source["devices"][0].erase("source");
  EXPECT_NE(error_of(no_source).find("'test-gpu'): field 'source' is missing"), std::string::npos) << error_of(no_source);

  auto bad_bandwidth = one_entry();
  bad_bandwidth["devices"][0]["bandwidth_gb_per_s"] = -3;
  EXPECT_NE(error_of(bad_bandwidth).find("field 'bandwidth_gb_per_s' must be > 0"), std::string::npos);

  auto text_number = one_entry();
  text_number["devices"][0]["sm_count"] = "ten";
  EXPECT_NE(error_of(text_number).find("field 'sm_count' must be a number"), std::string::npos);

  auto sparse_below_dense = one_entry();
  sparse_below_dense["devices"][0]["sparse_peak_tflops"]["bf16"] = 50;
  EXPECT_NE(error_of(sparse_below_dense).find("sparse_peak_tflops.bf16"), std::string::npos);

  auto bad_dtype = one_entry();
  bad_dtype["devices"][0]["peak_tflops"]["fp7"] = 1;
  EXPECT_NE(error_of(bad_dtype).find("peak_tflops.fp7"), std::string::npos);

  auto typo = one_entry();
  typo["devices"][0]["bandwith_gb_per_s"] = 1;
  EXPECT_NE(error_of(typo).find("'bandwith_gb_per_s' is not a known field"), std::string::npos);

  auto duplicate = one_entry();
  duplicate["devices"].push_back(duplicate["devices"][0]);
  EXPECT_NE(error_of(duplicate).find("entry 1 ('test-gpu')"), std::string::npos);

  EXPECT_THROW(parse_catalog("{ not json"), UsageError);

  // Found reading the reader for its fuzz target: an SM count past int's range was cast to int (undefined), and a figure near
  // DBL_MAX became infinite once scaled to bytes. Inputs: tests/unit/data/fuzz/catalog/.
  auto huge_sms = one_entry();
  huge_sms["devices"][0]["sm_count"] = 1e10;
  EXPECT_NE(error_of(huge_sms).find("field 'sm_count' must be > 0 and at most 1e+09"), std::string::npos)
      << error_of(huge_sms);
  auto huge_memory = one_entry();
  huge_memory["devices"][0]["memory_gb"] = 1e300;
  EXPECT_NE(error_of(huge_memory).find("field 'memory_gb' must be > 0 and at most"), std::string::npos);
  auto huge_peak = one_entry();
  huge_peak["devices"][0]["peak_tflops"]["fp32"] = 1e300;
  EXPECT_NE(error_of(huge_peak).find("peak_tflops.fp32"), std::string::npos);
}

TEST(Catalog, UserFileReplacesTheBuiltIn) {
  const auto path = std::filesystem::temp_directory_path() / "ridge_test_catalog.json";
  {
    std::ofstream f(path);
    f << one_entry().dump(2);
  }
  load_catalog_file(path.string());
  EXPECT_EQ(catalog().size(), 1u);
  EXPECT_EQ(catalog_entry("test-gpu").sm_count, 10);
  EXPECT_THROW(catalog_entry("h100-sxm"), UsageError);
  EXPECT_EQ(match_device(device("Test GPU", 10, 8e9))->key, "test-gpu");
  // The impossible-rate bound still knows the fastest built-in part.
  EXPECT_GE(fastest_known_peak_flops(DType::bf16), 2.25e15);

  std::ofstream(path) << "{\"devices\": [{\"key\": \"x\"}]}";
  try {
    load_catalog_file(path.string());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos);
  }
  std::filesystem::remove(path);
  // Back to the built-in catalog for the other tests.
  const auto builtin_path = std::string(RIDGE_SOURCE_DIR) + "/data/catalog.json";
  load_catalog_file(builtin_path);
  EXPECT_EQ(catalog().size(), builtin_catalog().size());
}

TEST(Catalog, FastestKnownPeakIsTheCatalogMaximum) {
  double bf16 = 0, fp32 = 0;
  for (const auto& e : builtin_catalog()) {
    if (auto p = e.peak(DType::bf16)) bf16 = std::max(bf16, *p);
    if (auto p = e.peak(DType::fp32)) fp32 = std::max(fp32, *p);
  }
  EXPECT_DOUBLE_EQ(fastest_known_peak_flops(DType::bf16), bf16);
  EXPECT_DOUBLE_EQ(fastest_known_peak_flops(DType::fp32), fp32);
  EXPECT_GE(fastest_known_peak_flops(DType::fp8_e4m3), fastest_known_peak_flops(DType::bf16));
}

TEST(Catalog, ImpossibleRatesAreJudgedAgainstTheFastestPartWithSlack) {
  double flops = 0, bandwidth = 0;
  for (const auto& e : builtin_catalog()) {
    flops = std::max(flops, e.ceilings.highest_peak_flops());
    bandwidth = std::max(bandwidth, e.ceilings.memory_bytes_per_s);
  }
  ASSERT_GT(flops, 0);
  ASSERT_GT(bandwidth, 0);
  EXPECT_TRUE(impossible_rate_findings(flops, bandwidth).empty());  // the fastest part at its datasheet
  EXPECT_TRUE(impossible_rate_findings(flops * 1.04, bandwidth * 9.9).empty());  // within the slack; a cache
  EXPECT_TRUE(impossible_rate_findings(0, 0).empty());  // not given
  const auto both = impossible_rate_findings(9.5e18, bandwidth * cache_bandwidth_multiple * 1.01);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].rfind("impossible: ", 0), 0u);
  EXPECT_NE(both[0].find("TFLOP/s"), std::string::npos);
  EXPECT_NE(both[1].find("GB/s"), std::string::npos);
  EXPECT_EQ(impossible_rate_findings(flops * ceiling_slack * 1.01, 0).size(), 1u);
}
