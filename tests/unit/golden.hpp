#pragma once
// Output pinned byte for byte: compares text with tests/unit/golden/NAME. On a mismatch (or a
// missing golden file) the actual text is written to the working directory as NAME, so a
// reviewer can diff it and, when the change is intended, copy it over the golden file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

inline void expect_matches_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(RIDGE_SOURCE_DIR) + "/tests/unit/golden/" + name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream expected;
  expected << in.rdbuf();
  if (in && expected.str() == actual) return;
  std::ofstream(name, std::ios::binary) << actual;
  ADD_FAILURE() << (in ? "output differs from " : "no golden file ") << path << "; the actual output is in ./" << name
                << " (copy it over the golden file if the change is intended)";
}
