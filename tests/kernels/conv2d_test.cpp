#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

struct Conv {
  int64_t C, H, W, O, kH, kW, stride = 1, padding = 0, dilation = 1, groups = 1;
};

// torch.nn.functional.conv2d on one image in double, straight from the
// definition: out[o, y, x] = b[o] + sum_{c, i, j} w[o, c, i, j] *
// in[g * C/groups + c, y s - p + i d, x s - p + j d], zero outside the image.
std::vector<double> naive_conv(const Conv& c, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>* b, int64_t* Ho, int64_t* Wo) {
  *Ho = (c.H + 2 * c.padding - c.dilation * (c.kH - 1) - 1) / c.stride + 1;
  *Wo = (c.W + 2 * c.padding - c.dilation * (c.kW - 1) - 1) / c.stride + 1;
  const int64_t Cg = c.C / c.groups, Og = c.O / c.groups;
  std::vector<double> out;
  for (int64_t o = 0; o < c.O; ++o)
    for (int64_t y = 0; y < *Ho; ++y)
      for (int64_t xx = 0; xx < *Wo; ++xx) {
        double acc = b ? (*b)[o] : 0.0;
        for (int64_t ci = 0; ci < Cg; ++ci)
          for (int64_t i = 0; i < c.kH; ++i)
            for (int64_t j = 0; j < c.kW; ++j) {
              int64_t iy = y * c.stride - c.padding + i * c.dilation;
              int64_t ix = xx * c.stride - c.padding + j * c.dilation;
              if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
              int64_t ch = (o / Og) * Cg + ci;
              acc += double(w[((o * Cg + ci) * c.kH + i) * c.kW + j]) * x[(ch * c.H + iy) * c.W + ix];
            }
        out.push_back(acc);
      }
  return out;
}

