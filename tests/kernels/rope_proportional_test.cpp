// rope's "proportional" type (transformers 5.x, Gemma 4's full-attention
// layers): the first int(p * d // 2) pairs of the whole head rotate at
// 1 / theta^(2j / d), the others have frequency 0.
#include "tests/kernels/kernel_test_util.h"

#include "kernels/reference/rope.h"

namespace arch::test {
namespace {

const Attrs kProportional = {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}};

TEST(RopeProportional, FrequenciesAsTransformersComputesThem) {
  // Gemma 4's full layers: head 32, p 0.25 -> int(8.0 // 2) = 4 rotated pairs
  // of 16, the exponent over the whole head (2j / 32), then zeros.
  auto f = rope_frequencies(1e6, 32, kProportional);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->inv_freq.size(), 16u);
  EXPECT_EQ(f->attention_factor, 1.0f);
  for (int j = 0; j < 16; ++j) {
    double want = j < 4 ? 1.0 / std::pow(1e6, 2.0 * j / 32.0) : 0.0;
    EXPECT_NEAR(f->inv_freq[j], want, 1e-7 * std::max(1.0, want)) << j;
  }
  EXPECT_EQ(f->inv_freq[0], 1.0f);
  for (int j = 4; j < 16; ++j) EXPECT_EQ(f->inv_freq[j], 0.0f) << j;
  // p = 1 is plain rope over d; a missing p means 1.
  auto full = rope_inv_freq(1e4, 8, {{"rope_type", "proportional"}, {"partial_rotary_factor", 1.0}});
  auto plain = rope_inv_freq(1e4, 8, nullptr);
  ASSERT_TRUE(full.ok() && plain.ok());
  EXPECT_EQ(*full, *plain);
  auto no_p = rope_inv_freq(1e4, 8, {{"rope_type", "proportional"}});
  ASSERT_TRUE(no_p.ok());
  EXPECT_EQ(*no_p, *plain);
  // The floor division: p 0.3 of d 10 is 3.0 // 2 = 1 pair.
  auto odd = rope_inv_freq(1e4, 10, {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.3}});
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(*odd, (std::vector<float>{1.0f, 0, 0, 0, 0}));
  // `factor` divides every frequency.
  auto scaled = rope_inv_freq(1e4, 8, {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.5}, {"factor", 4.0}});
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(scaled->at(0), 0.25f);
  EXPECT_EQ(scaled->at(1), (*plain)[1] / 4.0f);
  EXPECT_EQ(scaled->at(2), 0.0f);
}

TEST(RopeProportional, RotatesPairsAcrossTheWholeHeadAndPassesTheRestThrough) {
  // D = 8, p 0.5: pairs (0, 4) and (1, 5) rotate at [1, 1e4^(-1/4)], pairs
  // (2, 6) and (3, 7) stay. (A rope_dim of 4 would pair (0, 2), (1, 3).)
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  Attrs scaling = {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.5}};
  Tensor out = run1("rope", {f32({1, 1, 8}, x), i32({1}, {3})}, {{"theta", 10000.0}, {"scaling", scaling}});
  const double a = 3.0, b = 3.0 * std::pow(1e4, -0.25);
  expect_close(values(out),
               {1 * std::cos(a) - 5 * std::sin(a), 2 * std::cos(b) - 6 * std::sin(b), 3, 4,
                5 * std::cos(a) + 1 * std::sin(a), 6 * std::cos(b) + 2 * std::sin(b), 7, 8},
               1e-6);
  EXPECT_EQ(out.f32()[2], 3.0f);
  EXPECT_EQ(out.f32()[3], 4.0f);
  EXPECT_EQ(out.f32()[6], 7.0f);
  EXPECT_EQ(out.f32()[7], 8.0f);
}

TEST(RopeProportional, Errors) {
  const std::vector<TypedShape> in = {{DType::F32, {Dim::seq(), Dim::of(2), Dim::of(8)}},
                                      {DType::I32, {Dim::seq()}}};
  auto too_much = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", "proportional"}, {"partial_rotary_factor", 1.5}}}});
  ASSERT_FALSE(too_much.ok());
  EXPECT_NE(too_much.error().message.find("more than the 4 of rope_dim 8"), std::string::npos) << too_much.error().message;
  auto not_number = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", "proportional"}, {"partial_rotary_factor", "a"}}}});
  ASSERT_FALSE(not_number.ok());
  EXPECT_EQ(not_number.error().message,
            "rope: rope_scaling type 'proportional': 'partial_rotary_factor' must be a number, got \"a\"");
  auto ok = infer("rope", in, {{"theta", 1e4}, {"scaling", kProportional}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
}

}  // namespace
}  // namespace arch::test
