// The keys of Record::params and Record::extra: spelled once (record_keys.hpp), distinct, snake_case,
// and never written as a literal elsewhere in the library, the tool or the bindings; the typed
// accessors of the extra keys.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/result.hpp"

namespace {

bool is_snake_case(std::string_view key) {
  static const std::regex snake("[a-z][a-z0-9]*(_[a-z0-9]+)*");
  return std::regex_match(key.begin(), key.end(), snake);
}

template <std::size_t N>
void expect_distinct_snake_case(const char* const (&keys)[N], const char* what) {
  std::set<std::string_view> seen;
  for (const char* key : keys) {
    EXPECT_TRUE(is_snake_case(key)) << what << " key '" << key << "' is not snake_case";
    EXPECT_TRUE(seen.insert(key).second) << what << " key '" << key << "' is listed twice";
  }
}

}  // namespace

TEST(RecordKeys, EveryKeyIsDistinctAndSnakeCase) {
  expect_distinct_snake_case(ridge::all_param_keys, "param");
  expect_distinct_snake_case(ridge::all_extra_keys, "extra");
  EXPECT_FALSE(is_snake_case("Fraction-of"));  // the check itself can fail
}

TEST(RecordKeys, KneeKeysAreBuiltAsResultFilesSpellThem) {
  EXPECT_EQ(ridge::extra_key::knee_elements(0.9), "knee_90_elements");
  EXPECT_EQ(ridge::extra_key::knee_of_peak_n(0.5, "measured"), "knee_50_of_measured_peak_n");
  EXPECT_TRUE(is_snake_case(ridge::extra_key::knee_of_peak_n(0.95, "datasheet")));
}

// A literal key in a params/extra subscript, lookup or initializer list: the rule is to name the
// constant from record_keys.hpp instead.
TEST(RecordKeys, NoSourceSpellsARecordKeyAsALiteral) {
  static const std::regex literal_key(
      R"((\w*params|extra)\s*(\[|\.value\(|\.contains\(|\.find\(|\.at\()\s*"|(\w*params|extra)\s*(=\s*)?\{\s*\{\s*")");
  EXPECT_TRUE(std::regex_search(R"(r.extra["bound"] = b;)", literal_key));  // the pattern finds one
  EXPECT_TRUE(std::regex_search(R"(r.params = {{"batch", 1}};)", literal_key));
  static const std::set<std::string> source_extensions = {".cpp", ".cu", ".cuh", ".h", ".hpp"};
  const std::filesystem::path root(RIDGE_SOURCE_DIR);
  std::vector<std::string> offenders;
  std::size_t files = 0;
  for (const char* dir : {"src", "tools", "python/src"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file() || !source_extensions.count(entry.path().extension().string())) continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number)
        if (std::regex_search(line, literal_key))
          offenders.push_back(std::filesystem::relative(entry.path(), root).string() + ":" + std::to_string(number));
    }
  }
  EXPECT_GT(files, 50u);  // the sources were found
  std::ostringstream list;
  for (const auto& o : offenders) list << "\n  " << o;
  EXPECT_TRUE(offenders.empty()) << "use a constant from include/ridge/record_keys.hpp at:" << list.str();
}

// ---- typed extra fields ------------------------------------------------------------------------

