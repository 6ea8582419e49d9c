// conv1d: a hand-worked case (padding, stride), groups, the shape rule's
// refusals, and the cpu kernel (unfolded rows through the matmul) against
// the reference on Whisper's stem shapes.
#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

TEST(Conv1d, PaddedAndStridedByHand) {
  // x [1, 4] = 1 2 3 4, weight [1, 1, 3] = 1 0 -1, bias 10, padding 1:
  // out[t] = 10 + x[t-1] - x[t+1] -> 10-2, 10+1-3, 10+2-4, 10+3 = 8 8 8 13.
  Tensor x = f32({1, 4}, {1, 2, 3, 4});
  Tensor w = f32({1, 1, 3}, {1, 0, -1});
  Tensor b = f32({1}, {10});
  EXPECT_EQ(values(run1("conv1d", {x, w, b}, {{"padding", 1}})), (std::vector<float>{8, 8, 8, 13}));
  // stride 2: positions 0 and 2.
  EXPECT_EQ(values(run1("conv1d", {x, w, b}, {{"padding", 1}, {"stride", 2}})), (std::vector<float>{8, 8}));
  // No bias, no padding: 1 - 3, 2 - 4.
  EXPECT_EQ(values(run1("conv1d", {x, w, absent()})), (std::vector<float>{-2, -2}));
}

TEST(Conv1d, GroupsReadTheirOwnChannels) {
  // Two groups of one channel: each output reads only its own input row.
  Tensor x = f32({2, 3}, {1, 2, 3, 10, 20, 30});
  Tensor w = f32({2, 1, 1}, {2, -1});
  EXPECT_EQ(values(run1("conv1d", {x, w}, {{"groups", 2}})), (std::vector<float>{2, 4, 6, -10, -20, -30}));
}

