// The GPU timers' options checked in one place (CudaOptions::validate), the method names in one
// list (method_names), the automatic repeats' cap in one constant: no GPU needed.
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/measure.hpp"

using namespace ridge;

namespace {

// The message of the UsageError `options.validate()` throws, or "" when it throws none.
std::string validation_error(const CudaOptions& options) {
  try {
    options.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CudaOptions, DefaultsAreValid) { EXPECT_EQ(validation_error(CudaOptions{}), ""); }

TEST(CudaOptions, EachBadFieldIsNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* field;
    void (*spoil)(CudaOptions&, double nan, double inf);
  };
  const Case cases[] = {
      {"samples", [](CudaOptions& o, double, double) { o.samples = 0; }},
      {"warmup", [](CudaOptions& o, double, double) { o.warmup = -1; }},
      {"repeats", [](CudaOptions& o, double, double) { o.repeats = -1; }},
      {"max_samples", [](CudaOptions& o, double, double) { o.max_samples = o.samples - 1; }},
      {"target_ci_relative", [](CudaOptions& o, double nan, double) { o.target_ci_relative = nan; }},
      {"target_ci_relative", [](CudaOptions& o, double, double inf) { o.target_ci_relative = inf; }},
      {"time_budget_s", [](CudaOptions& o, double nan, double) { o.time_budget_s = nan; }},
      {"time_budget_s", [](CudaOptions& o, double, double inf) { o.time_budget_s = inf; }},
      {"time_budget_s", [](CudaOptions& o, double, double) { o.time_budget_s = 0; }},
      {"target_sample_ms", [](CudaOptions& o, double nan, double) { o.target_sample_ms = nan; }},
      {"spin_timeout_s", [](CudaOptions& o, double, double) { o.spin_timeout_s = -1; }},
      {"throttle_threshold", [](CudaOptions& o, double nan, double) { o.throttle_threshold = nan; }},
      {"throttle_threshold", [](CudaOptions& o, double, double) { o.throttle_threshold = 1.5; }},
      {"throttle_recovery_s",
       [](CudaOptions& o, double, double) { o.throttle_recovery_s = CudaOptions::max_throttle_recovery_s + 1; }},
      {"rest_before_sample_s", [](CudaOptions& o, double nan, double) { o.rest_before_sample_s = nan; }},
      {"rest_before_sample_s",
       [](CudaOptions& o, double, double) { o.rest_before_sample_s = CudaOptions::max_rest_before_sample_s + 1; }},
  };
  for (const auto& c : cases) {
    CudaOptions o;
    c.spoil(o, nan, inf);
    const std::string error = validation_error(o);
    EXPECT_EQ(error.rfind(c.field, 0), 0u) << c.field << ": " << error;
    EXPECT_EQ(error.find("--"), std::string::npos) << error;  // a field, not a command-line flag
  }
}

TEST(CudaOptions, AutoRepeatsStayWithinTheCap) {
  EXPECT_EQ(auto_repeats(1e-9, 10), CudaOptions::max_auto_repeats);
  EXPECT_EQ(auto_repeats(0, 1000), CudaOptions::max_auto_repeats);
  EXPECT_EQ(auto_repeats(0.05, 0.5), 10);
  EXPECT_EQ(auto_repeats(10, 0.5), 1);
  EXPECT_EQ(auto_repeats(std::nan(""), 0.5), 5000);  // an untimed call counts as 0.1 us
}

TEST(MethodNames, EveryNameParsesToItsMethodAndEveryMethodHasItsOwnName) {
  std::set<std::string> seen;
  for (const auto& [name, method] : method_names()) {
    EXPECT_TRUE(seen.insert(name).second) << name << " listed twice";
    EXPECT_EQ(method_from_string(name), method) << name;
  }
  for (Method m : all_methods)
    if (is_timer(m)) {
      EXPECT_TRUE(seen.count(to_string(m))) << to_string(m);
    }
  for (const char* alias : {"events", "spin", "graph", "wall", "sync", "naive"}) EXPECT_TRUE(seen.count(alias)) << alias;
  EXPECT_THROW(method_from_string("fast"), UsageError);
}

// cupti_trace and none name records no timer produced: one Method type, but no timer offers them.
TEST(MethodNames, NonTimersAreMethodsButNoTimerOffersThem) {
  std::set<Method> timers;
  for (const auto& [name, method] : method_names()) timers.insert(method);
  EXPECT_EQ(timers.size(), 6u);
  for (Method m : {Method::cupti_trace, Method::none}) {
    EXPECT_FALSE(is_timer(m));
    EXPECT_FALSE(timers.count(m)) << to_string(m);
    EXPECT_THROW(method_from_string(to_string(m)), UsageError);
    EXPECT_FALSE(describe(m).empty());
    try {
      require_timer(m);
      ADD_FAILURE() << to_string(m) << " accepted as a timer";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("method: " + to_string(m) + " is not a timer", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("graph_replay"), std::string::npos);
    }
  }
  EXPECT_EQ(to_string(Method::cupti_trace), "cupti_trace");
  EXPECT_EQ(to_string(Method::none), "none");
  for (Method m : timers) EXPECT_NO_THROW(require_timer(m));
}
