// A golden case compared on both paths (the fast cpu kernels, then the
// plain reference ones): the family it dispatches to, every expected
// tensor within the golden README's float32 rule, and no expected tensor
// left unmade except those of another command (`outside`: a name prefix,
// such as the sampling loop's ddim_*). `more` checks what else a suite
// asks of the report.
#pragma once

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "engine/runtime/model.h"
#include "tests/golden/golden_case.h"
#include "tools/toolkit/compare.h"

namespace arch::testing {

inline void expect_matches_golden(const std::string& dir, const std::string& family, size_t min_tensors,
                                  const std::string& outside = "",
                                  const std::function<void(const Model&, const CompareReport&)>& more = nullptr) {
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    LoadOptions lo;
    lo.backend = backend;
    auto model = load_model(dir, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    if (!family.empty()) {
      EXPECT_EQ((*model)->family, family);
    }
    auto r = compare_with_golden(**model, dir);
    ASSERT_TRUE(r.ok()) << r.error().message;
    for (const auto& name : r->missing)
      EXPECT_TRUE(!outside.empty() && name.rfind(outside, 0) == 0) << dir << ": no output " << name;
    EXPECT_GE(r->tensors.size(), min_tensors);
    for (const auto& t : r->tensors)
      EXPECT_TRUE(t.ok()) << dir << ": " << t.name << " differs by " << t.max_abs << " (allowed " << t.bound << ")";
    if (more) more(**model, *r);
  }
}

}  // namespace arch::testing