Attrs attrs_of(const Conv& c) {
  return {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
}

void check_against_naive(const Conv& c, bool bias, uint64_t seed) {
  SCOPED_TRACE("C=" + std::to_string(c.C) + " O=" + std::to_string(c.O) + " k=" + std::to_string(c.kH) + "x" +
               std::to_string(c.kW) + " s=" + std::to_string(c.stride) + " p=" + std::to_string(c.padding) +
               " d=" + std::to_string(c.dilation) + " g=" + std::to_string(c.groups));
  std::vector<float> x = random_values(size_t(c.C * c.H * c.W), seed);
  std::vector<float> w = random_values(size_t(c.O * (c.C / c.groups) * c.kH * c.kW), seed + 1);
  std::vector<float> b = random_values(size_t(c.O), seed + 2);
  int64_t Ho = 0, Wo = 0;
  std::vector<double> want = naive_conv(c, x, w, bias ? &b : nullptr, &Ho, &Wo);
  Tensor out = run1("conv2d",
                    {f32({c.C, c.H, c.W}, x), f32({c.O, c.C / c.groups, c.kH, c.kW}, w), bias ? f32({c.O}, b) : absent()},
                    attrs_of(c));
  EXPECT_EQ(out.shape, (Dims{c.O, Ho, Wo}));
  expect_close(values(out), want, 1e-5, 1e-6);
}

std::vector<float> iota(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = float(i + 1);
  return v;
}

TEST(Conv2d, HandValues) {
  // x = [[1 2 3] [4 5 6] [7 8 9]], w = [[1 0] [0 1]]: x[i, j] + x[i+1, j+1], + bias 0.5
  Tensor x = f32({1, 3, 3}, iota(9));
  Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  Tensor out = run1("conv2d", {x, w, f32({1}, {0.5f})});
  EXPECT_EQ(out.shape, (Dims{1, 2, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{6.5f, 8.5f, 12.5f, 14.5f}));
  // padding 1, stride 2: windows start at rows/cols -1 and 1 (H' = (3 + 2 - 1 - 1) / 2 + 1 = 2)
  Tensor ps = run1("conv2d", {x, w, absent()}, {{"stride", 2}, {"padding", 1}});
  EXPECT_EQ(ps.shape, (Dims{1, 2, 2}));
  EXPECT_EQ(values(ps), (std::vector<float>{1, 3, 7, 14}));
  // dilation 2: a 2x2 kernel spans 3x3, the four corners 1 + 3 + 7 + 9
  Tensor dil = run1("conv2d", {x, f32({1, 1, 2, 2}, {1, 1, 1, 1}), absent()}, {{"dilation", 2}});
  EXPECT_EQ(dil.shape, (Dims{1, 1, 1}));
  EXPECT_EQ(values(dil), (std::vector<float>{20}));
  // Two input channels summed: channel 1 = 10 * channel 0, weights 1 and 1 (1x1 kernel)
  std::vector<float> two = iota(4);
  for (int i = 0; i < 4; ++i) two.push_back(10.0f * float(i + 1));
  Tensor sum = run1("conv2d", {f32({2, 2, 2}, two), f32({1, 2, 1, 1}, {1, 1}), absent()});
  EXPECT_EQ(values(sum), (std::vector<float>{11, 22, 33, 44}));
}

TEST(Conv2d, GroupsAndDepthwise) {
  // groups 2: out channel 0 sees only in channel 0, out channel 1 only in channel 1
  std::vector<float> two = {1, 1, 1, 1, 2, 2, 2, 2};
  Tensor dw = run1("conv2d", {f32({2, 2, 2}, two), f32({2, 1, 1, 1}, {3, 5}), f32({2}, {0, 1})}, {{"groups", 2}});
  EXPECT_EQ(dw.shape, (Dims{2, 2, 2}));
  EXPECT_EQ(values(dw), (std::vector<float>{3, 3, 3, 3, 11, 11, 11, 11}));
  // groups 2 with 2 outputs per group: outputs 0, 1 from channel 0; 2, 3 from channel 1
  Tensor g = run1("conv2d", {f32({2, 1, 1}, {1, 2}), f32({4, 1, 1, 1}, {1, 2, 3, 4}), absent()}, {{"groups", 2}});
  EXPECT_EQ(values(g), (std::vector<float>{1, 2, 6, 8}));
}

TEST(Conv2d, MatchesDouble) {
  check_against_naive({.C = 3, .H = 8, .W = 8, .O = 5, .kH = 4, .kW = 4, .stride = 4}, true, 21);  // ViT patches
  check_against_naive({.C = 3, .H = 11, .W = 10, .O = 4, .kH = 7, .kW = 7, .stride = 2, .padding = 3}, false, 22);  // ResNet stem
  check_against_naive({.C = 4, .H = 7, .W = 6, .O = 6, .kH = 3, .kW = 2, .stride = 2, .padding = 1, .groups = 2}, true, 23);
  check_against_naive({.C = 3, .H = 9, .W = 9, .O = 4, .kH = 3, .kW = 3, .padding = 2, .dilation = 2}, true, 24);
  check_against_naive({.C = 4, .H = 5, .W = 6, .O = 8, .kH = 3, .kW = 3, .padding = 1, .groups = 4}, true, 25);  // depthwise x2
  check_against_naive({.C = 2, .H = 5, .W = 5, .O = 3, .kH = 3, .kW = 3, .stride = 3, .padding = 1}, true, 26);
  check_against_naive({.C = 2, .H = 4, .W = 9, .O = 2, .kH = 1, .kW = 1, .stride = 2}, true, 27);  // 1x1 downsample
  check_against_naive({.C = 1, .H = 3, .W = 3, .O = 1, .kH = 3, .kW = 3, .stride = 5, .padding = 2}, false, 28);
}

TEST(Conv2d, ShapeRule) {
  auto t = [](std::vector<int64_t> d) { return TypedShape{DType::F32, shape_of(d)}; };
  auto ok = infer("conv2d", {t({3, 224, 224}), t({768, 3, 16, 16}), t({768})}, {{"stride", 16}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[768, 14, 14]");
  EXPECT_EQ(ok->at(0).dtype, DType::F32);
  auto stem = infer("conv2d", {t({3, 224, 224}), t({64, 3, 7, 7}), {}}, {{"stride", 2}, {"padding", 3}},
                    {true, true, false});
  ASSERT_TRUE(stem.ok()) << stem.error().message;
  EXPECT_EQ(shape_str(stem->at(0).shape), "[64, 112, 112]");
}

TEST(Conv2d, Errors) {
  auto t = [](std::vector<int64_t> d) { return TypedShape{DType::F32, shape_of(d)}; };
  auto msg = [&](std::vector<TypedShape> in, Attrs a = Attrs::object()) {
    std::vector<bool> present(in.size(), true);
    if (in.size() == 3 && in[2].shape.empty()) present[2] = false;
    auto r = infer("conv2d", in, a, present);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 3, 3, 3}), {}}),
            "conv2d: weight [6, 3, 3, 3] takes 3 input channels per group, x [4, 8, 8] gives 4 (C / groups, groups = 1)");
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 4, 3, 3}), {}}, {{"groups", 2}}),
            "conv2d: weight [6, 4, 3, 3] takes 4 input channels per group, x [4, 8, 8] gives 2 (C / groups, groups = 2)");
  EXPECT_EQ(msg({t({3, 8, 8}), t({6, 1, 3, 3}), {}}, {{"groups", 2}}),
            "conv2d: x has 3 channels, not a multiple of groups = 2");
  EXPECT_EQ(msg({t({4, 8, 8}), t({5, 2, 3, 3}), {}}, {{"groups", 2}}),
            "conv2d: weight [5, 2, 3, 3] has 5 output channels, not a multiple of groups = 2");
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 4, 3, 3}), t({5})}),
            "conv2d: bias [5] does not match the output channels of weight [6, 4, 3, 3]");
  EXPECT_EQ(msg({t({4, 8}), t({6, 4, 3, 3}), {}}), "conv2d: x must be [C, H, W], got [4, 8]");
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 4, 3}), {}}), "conv2d: weight must be [O, C/groups, kH, kW], got [6, 4, 3]");
  EXPECT_EQ(msg({t({4, 2, 2}), t({6, 4, 3, 3}), {}}),
            "conv2d: the kernel 3x3 (dilation 1) is larger than x [4, 2, 2] padded by 0");
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 4, 3, 3}), {}}, {{"stride", 0}}),
            "conv2d: stride (0), dilation (1) and groups (1) must be >= 1, padding (0) >= 0");
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 4, 3, 3}), {}}, {{"padding", -1}}),
            "conv2d: stride (1), dilation (1) and groups (1) must be >= 1, padding (-1) >= 0");
  EXPECT_EQ(msg({{DType::F32, {Dim::seq(), Dim::of(8), Dim::of(8)}}, t({6, 4, 3, 3}), {}}),
            "conv2d: x [seq, 8, 8] must have concrete dims, or `_` for H and W (images are [C, H, W])");
  EXPECT_EQ(msg({t({4, 8, 8}), t({6, 4, 3, 3}), {}}, {{"padding", "same"}}),
            "conv2d: attribute 'padding' must be an int, got \"same\"");
}

