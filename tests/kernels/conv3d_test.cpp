// conv3d and time_shuffle: a video VAE's causal convolutions, temporal
// down- and upsampling, and a patch embedding.
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

struct Conv3 {
  int64_t C, T, H, W, O, kT, kH, kW;
  std::vector<int64_t> stride = {1, 1, 1}, pad = {0, 0, 0, 0, 0, 0};
};

Attrs attrs_of(const Conv3& c) { return {{"stride", c.stride}, {"padding", c.pad}}; }

// torch's F.conv3d(F.pad(x, ...)) in double, from the definition.
std::vector<double> naive_conv3d(const Conv3& c, const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& b, Dims* out) {
  auto size = [](int64_t n, int64_t k, int64_t a, int64_t z, int64_t s) { return std::max<int64_t>(0, (n + a + z - k) / s + 1); };
  const int64_t To = c.T + c.pad[0] + c.pad[1] < c.kT ? 0 : size(c.T, c.kT, c.pad[0], c.pad[1], c.stride[0]);
  const int64_t Ho = size(c.H, c.kH, c.pad[2], c.pad[3], c.stride[1]), Wo = size(c.W, c.kW, c.pad[4], c.pad[5], c.stride[2]);
  *out = {c.O, To, Ho, Wo};
  std::vector<double> y;
  for (int64_t o = 0; o < c.O; ++o)
    for (int64_t t = 0; t < To; ++t)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          double acc = b[size_t(o)];
          for (int64_t ci = 0; ci < c.C; ++ci)
            for (int64_t a = 0; a < c.kT; ++a)
              for (int64_t p = 0; p < c.kH; ++p)
                for (int64_t q = 0; q < c.kW; ++q) {
                  const int64_t tt = t * c.stride[0] - c.pad[0] + a, yy = i * c.stride[1] - c.pad[2] + p,
                                xx = j * c.stride[2] - c.pad[4] + q;
                  if (tt < 0 || tt >= c.T || yy < 0 || yy >= c.H || xx < 0 || xx >= c.W) continue;
                  acc += double(w[size_t((((o * c.C + ci) * c.kT + a) * c.kH + p) * c.kW + q)]) *
                         x[size_t(((ci * c.T + tt) * c.H + yy) * c.W + xx)];
                }
          y.push_back(acc);
        }
  return y;
}

const Conv3 kCases[] = {
    {3, 5, 6, 7, 4, 3, 3, 3, {1, 1, 1}, {2, 0, 1, 1, 1, 1}},   // Wan's causal 3x3x3
    {4, 5, 6, 6, 4, 3, 1, 1, {2, 1, 1}, {0, 0, 0, 0, 0, 0}},   // its temporal downsample
    {4, 3, 6, 6, 8, 3, 1, 1, {1, 1, 1}, {2, 0, 0, 0, 0, 0}},   // its temporal upsample's convolution
    {4, 2, 7, 5, 4, 1, 3, 3, {1, 2, 2}, {0, 0, 0, 1, 0, 1}},   // a frame's stride-2 downsample, padded right and bottom
    {4, 3, 8, 8, 6, 1, 2, 2, {1, 2, 2}, {0, 0, 0, 0, 0, 0}},   // a (1, 2, 2) patch embedding
    {5, 4, 3, 3, 7, 1, 1, 1, {1, 1, 1}, {0, 0, 0, 0, 0, 0}},   // pointwise
};

TEST(Conv3d, MatchesTheDefinition) {
  uint64_t seed = 3;
  for (const Conv3& c : kCases) {
    auto x = random_values(size_t(c.C * c.T * c.H * c.W), seed++), w = random_values(size_t(c.O * c.C * c.kT * c.kH * c.kW), seed++),
         b = random_values(size_t(c.O), seed++);
    Dims want_shape;
    const auto want = naive_conv3d(c, x, w, b, &want_shape);
    Tensor out = run1("conv3d", {f32({c.C, c.T, c.H, c.W}, x), f32({c.O, c.C, c.kT, c.kH, c.kW}, w), f32({c.O}, b)}, attrs_of(c));
    EXPECT_EQ(out.shape, want_shape);
    expect_close(values(out), want, 1e-5, 1e-6);
  }
}

