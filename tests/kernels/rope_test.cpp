#include "tests/kernels/kernel_test_util.h"

#include "kernels/reference/rope.h"

namespace arch::test {
namespace {

TEST(Rope, PositionZeroIsIdentity) {
  std::vector<float> x = random_values(3 * 2 * 8, 31);
  Tensor out = run1("rope", {f32({3, 2, 8}, x), i32({3}, {0, 0, 0})}, {{"theta", 10000.0}});
  EXPECT_EQ(out.shape, (Dims{3, 2, 8}));
  EXPECT_EQ(values(out), x);
}

TEST(Rope, KnownPositionRotateHalf) {
  // D = 4, theta 1e4: inv_freq = [1, 0.01]; position 3 -> angles [3, 0.03];
  // pairs (0, 2) and (1, 3).
  Tensor out = run1("rope", {f32({1, 1, 4}, {1, 2, 3, 4}), i32({1}, {3})}, {{"theta", 10000.0}});
  const double a = 3.0, b = 0.03;
  expect_close(values(out),
               {1 * std::cos(a) - 3 * std::sin(a), 2 * std::cos(b) - 4 * std::sin(b),
                3 * std::cos(a) + 1 * std::sin(a), 4 * std::cos(b) + 2 * std::sin(b)},
               1e-6);
}

TEST(Rope, Interleaved) {
  // pairs (0, 1) at angle 3 and (2, 3) at angle 0.03
  Tensor out = run1("rope", {f32({1, 1, 4}, {1, 2, 3, 4}), i32({1}, {3})},
                    {{"theta", 10000.0}, {"interleaved", true}});
  const double a = 3.0, b = 0.03;
  expect_close(values(out),
               {1 * std::cos(a) - 2 * std::sin(a), 2 * std::cos(a) + 1 * std::sin(a),
                3 * std::cos(b) - 4 * std::sin(b), 4 * std::cos(b) + 3 * std::sin(b)},
               1e-6);
}

TEST(Rope, PartialRopeDimPassesTheTailThrough) {
  // D = 8, rope_dim = 4: frequencies from d = 4 ([1, 0.01]), pairs (0, 2), (1, 3).
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  Tensor out = run1("rope", {f32({1, 1, 8}, x), i32({1}, {5})}, {{"theta", 10000.0}, {"rope_dim", 4}});
  const double a = 5.0, b = 0.05;
  expect_close(values(out),
               {1 * std::cos(a) - 3 * std::sin(a), 2 * std::cos(b) - 4 * std::sin(b),
                3 * std::cos(a) + 1 * std::sin(a), 4 * std::cos(b) + 2 * std::sin(b), 5, 6, 7, 8},
               1e-6);
  EXPECT_EQ(out.f32()[4], 5.0f);
  EXPECT_EQ(out.f32()[7], 8.0f);
}

TEST(Rope, EveryHeadAndRowUsesItsPosition) {
  const int64_t S = 3, H = 2, D = 6;
  std::vector<float> x = random_values(S * H * D, 32);
  std::vector<int32_t> pos = {7, 2, 11};
  Tensor out = run1("rope", {f32({S, H, D}, x), i32({S}, pos)}, {{"theta", 100.0}});
  std::vector<double> want(x.size());
  for (int64_t t = 0; t < S; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < D / 2; ++j) {
        double ang = pos[t] * std::pow(100.0, -2.0 * j / D);
        const float* r = &x[(t * H + h) * D];
        want[(t * H + h) * D + j] = r[j] * std::cos(ang) - r[j + D / 2] * std::sin(ang);
        want[(t * H + h) * D + j + D / 2] = r[j + D / 2] * std::cos(ang) + r[j] * std::sin(ang);
      }
  expect_close(values(out), want, 1e-5);
}

TEST(Rope, LongPositionRoundsTheAngleInFloat32LikeTorch) {
  // Hugging Face forms the angle as a float32 product pos * inv_freq; with
  // theta 1e4 and D 8 every inv_freq (1, 0.1, 0.01, 0.001) is the float
  // nearest the exact value, so the expected angle is float(pos * float(inv)).
  const int32_t pos = 100000;
  Tensor out = run1("rope", {f32({1, 1, 8}, {1, 1, 1, 1, 0, 0, 0, 0}), i32({1}, {pos})}, {{"theta", 10000.0}});
  for (int j = 0; j < 4; ++j) {
    float inv = float(std::pow(10000.0, -j / 4.0));
    double angle = double(float(pos) * inv);
    EXPECT_NEAR(out.f32()[j], std::cos(angle), 1e-6) << j;
    EXPECT_NEAR(out.f32()[j + 4], std::sin(angle), 1e-6) << j;
  }
}

TEST(Rope, LinearScalingDividesTheFrequencies) {
  // factor 2 at position 2 rotates exactly as no scaling at position 1.
  std::vector<float> x = random_values(8, 33);
  Tensor scaled = run1("rope", {f32({1, 1, 8}, x), i32({1}, {2})},
                       {{"theta", 10000.0}, {"scaling", {{"type", "linear"}, {"factor", 2.0}}}});
  Tensor plain = run1("rope", {f32({1, 1, 8}, x), i32({1}, {1})}, {{"theta", 10000.0}});
  EXPECT_EQ(values(scaled), values(plain));
  // "default" is no scaling.
  Tensor dflt = run1("rope", {f32({1, 1, 8}, x), i32({1}, {1})},
                     {{"theta", 10000.0}, {"scaling", {{"rope_type", "default"}}}});
  EXPECT_EQ(values(dflt), values(plain));
}

TEST(Rope, Llama3ScalingInAllThreeRegimes) {
  const double theta = 500000, factor = 8, low = 1, high = 4, old_ctx = 64;
  const int64_t d = 16;
  Attrs scaling = {{"rope_type", "llama3"},
                   {"factor", factor},
                   {"low_freq_factor", low},
                   {"high_freq_factor", high},
                   {"original_max_position_embeddings", 64}};
  auto inv = rope_inv_freq(theta, d, scaling);
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->size(), size_t(d / 2));
  // The formula in double: long wavelengths / factor, short kept, between blended.
  int regimes[3] = {0, 0, 0};
  std::vector<double> want(d / 2);
  for (int64_t j = 0; j < d / 2; ++j) {
    double f = 1.0 / std::pow(theta, double(2 * j) / d);
    double wl = 2 * M_PI / f;
    if (wl > old_ctx / low) {
      want[j] = f / factor;
      regimes[0]++;
    } else if (wl < old_ctx / high) {
      want[j] = f;
      regimes[1]++;
    } else {
      double s = (old_ctx / wl - low) / (high - low);
      want[j] = (1 - s) * f / factor + s * f;
      regimes[2]++;
    }
  }
  EXPECT_GT(regimes[0], 0);
  EXPECT_GT(regimes[1], 0);
  EXPECT_GT(regimes[2], 0);
  for (int64_t j = 0; j < d / 2; ++j) EXPECT_NEAR((*inv)[j], want[j], 1e-6 * want[j]) << "inv_freq[" << j << "]";