TEST(Conv1d, ShapeRuleRefusesMismatchedChannels) {
  auto r = infer("conv1d", {{DType::F32, {Dim::of(80), Dim::of(100)}}, {DType::F32, {Dim::of(64), Dim::of(128), Dim::of(3)}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("conv1d: weight [64, 128, 3] does not take x [80, 100]"), std::string::npos)
      << r.error().message;
  auto ok = infer("conv1d", {{DType::F32, {Dim::of(80), Dim::of(3000)}}, {DType::F32, {Dim::of(64), Dim::of(80), Dim::of(3)}}},
                  {{"stride", 2}, {"padding", 1}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)[0].shape, (Shape{Dim::of(64), Dim::of(1500)}));
}

TEST(CpuConv1d, MatchesReferenceOnWhisperStemShapes) {
  struct Case { int64_t C, L, O, K, stride, padding; };
  const Case cases[] = {{80, 300, 64, 3, 1, 1}, {64, 300, 64, 3, 2, 1}, {5, 7, 3, 2, 1, 0}, {3, 1, 4, 3, 1, 1}};
  uint64_t seed = 1;
  for (const Case& c : cases) {
    Tensor x = f32({c.C, c.L}, scaled_values(size_t(c.C * c.L), seed++, 1.0f));
    Tensor w = f32({c.O, c.C, c.K}, scaled_values(size_t(c.O * c.C * c.K), seed++, 0.3f));
    Tensor b = f32({c.O}, scaled_values(size_t(c.O), seed++, 1.0f));
    expect_cpu_matches_reference("conv1d", {x, w, b}, {{"stride", c.stride}, {"padding", c.padding}},
                                 "C=" + std::to_string(c.C) + " L=" + std::to_string(c.L));
  }
}

TEST(CpuConv1d, MatchesReferenceWithDilationAndGroups) {
  // HiFi-GAN's resblock convs (dilation 3 and 5, length kept) and VITS'
  // depthwise ones (groups = channels).
  struct Case { int64_t C, L, O, K, dilation, groups; };
  const Case cases[] = {{16, 200, 16, 7, 3, 1}, {8, 97, 8, 11, 5, 1}, {12, 50, 12, 3, 9, 12}, {6, 40, 9, 3, 1, 3}};
  uint64_t seed = 11;
  for (const Case& c : cases) {
    Tensor x = f32({c.C, c.L}, scaled_values(size_t(c.C * c.L), seed++, 1.0f));
    Tensor w = f32({c.O, c.C / c.groups, c.K}, scaled_values(size_t(c.O * c.C / c.groups * c.K), seed++, 0.3f));
    Tensor b = f32({c.O}, scaled_values(size_t(c.O), seed++, 1.0f));
    expect_cpu_matches_reference("conv1d", {x, w, b},
                                 {{"padding", (c.K - 1) * c.dilation / 2}, {"dilation", c.dilation}, {"groups", c.groups}},
                                 "C=" + std::to_string(c.C) + " K=" + std::to_string(c.K));
  }
}

TEST(CpuConv1d, MatchesReferenceOnOutputsLongerThanOneWindow) {
  // Past 8192 output positions the cpu kernel runs window by window, each
  // reading its input span with the padding at the ends: strides,
  // dilation, groups, a folded leaky_relu, and an end window of a few.
  struct Case { int64_t C, L, O, K, stride, padding, dilation, groups; bool leaky; };
  const Case cases[] = {{4, 20000, 3, 7, 1, 9, 3, 1, false}, {3, 40001, 2, 5, 2, 2, 1, 1, true},
                        {6, 8200, 6, 3, 1, 1, 1, 6, false}, {2, 16390, 3, 4, 1, 0, 2, 1, true}};
  uint64_t seed = 31;
  for (const Case& c : cases) {
    Tensor x = f32({c.C, c.L}, scaled_values(size_t(c.C * c.L), seed++, 1.0f));
    Tensor w = f32({c.O, c.C / c.groups, c.K}, scaled_values(size_t(c.O * c.C / c.groups * c.K), seed++, 0.3f));
    Tensor b = f32({c.O}, scaled_values(size_t(c.O), seed++, 1.0f));
    Attrs attrs = {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
    if (c.leaky) attrs["activation"] = "leaky_relu", attrs["activation_slope"] = 0.1;
    expect_cpu_matches_reference("conv1d", {x, w, b}, attrs, "L=" + std::to_string(c.L) + " stride=" + std::to_string(c.stride));
  }
}

TEST(Conv1d, AFoldedLeakyReluIsTheOpAfterIt) {
  // The planner's activation: leaky_relu(conv1d(x)) in one op, on both paths.
  Tensor x = f32({4, 30}, scaled_values(120, 3, 1.0f));
  Tensor w = f32({5, 4, 3}, scaled_values(60, 4, 0.5f));
  Tensor b = f32({5}, scaled_values(5, 5, 1.0f));
  const Attrs conv = {{"padding", 2}, {"dilation", 2}};
  Tensor plain = run1("conv1d", {x, w, b}, conv);
  Tensor want = run1("leaky_relu", {plain}, {{"slope", 0.1}});
  Attrs fused = conv;
  fused["activation"] = "leaky_relu";
  fused["activation_slope"] = 0.1;
  EXPECT_EQ(values(run1("conv1d", {x, w, b}, fused)), values(want));
  expect_cpu_matches_reference("conv1d", {x, w, b}, fused, "folded leaky_relu");
  auto bad = infer("conv1d", {{DType::F32, {Dim::of(4), Dim::of(30)}}, {DType::F32, {Dim::of(5), Dim::of(4), Dim::of(3)}}},
                   {{"activation", "gelu"}});
  EXPECT_FALSE(bad.ok());
}

// --bf16-activations on a CPU with bf16 dot products: input and weight
// rounded to bf16, sums in f32. Off by bf16's 8 bits at most; the default
// stays f32-grade (the test above).
TEST(CpuConv1d, Bf16ActivationsAreOptInAndClose) {
  Tensor x = f32({192, 200}, scaled_values(192 * 200, 7, 1.0f));
  Tensor w = f32({192, 192, 3}, scaled_values(192 * 192 * 3, 8, 0.1f));
  Tensor b = f32({192}, scaled_values(192, 9, 1.0f));
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "conv_transpose1d" : "conv1d");
    const std::string op = transposed ? "conv_transpose1d" : "conv1d";
    Attrs attrs = {{"padding", 1}};
    auto want = run_on("reference", op, {x, w, b}, attrs);
    Runner r;
    r.backend = "cpu";
    r.options.bf16_activations = true;
    auto got = r.run(op, {x, w, b}, attrs);
    ASSERT_TRUE(want.ok() && got.ok());
    const Tensor& ref = (*want)[0];
    const Tensor& out = (*got)[0];
    double most = 0, err = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      most = std::max(most, double(std::fabs(ref.f32()[i])));
      err = std::max(err, double(std::fabs(out.f32()[i] - ref.f32()[i])));
    }
    if (onednn_has_bf16()) EXPECT_GT(err, 1e-5 * most);  // it does round
    else EXPECT_LE(err, 1e-5 * most + 1e-6);             // nothing to round with: f32
    EXPECT_LE(err, 0.01 * most);
  }
}

}  // namespace
}  // namespace arch::test