namespace {

ridge::Record named(const char* name) {
  ridge::Record r;
  r.name = name;
  return r;
}

// The message of the UsageError `read` throws; "" when it throws none.
template <class Read>
std::string usage_error_of(Read read) {
  try {
    read();
  } catch (const ridge::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ExtraField, AnAbsentKeyReadsAsTheFieldsFallback) {
  using namespace ridge::extra_key;
  const ridge::Record r = named("bandwidth.add");
  EXPECT_FALSE(gb_per_s.has(r));
  EXPECT_FALSE(gb_per_s.find(r).has_value());
  EXPECT_EQ(gb_per_s.get(r), 0.0);
  EXPECT_FALSE(launch_bound.get(r));
  EXPECT_EQ(bound.get(r), "");
  EXPECT_EQ(grid_blocks.get(r), 0);
  EXPECT_TRUE(sample_sm_mhz.get(r).empty());
  EXPECT_TRUE(counters.get(r).is_null());
  // A fraction of a roof the run did not know is not 0%: it reads as NaN, printed as "-".
  EXPECT_TRUE(std::isnan(fraction_of_datasheet.get(r)));
}

TEST(ExtraField, ANullValueReadsAsAbsent) {
  // The JSON writer spells NaN as null; a knee never reached is stored as null.
  ridge::Record r = named("bandwidth.add");
  r.extra[ridge::extra_key::gb_per_s.name] = nullptr;
  EXPECT_FALSE(ridge::extra_key::gb_per_s.has(r));
  EXPECT_EQ(ridge::extra_key::gb_per_s.get(r), 0.0);
  ridge::extra_key::launch_bound_up_to_elements.set_or_null(r, std::nullopt);
  EXPECT_TRUE(r.extra.contains("launch_bound_up_to_elements"));  // present, saying "none"
  EXPECT_FALSE(ridge::extra_key::launch_bound_up_to_elements.find(r).has_value());
  r.extra[ridge::extra_key::sample_sm_mhz.name] = {1980.0, nullptr};
  const std::vector<double> mhz = ridge::extra_key::sample_sm_mhz.get(r);
  ASSERT_EQ(mhz.size(), 2u);
  EXPECT_EQ(mhz[0], 1980.0);
  EXPECT_TRUE(std::isnan(mhz[1]));
}

TEST(ExtraField, APresentValueIsReadAsItsType) {
  ridge::Record r = named("matmul");
  r.extra = nlohmann::json::parse(
      R"({"tflop_per_s": 675, "cache_resident": true, "bound": "compute", "l2_bytes": 52428800.0,
          "grid_blocks": 1056, "rank_median_ms": [0.5, 0.75], "variant": {"chains_per_thread": 8}})");
  EXPECT_EQ(ridge::extra_key::tflop_per_s.get(r), 675.0);  // an integer is a number too
  EXPECT_TRUE(ridge::extra_key::cache_resident.get(r));
  EXPECT_EQ(ridge::extra_key::bound.get(r), "compute");
  EXPECT_EQ(ridge::extra_key::l2_bytes.get(r), 52428800.0);
  EXPECT_EQ(ridge::extra_key::grid_blocks.get(r), 1056);
  EXPECT_EQ(ridge::extra_key::rank_median_ms.get(r), (std::vector<double>{0.5, 0.75}));
  EXPECT_EQ(ridge::extra_key::variant.get(r).value("chains_per_thread", 0), 8);
  EXPECT_EQ(ridge::extra_key::bound.find(r).value_or("-"), "compute");
}

TEST(ExtraField, AValueOfTheWrongTypeIsAUsageErrorNamingRecordAndKey) {
  ridge::Record r = named("bandwidth.add");
  r.extra = nlohmann::json::parse(
      R"({"gb_per_s": "fast", "launch_bound": 1, "grid_blocks": 2.5, "kernels_per_step": 4294967296,
          "bound": 3, "sample_sm_mhz": [1980, "high"], "rank_median_ms": 0.5})");
  const std::string message = usage_error_of([&] { ridge::extra_key::gb_per_s.get(r); });
  EXPECT_NE(message.find("record 'bandwidth.add'"), std::string::npos) << message;
  EXPECT_NE(message.find("extra 'gb_per_s'"), std::string::npos) << message;
  EXPECT_NE(message.find("should be a number"), std::string::npos) << message;
  EXPECT_NE(message.find("string"), std::string::npos) << message;
  EXPECT_TRUE(ridge::extra_key::gb_per_s.has(r));  // has() only looks; find() reads
  EXPECT_THROW(ridge::extra_key::gb_per_s.find(r), ridge::UsageError);
  EXPECT_NE(usage_error_of([&] { ridge::extra_key::launch_bound.get(r); }).find("true or false"), std::string::npos);
  EXPECT_NE(usage_error_of([&] { ridge::extra_key::grid_blocks.get(r); }).find("an integer"), std::string::npos);
  EXPECT_NE(usage_error_of([&] { ridge::extra_key::kernels_per_step.get(r); }).find("an integer"), std::string::npos);  // > int
  EXPECT_NE(usage_error_of([&] { ridge::extra_key::bound.get(r); }).find("a string"), std::string::npos);
  EXPECT_NE(usage_error_of([&] { ridge::extra_key::sample_sm_mhz.get(r); }).find("a list of numbers"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] { ridge::extra_key::rank_median_ms.get(r); }).find("a list of numbers"),
            std::string::npos);
}

TEST(ExtraField, SetThenGetRoundTripsAndWritesTheFileSpelling) {
  ridge::Record r = named("matmul");
  ridge::extra_key::gb_per_s.set(r, 812.5);
  ridge::extra_key::method_choice.set(r, "auto");
  ridge::extra_key::cache_resident.set(r, true);
  ridge::extra_key::reduced_clock_samples.set(r, 3);
  ridge::extra_key::sample_sm_mhz.set(r, {1980.0, 1755.0});
  ridge::extra_key::variants_tried.set(r, nlohmann::json::array({{{"blocks", 264}}}));
  EXPECT_EQ(ridge::extra_key::gb_per_s.get(r), 812.5);
  EXPECT_EQ(ridge::extra_key::method_choice.get(r), "auto");
  EXPECT_TRUE(ridge::extra_key::cache_resident.get(r));
  EXPECT_EQ(ridge::extra_key::reduced_clock_samples.get(r), 3);
  EXPECT_EQ(ridge::extra_key::sample_sm_mhz.get(r), (std::vector<double>{1980.0, 1755.0}));
  EXPECT_EQ(ridge::extra_key::variants_tried.get(r)[0]["blocks"], 264);
  ridge::extra_key::gb_per_s.set(r, 900.0);  // replaces
  EXPECT_EQ(ridge::extra_key::gb_per_s.get(r), 900.0);
  // The file keeps the names and JSON types it always had.
  EXPECT_EQ(r.extra.dump(), R"({"cache_resident":true,"gb_per_s":900.0,"method_choice":"auto",)"
                            R"("reduced_clock_samples":3,"sample_sm_mhz":[1980.0,1755.0],"variants_tried":[{"blocks":264}]})");
  // A field is also a plain key of a JSON object, for code that handles the JSON itself.
  EXPECT_EQ(r.extra[ridge::extra_key::gb_per_s], 900.0);
  EXPECT_EQ(r.extra.value(ridge::extra_key::method_choice, std::string()), "auto");
  const nlohmann::json object = {{ridge::extra_key::bound, "memory"}};
  EXPECT_EQ(object.dump(), R"({"bound":"memory"})");
}
