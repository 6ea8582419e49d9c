// conv_transpose1d: hand-worked scatters (stride, padding, dilation,
// groups, bias), the identity with conv1d over the flipped kernel, and the
// shape rule on HiFi-GAN's upsampling; the cpu kernel (oneDNN's
// deconvolution) against the reference.
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

TEST(ConvTranspose1d, StridedScatterByHand) {
  // x = 1 2, weight ones k3, stride 2: t=0 fills 0..2 with 1, t=1 fills
  // 2..4 with 2, overlapping at 2 -> 1 1 3 2 2 (length (2-1) 2 + 3).
  Tensor x = f32({1, 2}, {1, 2});
  Tensor w = f32({1, 1, 3}, {1, 1, 1});
  EXPECT_EQ(values(run1("conv_transpose1d", {x, w}, {{"stride", 2}})), (std::vector<float>{1, 1, 3, 2, 2}));
  // padding 1 trims one position from each end; bias adds.
  Tensor b = f32({1}, {10});
  EXPECT_EQ(values(run1("conv_transpose1d", {x, w, b}, {{"stride", 2}, {"padding", 1}})),
            (std::vector<float>{11, 13, 12}));
  // output_padding adds positions at the end only.
  EXPECT_EQ(values(run1("conv_transpose1d", {x, w}, {{"stride", 2}, {"padding", 1}, {"output_padding", 1}})),
            (std::vector<float>{1, 3, 2, 2}));
}

TEST(ConvTranspose1d, DilationSpreadsTheTaps) {
  // k2 dilation 2: each t lands on t and t + 2 -> 1 2 4 2 3.
  Tensor x = f32({1, 3}, {1, 2, 3});
  Tensor w = f32({1, 1, 2}, {1, 1});
  EXPECT_EQ(values(run1("conv_transpose1d", {x, w}, {{"dilation", 2}})), (std::vector<float>{1, 2, 4, 2, 3}));
}

TEST(ConvTranspose1d, ChannelsAndGroups) {
  // weight [C=2, O=1, 1]: one output summing 2 x0 + 3 x1.
  Tensor x = f32({2, 1}, {1, 10});
  Tensor w = f32({2, 1, 1}, {2, 3});
  EXPECT_EQ(values(run1("conv_transpose1d", {x, w})), (std::vector<float>{32}));
  // Two groups: each output reads its own channel only.
  EXPECT_EQ(values(run1("conv_transpose1d", {x, w}, {{"groups", 2}})), (std::vector<float>{2, 30}));
}

TEST(ConvTranspose1d, StrideOneIsConv1dOverTheFlippedKernel) {
  // conv_transpose1d(x, w, padding p) = conv1d(x, w', padding K-1-p) with
  // w'[o, c, j] = w[c, o, K-1-j].
  const int64_t C = 3, O = 4, K = 5, L = 9, p = 1;
  Tensor x = f32({C, L}, random_values(size_t(C * L), 1));
  auto wv = random_values(size_t(C * O * K), 2);
  Tensor w = f32({C, O, K}, wv);
  std::vector<float> flipped(size_t(O * C * K));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t j = 0; j < K; ++j) flipped[size_t((o * C + c) * K + j)] = wv[size_t((c * O + o) * K + K - 1 - j)];
  Tensor got = run1("conv_transpose1d", {x, w}, {{"padding", p}});
  Tensor want = run1("conv1d", {x, f32({O, C, K}, flipped)}, {{"padding", K - 1 - p}});
  ASSERT_EQ(got.shape, want.shape);
  expect_close(values(got), to_double(values(want)), 1e-6);
}

TEST(ConvTranspose1d, ShapeRule) {
  // HiFi-GAN: k16 stride 8 padding 4 upsamples 8x.
  auto r = infer("conv_transpose1d", {{DType::F32, {Dim::of(512), Dim::of(100)}}, {DType::F32, {Dim::of(512), Dim::of(256), Dim::of(16)}}},
                 {{"stride", 8}, {"padding", 4}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].shape, (Shape{Dim::of(256), Dim::of(800)}));
  // A run-time length stays run-time.
  auto d = infer("conv_transpose1d", {{DType::F32, {Dim::of(512), Dim::dyn()}}, {DType::F32, {Dim::of(512), Dim::of(256), Dim::of(16)}}},
                 {{"stride", 8}, {"padding", 4}});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ((*d)[0].shape[0], Dim::of(256));
  // The weight's first dim must be x's channels.
  auto bad = infer("conv_transpose1d", {{DType::F32, {Dim::of(8), Dim::of(10)}}, {DType::F32, {Dim::of(4), Dim::of(2), Dim::of(3)}}});
  EXPECT_FALSE(bad.ok());
}

TEST(CpuConvTranspose1d, MatchesReference) {
  // HiFi-GAN's upsamplers (k 2r, padding r/2; the strided ones run as one
  // convolution per output phase), groups, output_padding, dilation, and
  // bias-less ones.
  struct Case { int64_t C, L, O, K, stride, padding, output_padding, dilation, groups; bool bias; };
  const Case cases[] = {{32, 20, 16, 16, 8, 4, 0, 1, 1, true}, {16, 33, 8, 4, 2, 1, 0, 1, 1, true},
                        {6, 9, 4, 3, 2, 1, 1, 1, 2, true},     {5, 7, 3, 3, 1, 0, 0, 2, 1, false},
                        // by phases: a kernel shorter than the stride (phases of bias alone), output_padding
                        {4, 6, 3, 2, 3, 0, 0, 1, 1, true},     {3, 5, 2, 3, 2, 1, 1, 1, 1, true},
                        {2, 4, 1, 5, 3, 0, 2, 1, 1, false},    {512, 30, 256, 16, 8, 4, 0, 1, 1, true},
                        // phases longer than the cpu kernel's window of 8192 positions
                        {4, 9000, 3, 16, 8, 4, 0, 1, 1, true}};
  uint64_t seed = 21;
  for (const Case& c : cases) {
    Tensor x = f32({c.C, c.L}, scaled_values(size_t(c.C * c.L), seed++, 1.0f));
    Tensor w = f32({c.C, c.O / c.groups, c.K}, scaled_values(size_t(c.C * c.O / c.groups * c.K), seed++, 0.3f));
    Tensor b = c.bias ? f32({c.O}, scaled_values(size_t(c.O), seed++, 1.0f)) : absent();
    expect_cpu_matches_reference("conv_transpose1d", {x, w, b},
                                 {{"stride", c.stride}, {"padding", c.padding}, {"output_padding", c.output_padding},
                                  {"dilation", c.dilation}, {"groups", c.groups}},
                                 "C=" + std::to_string(c.C) + " K=" + std::to_string(c.K));
  }
}

}  // namespace
}  // namespace arch::test