// Causal in time: an output frame changes with the frames up to it, never
// with a later one.
TEST(Conv3d, CausalPaddingSeesNoLaterFrame) {
  const int64_t C = 2, T = 4, H = 3, W = 3, O = 2;
  auto x = random_values(size_t(C * T * H * W), 11), w = random_values(size_t(O * C * 27), 12);
  const Attrs a = {{"padding", std::vector<int64_t>{2, 0, 1, 1, 1, 1}}};
  Tensor before = run1("conv3d", {f32({C, T, H, W}, x), f32({O, C, 3, 3, 3}, w)}, a);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < H * W; ++k) x[size_t((c * T + 3) * H * W + k)] += 1.0f;  // the last frame changed
  Tensor after = run1("conv3d", {f32({C, T, H, W}, x), f32({O, C, 3, 3, 3}, w)}, a);
  ASSERT_EQ(before.shape, (Dims{O, T, H, W}));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < H * W; ++k) {
        const size_t i = size_t((o * T + t) * H * W + k);
        if (t < 3) {
          EXPECT_EQ(before.f32()[i], after.f32()[i]) << "frame " << t;
        }
      }
  EXPECT_NE(values(before), values(after));
}

// Fewer frames than the kernel (one frame, a stride-2 window of three, no
// padding) give none; too small an image is refused.
TEST(Conv3d, TooFewFramesGiveNone) {
  Tensor out = run1("conv3d", {f32({2, 1, 4, 4}, random_values(32, 1)), f32({2, 2, 3, 1, 1}, random_values(12, 2))},
                    {{"stride", std::vector<int64_t>{2, 1, 1}}});
  EXPECT_EQ(out.shape, (Dims{2, 0, 4, 4}));
  auto r = infer("conv3d", {{DType::F32, shape_of({2, 3, 2, 2})}, {DType::F32, shape_of({2, 2, 1, 3, 3})}, {}}, Attrs::object(), {true, true, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("larger than x"), std::string::npos) << r.error().message;
}

TEST(Conv3d, ShapeRule) {
  auto ok = infer("conv3d", {{DType::F32, {Dim::of(3), Dim::dyn(), Dim::dyn(), Dim::dyn()}}, {DType::F32, shape_of({8, 3, 3, 3, 3})}, {}},
                  {{"padding", std::vector<int64_t>{2, 0, 1, 1, 1, 1}}}, {true, true, false});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[8, _, _, _]");
  for (auto [attrs, words] : std::vector<std::pair<Attrs, std::string>>{
           {{{"stride", std::vector<int64_t>{1, 1}}}, "stride must be [t, h, w]"},
           {{{"padding", std::vector<int64_t>{1, 1, 1, 1}}}, "padding must be [front, back, top, bottom, left, right]"},
           {{{"stride", std::vector<int64_t>{0, 1, 1}}}, "each stride must be >= 1"},
           {{{"padding", std::vector<int64_t>{-1, 0, 0, 0, 0, 0}}}, "each padding must be >= 0"}}) {
    auto r = infer("conv3d", {{DType::F32, shape_of({3, 4, 5, 5})}, {DType::F32, shape_of({8, 3, 1, 1, 1})}, {}}, attrs, {true, true, false});
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
  }
  auto bad = infer("conv3d", {{DType::F32, shape_of({4, 4, 5, 5})}, {DType::F32, shape_of({8, 3, 1, 1, 1})}, {}}, Attrs::object(), {true, true, false});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("takes 3 input channels"), std::string::npos) << bad.error().message;
}

TEST(CpuConv3d, MatchesTheReference) {
  uint64_t seed = 21;
  for (const Conv3& c : kCases) {
    Tensor x = f32({c.C, c.T, c.H, c.W}, scaled_values(size_t(c.C * c.T * c.H * c.W), seed++, 1.0f));
    Tensor w = f32({c.O, c.C, c.kT, c.kH, c.kW}, scaled_values(size_t(c.O * c.C * c.kT * c.kH * c.kW), seed++, 0.3f));
    Tensor b = f32({c.O}, scaled_values(size_t(c.O), seed++, 1.0f));
    expect_cpu_matches_reference("conv3d", {x, w, b}, attrs_of(c), "k " + std::to_string(c.kT) + "x" + std::to_string(c.kH));
  }
}

// Channel group j of frame t is frame 2t + j: Wan's x.reshape(2, C, T, H, W)
// interleaved in time.
TEST(TimeShuffle, ChannelGroupsBecomeFrames) {
  // x [2·2, 2, 1, 1]: x[k, t] = 10 k + t
  Tensor out = run1("time_shuffle", {f32({4, 2, 1, 1}, {0, 1, 10, 11, 20, 21, 30, 31})}, {{"factor", 2}});
  ASSERT_EQ(out.shape, (Dims{2, 4, 1, 1}));
  // out[c, 2t + j] = x[j·2 + c, t]
  EXPECT_EQ(values(out), (std::vector<float>{0, 20, 1, 21, 10, 30, 11, 31}));
  auto r = infer("time_shuffle", {{DType::F32, shape_of({3, 2, 1, 1})}}, {{"factor", 2}});
  EXPECT_FALSE(r.ok());
  auto dyn = infer("time_shuffle", {{DType::F32, {Dim::of(4), Dim::dyn(), Dim::dyn(), Dim::dyn()}}}, {{"factor", 2}});
  ASSERT_TRUE(dyn.ok()) << dyn.error().message;
  EXPECT_EQ(shape_str(dyn->at(0).shape), "[2, _, _, _]");
}

