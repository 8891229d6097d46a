#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"

using namespace ridge;

TEST(CeilingsJson, RoundTrips) {
  MeasuredCeilings c;
  c.device_uuid = "GPU-1234";
  c.device_name = "NVIDIA H200";
  c.measured_at_utc = "2026-11-29T10:00:00Z";
  c.hbm_bytes_per_s = 4.41e12;
  c.hbm_kernel = "read";
  c.l2_bytes_per_s = 11.2e12;
  c.fp32_flops_per_s = 55e12;
  c.fp32_observed_sm_mhz = 1755;
  c.max_sm_clock_mhz = 1980;
  c.tensor_flops_per_s = {{"bf16", 700e12}, {"fp8_e4m3", 1300e12}};
  c.empty_launch_us = 2.1;
  c.notes = {"fp64: not measured"};
  Record r;
  r.name = "ceiling.hbm.read";
  r.samples_ms = {0.25, 0.26};
  r.bytes = 1 << 30;
  finalize(r);
  c.records.push_back(r);
  c.from_cache = true;  // not part of the file

  const MeasuredCeilings back = ceilings_from_json(to_json(c));
  EXPECT_EQ(back.device_uuid, c.device_uuid);
  EXPECT_DOUBLE_EQ(back.hbm_bytes_per_s, c.hbm_bytes_per_s);
  EXPECT_EQ(back.hbm_kernel, "read");
  EXPECT_DOUBLE_EQ(back.fp32_observed_sm_mhz, 1755);
  EXPECT_DOUBLE_EQ(back.tensor_flops_per_s.at("fp8_e4m3"), 1300e12);
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].name, "ceiling.hbm.read");
  EXPECT_EQ(back.notes, c.notes);
  EXPECT_FALSE(back.from_cache);
}

TEST(CeilingsJson, RejectsOtherSchemasAndMissingFields) {
  MeasuredCeilings c;
  c.hbm_bytes_per_s = 1e12;
  c.fp32_flops_per_s = 1e12;
  auto j = to_json(c);
  j["schema"] = "something-else";
  EXPECT_THROW(ceilings_from_json(j), UsageError);
  auto k = to_json(c);
  k.erase("hbm_bytes_per_s");
  EXPECT_THROW(ceilings_from_json(k), UsageError);
  auto zero = to_json(c);
  zero["fp32_flops_per_s"] = 0;
  EXPECT_THROW(ceilings_from_json(zero), UsageError);
}

TEST(CeilingsJson, CachePathFollowsTheEnvironment) {
  const char* old = std::getenv("RIDGE_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("RIDGE_CACHE_DIR", "/tmp/ridge-cache-test", 1);
  EXPECT_EQ(ceilings_cache_path("GPU-ab12"), "/tmp/ridge-cache-test/ceilings-GPU-ab12.json");
  EXPECT_EQ(ceilings_cache_path("GPU/../x"), "/tmp/ridge-cache-test/ceilings-GPU____x.json");  // no path tricks
  unsetenv("RIDGE_CACHE_DIR");
  setenv("HOME", "/home/someone", 1);
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(ceilings_cache_path("GPU-ab12"), "/home/someone/.cache/ridge/ceilings-GPU-ab12.json");
  if (!saved.empty()) setenv("RIDGE_CACHE_DIR", saved.c_str(), 1);
}
