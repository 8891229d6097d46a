#pragma once
// What a call refused with: the message of its UsageError, for tests that check an error names
// the right field.
#include <string>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"

namespace ridge::test_support {

/// The message of the UsageError `call()` throws; "" and a test failure when it throws none.
template <typename Call>
std::string usage_message(Call call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

/// True when `text` starts with `prefix` (an error that leads with its field's name).
inline bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace ridge::test_support
