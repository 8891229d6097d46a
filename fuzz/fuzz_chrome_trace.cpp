// libFuzzer target: ridge::fuzz::read_chrome_trace (fuzz/readers.hpp) on each input.
#include "readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ridge::fuzz::run_one(ridge::fuzz::read_chrome_trace, data, size);
}
