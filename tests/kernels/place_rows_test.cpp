// place_rows (an image's features at its tokens, in order, across chunks,
// rewinds and a batched session's slots), token_runs (an image's tokens as
// one group), and attention's groups (a group's rows see each other, later
// ones too), the fast kernel beside the reference.
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

const Attrs kImage = {{"token", 9}};

TEST(PlaceRows, EachImageTokenTakesTheNextRowAcrossChunks) {
  Runner r;
  const Tensor rows = f32({3, 2}, {10, 11, 20, 21, 30, 31});
  auto first = r.run("place_rows", {f32({3, 2}, {1, 1, 2, 2, 3, 3}), i32({3}, {5, 9, 6}), rows}, kImage);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(values(first->at(0)), (std::vector<float>{1, 1, 10, 11, 3, 3}));
  auto second = r.run("place_rows", {f32({2, 2}, {4, 4, 5, 5}), i32({2}, {9, 9}), rows}, kImage);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(values(second->at(0)), (std::vector<float>{20, 21, 30, 31}));
  // Past the rows given: an error naming the token.
  EXPECT_NE(run_error(r, "place_rows", {f32({1, 2}, {6, 6}), i32({1}, {9}), rows}, kImage)
                .find("token 9 number 4 has no row to take: 3 rows were given"),
            std::string::npos);
}

TEST(PlaceRows, ARewindTakesTheRowsAgainFromThere) {
  Runner r;
  const Tensor rows = f32({2, 1}, {10, 20});
  ASSERT_TRUE(r.run("place_rows", {f32({3, 1}, {1, 2, 3}), i32({3}, {9, 0, 9}), rows}, kImage).ok());
  ASSERT_TRUE(r.state->can_rewind(2));
  EXPECT_FALSE(r.state->can_rewind(4));
  r.state->rewind(2);  // keeps positions 0 and 1: one row placed
  auto again = r.run("place_rows", {f32({1, 1}, {7}), i32({1}, {9}), rows}, kImage);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(values(again->at(0)), (std::vector<float>{20}));
}

TEST(PlaceRows, TextAloneNeedsNoRowsAndAnImageTokenWithoutThemIsNamed) {
  Runner r;
  auto text = r.run("place_rows", {f32({2, 1}, {1, 2}), i32({2}, {3, 4}), absent()}, kImage);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(values(text->at(0)), (std::vector<float>{1, 2}));
  EXPECT_NE(run_error(r, "place_rows", {f32({1, 1}, {1}), i32({1}, {9}), absent()}, kImage).find("no rows were given"),
            std::string::npos);
}

// Two slots of a batched session: each reads its own region of the held
// rows, from its own count; a slot holding none takes text only.
TEST(PlaceRows, EachSequenceReadsItsOwnRegion) {
  SequenceRows seqs;
  seqs.slot_capacity = 8;
  seqs.over_held = true;
  seqs.held = {{0, 2}, {2, 1}, {0, 0}};
  seqs.pieces = {{0, 0, 0, 2}, {1, 0, 2, 2}, {2, 0, 4, 1}};
  Runner r;
  r.sequences = &seqs;
  const Tensor held = f32({3, 1}, {10, 20, 30});
  auto out = r.run("place_rows", {f32({5, 1}, {1, 2, 3, 4, 5}), i32({5}, {9, 9, 0, 9, 0}), held}, kImage);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(values(out->at(0)), (std::vector<float>{10, 20, 3, 30, 5}));
  // Slot 0 goes on at position 2 with no row left; slot 2 with an image token has none.
  seqs.pieces = {{2, 1, 0, 1}};
  EXPECT_NE(run_error(r, "place_rows", {f32({1, 1}, {1}), i32({1}, {9}), held}, kImage).find("no rows were given"),
            std::string::npos);
  // Slot 1's first position copied to slot 2 (a shared prefix): none placed
  // before it, so slot 2's next image token takes the first row of its region.
  ASSERT_TRUE(r.state->copy_rows(8, 16, 1));
  seqs.held = {{0, 2}, {2, 1}, {2, 1}};
  seqs.pieces = {{2, 1, 0, 1}};
  auto copied = r.run("place_rows", {f32({1, 1}, {1}), i32({1}, {9}), held}, kImage);
  ASSERT_TRUE(copied.ok()) << copied.error().message;
  EXPECT_EQ(values(copied->at(0)), (std::vector<float>{30}));
}

TEST(TokenRuns, EachRunOfTheTokenIsAGroup) {
  Runner r;
  auto out = r.run("token_runs", {i32({7}, {9, 9, 1, 9, 2, 9, 9})}, kImage);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(ints(out->at(0)), (std::vector<int32_t>{1, 1, 0, 2, 0, 3, 3}));
}

// A query in a group sees the group's later keys too; the rest stays causal
// (and windowed). The fast kernel computes the same.
TEST(AttentionGroups, AGroupsRowsSeeEachOtherAndTheFastKernelAgrees) {
  const int64_t S = 6, H = 2, D = 4;
  Tensor q = f32({S, H, D}, scaled_values(size_t(S * H * D), 3, 3.0f));
  Tensor k = f32({S, H, D}, scaled_values(size_t(S * H * D), 4, 1.0f));
  Tensor v = f32({S, H, D}, scaled_values(size_t(S * H * D), 5, 1.0f));
  Tensor groups = i32({S}, {0, 1, 1, 1, 0, 0});
  for (const Attrs& attrs : {Attrs{{"causal", true}}, Attrs{{"causal", true}, {"window", 2}}}) {
    const double mx = expect_cpu_matches_reference("attention", {q, k, v, absent(), groups}, attrs, attrs.dump());
    EXPECT_GT(mx, 0.01);
  }
  // Row 1 (group 1) against the same attention unmasked over keys 0..3:
  // what it sees is exactly those.
  Tensor with = run1("attention", {q, k, v, absent(), groups}, {{"causal", true}});
  Tensor q1 = f32({1, H, D}, std::vector<float>(q.f32() + H * D, q.f32() + 2 * H * D));
  Tensor k4 = f32({4, H, D}, std::vector<float>(k.f32(), k.f32() + 4 * H * D));
  Tensor v4 = f32({4, H, D}, std::vector<float>(v.f32(), v.f32() + 4 * H * D));
  Tensor alone = run1("attention", {q1, k4, v4}, {{"causal", false}});
  for (int64_t e = 0; e < H * D; ++e) EXPECT_NEAR(with.f32()[H * D + e], alone.f32()[e], 1e-6) << e;
  // Row 4 is text: causal, as without groups.
  Tensor without = run1("attention", {q, k, v}, {{"causal", true}});
  for (int64_t e = 0; e < H * D; ++e) EXPECT_NEAR(with.f32()[4 * H * D + e], without.f32()[4 * H * D + e], 1e-6) << e;
}

}  // namespace
}  // namespace arch::test
