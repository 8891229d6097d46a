// The keys of Record::params and Record::extra: spelled once (record_keys.hpp), distinct, snake_case,
// and never written as a literal elsewhere in the library, the tool or the bindings.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/record_keys.hpp"

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
