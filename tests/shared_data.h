// Reference data lives outside the repository, in ../shared. Without it the
// tests that need it skip loudly, or fail where ARCHETYPE_REQUIRE_SHARED is
// set (.ci/run sets it, so CI never passes on skipped goldens).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace arch::testing {

inline std::string shared_dir() { return ARCHETYPE_SHARED_DIR; }
inline std::string golden_dir(const std::string& name) { return shared_dir() + "/golden/" + name; }

}  // namespace arch::testing

#define ARCH_REQUIRE_SHARED(path)                                                          \
  do {                                                                                     \
    if (!std::filesystem::exists(path)) {                                                  \
      if (std::getenv("ARCHETYPE_REQUIRE_SHARED"))                                         \
        FAIL() << "reference data " << (path) << " is absent";                             \
      GTEST_SKIP() << "!!! SKIPPED: reference data " << (path)                             \
                   << " is absent (expected ../shared beside the repository); this test "  \
                      "did NOT run !!!";                                                   \
    }                                                                                      \
  } while (0)
