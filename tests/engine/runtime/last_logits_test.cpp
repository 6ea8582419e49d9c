// Generation's program: logits for the last position only, cut where the
// template's output projection starts (after the final norm, before any
// softcap), with the same values as the last row of the full program.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

void expect_last_row_matches(const Model& m, const std::vector<int32_t>& ids) {
  ASSERT_TRUE(m.main().last_logits.graph) << "no last-position program";
  Session full(m, 64), last(m, 64);
  auto a = full.step(ids);
  auto b = last.step(ids, {"logits"}, true);
  ASSERT_TRUE(a.ok() && b.ok());
  const Tensor& fa = a->at("logits");
  const Tensor& fb = b->at("logits");
  const int64_t vocab = fa.dim(-1);
  ASSERT_EQ(fb.numel(), vocab);
  const float* row = fa.f32() + (fa.numel() - vocab);
  double max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    max_ref = std::max(max_ref, double(std::abs(row[i])));
    max_err = std::max(max_err, double(std::abs(row[i] - fb.f32()[i])));
  }
  EXPECT_LE(max_err, 1e-5 * max_ref + 1e-6);
  // A decode step after it, from the same KV cache slots.
  auto c = last.step(std::vector<int32_t>{3}, {"logits"}, true);
  auto d = full.step(std::vector<int32_t>{3});
  ASSERT_TRUE(c.ok() && d.ok());
  for (int64_t i = 0; i < vocab; ++i) EXPECT_NEAR(c->at("logits").f32()[i], d->at("logits").f32()[i], 1e-4);
}

TEST(LastLogits, ToyModel) {
  std::string dir = ::testing::TempDir() + "/last_logits_toy";
  ASSERT_TRUE(write_toy_checkpoint(dir).ok());
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  // The cut: one slice of the final norm's output, feeding the lm_head.
  int slices = 0;
  for (const Node& n : (*m)->main().last_logits.graph->nodes) slices += n.op == "slice" && n.attrs.value("axis", -1) == 0;
  EXPECT_EQ(slices, 1);
  expect_last_row_matches(**m, {1, 2, 3, 4, 5});
}

TEST(LastLogits, SoftcappedGemma2) {
  std::string dir = testing::golden_dir("gemma2");
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  expect_last_row_matches(**m, {2, 10, 20, 30});
}

}  // namespace
}  // namespace arch
