// Setting a named limit (engine/core/limits.h) for the length of one test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "engine/core/limits.h"

namespace arch::testing {

// Sets a limit and puts the previous value back when it goes out of scope.
class LimitFor {
 public:
  LimitFor(const char* name, int64_t value) : name_(name), saved_(limit(name)) {
    EXPECT_TRUE(set_limit(name, value).ok());
  }
  ~LimitFor() { EXPECT_TRUE(set_limit(name_, saved_).ok()); }
  LimitFor(const LimitFor&) = delete;
  LimitFor& operator=(const LimitFor&) = delete;

 private:
  const char* name_;
  int64_t saved_;
};

}  // namespace arch::testing