  // Through the op: at position 1, a unit x[j] turns into (cos, sin) of inv_freq[j].
  std::vector<float> x(d, 0.0f);
  for (int64_t j = 0; j < d / 2; ++j) x[j] = 1.0f;
  Tensor out = run1("rope", {f32({1, 1, d}, x), i32({1}, {1})}, {{"theta", theta}, {"scaling", scaling}});
  for (int64_t j = 0; j < d / 2; ++j) {
    EXPECT_NEAR(out.f32()[j], std::cos(want[j]), 1e-6) << j;
    EXPECT_NEAR(out.f32()[j + d / 2], std::sin(want[j]), 1e-6) << j;
  }
}

TEST(Rope, Errors) {
  const std::vector<TypedShape> in = {{DType::F32, {Dim::seq(), Dim::of(4), Dim::of(8)}},
                                      {DType::I32, {Dim::seq()}}};
  auto yarn = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}});
  ASSERT_FALSE(yarn.ok());
  EXPECT_EQ(yarn.error().message, "rope: rope_scaling type 'yarn' is not supported yet");
  auto odd = infer("rope", in, {{"theta", 1e4}, {"rope_dim", 3}});
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().message, "rope: rope_dim 3 must be even, positive and <= the head size 8");
  auto big = infer("rope", in, {{"theta", 1e4}, {"rope_dim", 10}});
  ASSERT_FALSE(big.ok());
  auto no_theta = infer("rope", in);
  ASSERT_FALSE(no_theta.ok());
  EXPECT_EQ(no_theta.error().message, "rope: attribute 'theta' is required");
  auto llama3_missing = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}});
  ASSERT_FALSE(llama3_missing.ok());
  EXPECT_NE(llama3_missing.error().message.find("low_freq_factor"), std::string::npos);
  auto pos = infer("rope", {in[0], {DType::I32, {Dim::of(3)}}}, {{"theta", 1e4}});
  ASSERT_FALSE(pos.ok());
  EXPECT_EQ(pos.error().message, "rope: positions [3] must be [seq] to match x [seq, 4, 8]");
  auto ok = infer("rope", in, {{"theta", 1e4}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 4, 8]");
}

}  // namespace
}  // namespace arch::test
