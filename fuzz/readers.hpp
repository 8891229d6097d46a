#pragma once
// What each fuzz target does with one input, shared by the libFuzzer targets (fuzz_<name>.cpp) and
// the unit test that replays the corpus and every past finding (tests/unit/test_fuzz_corpus.cpp).
// Each function calls the library's public reader on the bytes and checks what it promises about an
// input it accepts. Bad input must end in ridge::UsageError (exit 2); any other exception, a crash,
// a hang or a memory blow-up is a finding (docs/hardening.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"
#include "ridge/gpt2/safetensors.hpp"
#include "ridge/sweep.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/writers.hpp"
#include "trace/model/chrome_metadata.hpp"

namespace ridge::fuzz {

/// A property every accepted input must have; breaking it aborts (a finding).
inline void require(bool holds, const char* what) {
  if (!holds) {
    std::fprintf(stderr, "fuzz: an accepted input breaks: %s\n", what);
    std::abort();
  }
}

/// parse_result_text (what load_result_file uses); an accepted file survives a write and re-read.
inline void read_result_file(std::string_view bytes) {
  const ResultSet set = parse_result_text(bytes, "fuzz input");
  const ResultSet again = parse_result_text(json_text(to_json(set)), "its round trip");
  require(again.records.size() == set.records.size(), "the round trip keeps every record");
}

/// parse_chrome_json, then the analysis and its text, as `ridge trace --analyze` runs them. The
/// reader takes plain events straight from the parser's tokens: reading every event as a DOM must
/// give the same trace, or the same error.
inline void read_chrome_trace(std::string_view bytes) {
  const std::string text(bytes);
  std::string dom_error;
  std::string dom_trace;
  try {
    dom_trace = trace::to_chrome_json(detail::parse_chrome_json_through_dom(text));
  } catch (const UsageError& e) {
    dom_error = e.what();
  }
  try {
    const trace::Trace trace = trace::parse_chrome_json(text);
    require(dom_error.empty() && trace::to_chrome_json(trace) == dom_trace, "the DOM reader reads the same trace");
    (void)trace::format_analysis(trace::analyze(trace));
  } catch (const UsageError& e) {
    require(e.what() == dom_error, "the DOM reader gives the same error");
    throw;
  }
}

/// SafetensorsFile over the bytes, then every tensor read back as the GPT-2 loader reads it.
inline void read_safetensors(std::string_view bytes) {
  const auto file = gpt2::SafetensorsFile::from_bytes(std::string(bytes), "fuzz input");
  for (const std::string& name : file.names()) {
    const auto& entry = file.entry(name);
    require(file.read_bytes(name).size() == entry.end - entry.begin, "a tensor reads its own bytes");
    if (entry.dtype == "F32" || entry.dtype == "BF16" || entry.dtype == "F16" || entry.dtype == "F64")
      require(file.read_floats(name).size() == static_cast<std::size_t>(entry.numel()),
              "read_floats returns numel values");
    if (entry.dtype == "I32" || entry.dtype == "I64") {
      try {
        (void)file.read_ints(name);
      } catch (const UsageError&) {  // an I64 too large for int: refused, and the next tensor is read
      }
    }
  }
}

/// parse_catalog (RIDGE_CATALOG, --catalog).
inline void read_catalog(std::string_view bytes) {
  for (const auto& entry : parse_catalog(std::string(bytes))) require(!entry.key.empty(), "every entry has a key");
}

/// parse_sizes (--sizes), with its promises: 1 to max_count sizes, positive, no duplicates.
inline void read_sizes(std::string_view bytes) {
  constexpr std::size_t max_count = 4096;
  const auto sizes = parse_sizes(std::string(bytes), max_count);
  require(!sizes.empty() && sizes.size() <= max_count, "between 1 and max_count sizes");
  std::set<std::int64_t> seen;
  for (auto n : sizes) {
    require(n > 0, "every size is positive");
    require(seen.insert(n).second, "no size twice");
  }
}

/// Runs `read` on libFuzzer's input; a UsageError is the expected answer to bad input.
template <typename Read>
int run_one(Read read, const std::uint8_t* data, std::size_t size) {
  try {
    read(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const UsageError&) {
  }
  return 0;
}

}  // namespace ridge::fuzz