// Wan 2.2's AvgDown3D: x [C, T, H, W] padded in front to a multiple of
// factor_t frames, each (a, b, d) block into channel ((c ft + a) fs + b) fs
// + d, groups averaged; DupUp3D its transpose with channels repeated.
TEST(SpaceTimeDepth, AvgDown3DAndDupUp3DByHand) {
  // One channel, 3 frames of 2x2: x[t, h, w] = 100 t + 10 h + w. ft 2 pads
  // one zero frame in front: frame pairs (pad, 0) and (1, 2).
  std::vector<float> v;
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w) v.push_back(float(100 * t + 10 * h + w));
  // 8 channels of one pixel each, averaged in groups of 4 into 2.
  Tensor down = run1("space_time_to_depth", {f32({1, 3, 2, 2}, v)}, {{"factor_t", 2}, {"factor_s", 2}, {"channels", 2}});
  ASSERT_EQ(down.shape, (Dims{2, 2, 1, 1}));
  // channel 0 = mean over (a = 0; b, d) = the first frame of each pair; channel 1 the second.
  // pair 0: (pad, frame 0) -> 0 and mean(0, 1, 10, 11) = 5.5; pair 1: (frame 1, frame 2) -> 105.5 and 205.5.
  EXPECT_EQ(values(down), (std::vector<float>{0, 105.5f, 5.5f, 205.5f}));
  // DupUp3D: 2 channels of 1 frame 1x1 -> 1 channel, 2 frames of 2x2 (each channel repeated 4 times).
  Tensor up = run1("depth_to_space_time", {f32({2, 1, 1, 1}, {7, 9})}, {{"factor_t", 2}, {"factor_s", 2}, {"channels", 1}});
  ASSERT_EQ(up.shape, (Dims{1, 2, 2, 2}));
  EXPECT_EQ(values(up), (std::vector<float>{7, 7, 7, 7, 9, 9, 9, 9}));
  // Without the mean and the repeat (groups of one): one undoes the other.
  auto x = random_values(2 * 4 * 4 * 6, 3);
  const Attrs a = {{"factor_t", 2}, {"factor_s", 2}, {"channels", 16}};
  Tensor packed = run1("space_time_to_depth", {f32({2, 4, 4, 6}, x)}, a);
  Tensor back = run1("depth_to_space_time", {packed}, {{"factor_t", 2}, {"factor_s", 2}, {"channels", 2}});
  EXPECT_EQ(values(back), x);
  auto bad = infer("space_time_to_depth", {{DType::F32, shape_of({3, 2, 4, 4})}}, {{"factor_t", 1}, {"factor_s", 2}, {"channels", 5}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("do not average into 5 channels"), std::string::npos) << bad.error().message;
}

// Wan 2.2's VAE patchifies 2x2 into channels c 4 + col 2 + row (diffusers'
// permute(0, 1, 6, 4, 2, 3, 5)): wan_vae.arch makes it as the frame
// transposed, space_time_to_depth, transposed back; and the inverse.
TEST(SpaceTimeDepth, PatchifyAsDiffusersOrdersIt) {
  // One channel, one frame of 2x2: x[row, col] = 10 row + col.
  Tensor x = f32({1, 1, 2, 2}, {0, 1, 10, 11});
  const Attrs a = {{"factor_t", 1}, {"factor_s", 2}, {"channels", 4}};
  Tensor y = run1("transpose", {run1("space_time_to_depth", {run1("transpose", {x}, {{"perm", {0, 1, 3, 2}}})}, a)},
                  {{"perm", {0, 1, 3, 2}}});
  ASSERT_EQ(y.shape, (Dims{4, 1, 1, 1}));
  // channel col 2 + row: (0,0) 0, (row 1, col 0) 10, (row 0, col 1) 1, (1, 1) 11
  EXPECT_EQ(values(y), (std::vector<float>{0, 10, 1, 11}));
  Tensor back = run1("transpose", {run1("depth_to_space_time", {run1("transpose", {y}, {{"perm", {0, 1, 3, 2}}})},
                                       {{"factor_t", 1}, {"factor_s", 2}, {"channels", 1}})},
                     {{"perm", {0, 1, 3, 2}}});
  EXPECT_EQ(values(back), values(x));
}

}  // namespace
}  // namespace arch::test
