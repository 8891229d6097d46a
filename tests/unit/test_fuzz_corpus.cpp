// Replays each fuzz target's corpus (fuzz/corpus/<target>/) and every input a fuzzer ever found a
// problem with (tests/unit/data/fuzz/<target>/) through the same function the libFuzzer target
// calls (fuzz/readers.hpp), in the ordinary build: each input is read or refused with UsageError.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../fuzz/readers.hpp"

namespace {

namespace fs = std::filesystem;

struct FuzzTarget {
  std::string name;
  std::function<void(std::string_view)> read;
};

std::vector<FuzzTarget> fuzz_targets() {
  return {{"result_file", ridge::fuzz::read_result_file},
          {"chrome_trace", ridge::fuzz::read_chrome_trace},
          {"safetensors", ridge::fuzz::read_safetensors},
          {"catalog", ridge::fuzz::read_catalog},
          {"sizes", ridge::fuzz::read_sizes}};
}

std::vector<fs::path> inputs_in(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reads every input; returns how many were accepted (the rest were refused with UsageError).
int replay(const FuzzTarget& target, const std::vector<fs::path>& inputs) {
  int accepted = 0;
  for (const auto& input : inputs) {
    try {
      target.read(bytes_of(input));
      ++accepted;
    } catch (const ridge::UsageError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << target.name << ": " << input << " threw something other than UsageError: " << e.what();
    }
  }
  return accepted;
}

}  // namespace

TEST(FuzzCorpus, EveryCorpusInputAndPastFindingIsReadOrRefusedWithAUsageError) {
  const fs::path root(RIDGE_SOURCE_DIR);
  for (const auto& target : fuzz_targets()) {
    const auto corpus = inputs_in(root / "fuzz" / "corpus" / target.name);
    ASSERT_GE(corpus.size(), 3u) << "fuzz/corpus/" << target.name << " is missing or nearly empty";
    // A corpus needs valid files to start from, or the fuzzer spends its time on the first check.
    EXPECT_GE(replay(target, corpus), 1) << "no input of fuzz/corpus/" << target.name << " is accepted";
    replay(target, inputs_in(root / "tests" / "unit" / "data" / "fuzz" / target.name));
  }
}