// Unfolded rows past 256 MB are made a band of output rows at a time
// (kernels/cpu/conv2d_cpu.cpp): 2048 channels by 3x3 over 4096 columns is
// 302 MB a row of output, so each of the three output rows is its own band
// (and at stride 2, two rows' worth fits no more than one).
TEST(CpuConv2d, BandsOfOutputRowsMatchTheReference) {
  struct Case { int64_t H, W, stride; };
  uint64_t seed = 41;
  for (const Case& c : {Case{3, 4096, 1}, Case{5, 4096, 2}}) {
    const int64_t C = 2048, O = 2;
    Tensor x = f32({C, c.H, c.W}, scaled_values(size_t(C * c.H * c.W), seed++, 1.0f));
    Tensor w = f32({O, C, 3, 3}, scaled_values(size_t(O * C * 9), seed++, 0.05f));
    Tensor b = f32({O}, scaled_values(size_t(O), seed++, 1.0f));
    expect_cpu_matches_reference("conv2d", {x, w, b}, {{"stride", c.stride}, {"padding", 1}, {"dilation", 1}, {"groups", 1}},
                                 "banded, stride " + std::to_string(c.stride));
  }
}

}  // namespace
}  // namespace arch::test

namespace arch {
namespace {

// An image's H and W may be `_` (known per call): they stay `_` through the
// convolution and the pools, and the channels are still checked.
TEST(Conv2d, RunTimeImageSizePassesThrough) {
  const OpDef* conv = op_table().find("conv2d");
  ASSERT_NE(conv, nullptr);
  std::vector<TypedShape> in = {{DType::F32, {Dim::of(3), Dim::dyn(), Dim::dyn()}},
                                {DType::F32, shape_of({8, 3, 3, 3})},
                                {}};
  bool present[] = {true, true, false};
  auto out = conv->shape(in, present, {{"stride", 2}, {"padding", 1}, {"dilation", 1}, {"groups", 1}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(shape_str(out->at(0).shape), "[8, _, _]");
  in[1] = {DType::F32, shape_of({8, 4, 3, 3})};
  EXPECT_FALSE(conv->shape(in, present, {{"stride", 1}, {"padding", 0}, {"dilation", 1}, {"groups", 1}}).ok());

  const OpDef* pool = op_table().find("max_pool2d");
  ASSERT_NE(pool, nullptr);
  std::vector<TypedShape> x = {{DType::F32, {Dim::of(8), Dim::dyn(), Dim::of(16)}}};
  bool one[] = {true};
  auto p = pool->shape(x, one, {{"kernel", 3}, {"stride", 2}, {"padding", 1}, {"ceil_mode", false}});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(shape_str(p->at(0).shape), "[8, _, 8]");
}

}  // namespace
}  // namespace arch

namespace arch::test {
namespace {

// The cpu kernel (1x1 as one product, else unfolded rows through it)
// against the reference on UNet-like shapes, the paths it falls back on too.
TEST(CpuConv2d, MatchesReferenceOnUnetShapes) {
  struct Case { int64_t C, H, W, O, K, stride, padding, dilation, groups; };
  const Case cases[] = {{16, 12, 10, 24, 3, 1, 1, 1, 1}, {24, 12, 12, 24, 3, 2, 1, 1, 1}, {32, 8, 8, 16, 1, 1, 0, 1, 1},
                        {8, 9, 7, 8, 3, 1, 2, 2, 1}, {8, 6, 6, 8, 3, 1, 1, 1, 2}, {3, 1, 1, 4, 3, 1, 1, 1, 1}};
  uint64_t seed = 7;
  for (const Case& c : cases) {
    Tensor x = f32({c.C, c.H, c.W}, scaled_values(size_t(c.C * c.H * c.W), seed++, 1.0f));
    Tensor w = f32({c.O, c.C / c.groups, c.K, c.K}, scaled_values(size_t(c.O * c.C / c.groups * c.K * c.K), seed++, 0.3f));
    Tensor b = f32({c.O}, scaled_values(size_t(c.O), seed++, 1.0f));
    expect_cpu_matches_reference("conv2d", {x, w, b},
                                 {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}},
                                 "C=" + std::to_string(c.C) + " K=" + std::to_string(c.K) + " groups=" + std::to_string(c.groups));
  }
}

}  // namespace
}  // namespace arch::test
