#include "tests/kernels/kernel_test_util.h"

#include "kernels/reference/rope.h"

#include <algorithm>

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

// ---- dynamic NTK ------------------------------------------------------------
// transformers' dynamic_rope_update: seq_len = max(position_ids) + 1; up to
// the config's max_position_embeddings the model keeps the unscaled
// frequencies, beyond it _compute_dynamic_ntk_parameters grows the base to
// theta * (factor * seq_len / max_pos - (factor - 1)) ^ (d / (d - 2)).

// HF's formula in double.
std::vector<double> dynamic_inv_freq_double(double theta, int64_t d, double factor, double max_pos, double seq_len) {
  double base = theta * std::pow(factor * seq_len / max_pos - (factor - 1), double(d) / double(d - 2));
  std::vector<double> inv(d / 2);
  for (int64_t j = 0; j < d / 2; ++j) inv[j] = 1.0 / std::pow(base, double(2 * j) / double(d));
  return inv;
}

TEST(Rope, DynamicUpToTheOriginalLengthIsUnscaled) {
  const int64_t d = 16, max_pos = 32;
  const Attrs scaling = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  // The frequencies for every seq_len <= max_pos (0: none yet) are exactly the plain ones.
  auto plain = rope_inv_freq(1e4, d, nullptr);
  ASSERT_TRUE(plain.ok());
  for (int64_t seq_len : {0, 1, 17, 32}) {
    auto dyn = rope_frequencies(1e4, d, scaling, max_pos, seq_len);
    ASSERT_TRUE(dyn.ok()) << dyn.error().message;
    EXPECT_EQ(dyn->inv_freq, *plain) << seq_len;
    EXPECT_EQ(dyn->attention_factor, 1.0f);
  }
  // Through the op: positions 0..31 (seq_len 32 = max_pos) rotate as no scaling.
  std::vector<float> x = random_values(32 * 2 * d, 41);
  std::vector<int32_t> pos(32);
  for (int i = 0; i < 32; ++i) pos[i] = i;
  Tensor dyn = run1("rope", {f32({32, 2, d}, x), i32({32}, pos)},
                    {{"theta", 1e4}, {"scaling", scaling}, {"max_position_embeddings", max_pos}});
  Tensor ref = run1("rope", {f32({32, 2, d}, x), i32({32}, pos)}, {{"theta", 1e4}});
  EXPECT_EQ(values(dyn), values(ref));
}

TEST(Rope, DynamicBeyondTheOriginalLengthGrowsTheBase) {
  const double theta = 1e4, factor = 2.0;
  const int64_t d = 16, max_pos = 32;
  const Attrs scaling = {{"rope_type", "dynamic"}, {"factor", factor}};
  for (int64_t seq_len : {33, 40, 100, 1000}) {
    auto got = rope_frequencies(theta, d, scaling, max_pos, seq_len);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->attention_factor, 1.0f);
    std::vector<double> want = dynamic_inv_freq_double(theta, d, factor, max_pos, seq_len);
    for (int64_t j = 0; j < d / 2; ++j)
      EXPECT_NEAR(got->inv_freq[j], want[j], 1e-6 * want[j]) << "seq_len " << seq_len << " inv_freq[" << j << "]";
    if (seq_len == 40) {
      std::vector<float> plain = rope_inv_freq(theta, d, nullptr).value();
      EXPECT_LT(got->inv_freq[d / 2 - 1], plain[d / 2 - 1]);  // slower: the base grew
    }
  }
  // The op takes seq_len from its positions: a call reaching position 39
  // rotates every row (position 5 too) with the seq_len 40 frequencies; a
  // call whose last position is 5 rotates position 5 unscaled. (A KV cache
  // keeps rows rotated as they were when computed, like Hugging Face's
  // cached generate.)
  auto inv40 = rope_inv_freq(theta, d, scaling, max_pos, 40);
  ASSERT_TRUE(inv40.ok());
  std::vector<float> x(2 * d, 0.0f);
  for (int64_t j = 0; j < d / 2; ++j) x[j] = x[d + j] = 1.0f;  // unit x[j]: out = (cos, sin)
  const Attrs attrs = {{"theta", theta}, {"scaling", scaling}, {"max_position_embeddings", max_pos}};
  Tensor both = run1("rope", {f32({2, 1, d}, x), i32({2}, {5, 39})}, attrs);
  for (int64_t row = 0; row < 2; ++row) {
    const int32_t p = row == 0 ? 5 : 39;
    for (int64_t j = 0; j < d / 2; ++j) {
      double angle = double(float(p) * (*inv40)[j]);
      EXPECT_NEAR(both.f32()[row * d + j], std::cos(angle), 1e-6) << p << " " << j;
      EXPECT_NEAR(both.f32()[row * d + d / 2 + j], std::sin(angle), 1e-6) << p << " " << j;
    }
  }
  Tensor alone = run1("rope", {f32({1, 1, d}, std::vector<float>(x.begin(), x.begin() + d)), i32({1}, {5})}, attrs);
  Tensor plain = run1("rope", {f32({1, 1, d}, std::vector<float>(x.begin(), x.begin() + d)), i32({1}, {5})},
                      {{"theta", theta}});
  EXPECT_EQ(values(alone), values(plain));
  EXPECT_NE(std::vector<float>(both.f32(), both.f32() + d), values(plain));
}

TEST(Rope, DynamicFallsBackToTheObjectsOriginalLengthOnlyWhenTheConfigsIsUnknown) {
  // transformers reads config.max_position_embeddings for dynamic; the
  // object's original_max_position_embeddings stands in only when the
  // config gave none (rope attribute 0).
  const int64_t d = 16;
  const Attrs scaling = {{"rope_type", "dynamic"}, {"factor", 2.0}, {"original_max_position_embeddings", 64}};
  auto known = rope_inv_freq(1e4, d, scaling, 32, 50);    // 50 > 32: grown
  auto unknown = rope_inv_freq(1e4, d, scaling, 0, 50);   // 50 <= 64: plain
  ASSERT_TRUE(known.ok() && unknown.ok());
  EXPECT_EQ(*unknown, rope_inv_freq(1e4, d, nullptr).value());
  std::vector<double> want = dynamic_inv_freq_double(1e4, d, 2.0, 32, 50);
  for (int64_t j = 0; j < d / 2; ++j) EXPECT_NEAR((*known)[j], want[j], 1e-6 * want[j]) << j;
}

// ---- YaRN -------------------------------------------------------------------
// _compute_yarn_parameters (transformers 4.56), in double.
struct YarnDouble {
  std::vector<double> inv_freq;
  double attention_factor;
  double low, high;
};

YarnDouble yarn_double(double theta, int64_t d, double factor, double orig, double attention_factor,
                       bool truncate = true, double beta_fast = 32, double beta_slow = 1) {
  auto corr = [&](double rot) { return d * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(theta)); };
  YarnDouble y;
  y.low = corr(beta_fast);
  y.high = corr(beta_slow);
  if (truncate) {
    y.low = std::floor(y.low);
    y.high = std::ceil(y.high);
  }
  y.low = std::max(y.low, 0.0);
  y.high = std::min(y.high, double(d - 1));
  for (int64_t j = 0; j < d / 2; ++j) {
    double pos_freq = std::pow(theta, double(2 * j) / d);
    double ramp = std::clamp((j - y.low) / (y.high - y.low), 0.0, 1.0);
    double extrapolation_factor = 1 - ramp;
    y.inv_freq.push_back(1 / (factor * pos_freq) * (1 - extrapolation_factor) + 1 / pos_freq * extrapolation_factor);
  }
  y.attention_factor = attention_factor;
  return y;
}

void expect_yarn(const RopeFrequencies& got, const YarnDouble& want, const std::string& what) {
  ASSERT_EQ(got.inv_freq.size(), want.inv_freq.size()) << what;
  for (size_t j = 0; j < want.inv_freq.size(); ++j)
    EXPECT_NEAR(got.inv_freq[j], want.inv_freq[j], 1e-6 * want.inv_freq[j]) << what << " inv_freq[" << j << "]";
  EXPECT_NEAR(got.attention_factor, want.attention_factor, 1e-7) << what;
}

TEST(Rope, YarnMatchesTransformersForALongContextConfig) {
  // Qwen2.5-style: theta 1e6, head_dim 64, factor 4 over an original 32768.
  const double theta = 1e6, factor = 4;
  const int64_t d = 64;
  const Attrs scaling = {{"rope_type", "yarn"}, {"factor", factor}, {"original_max_position_embeddings", 32768}};
  auto got = rope_frequencies(theta, d, scaling, 131072);
  ASSERT_TRUE(got.ok()) << got.error().message;
  YarnDouble want = yarn_double(theta, d, factor, 32768, 0.1 * std::log(factor) + 1);
  // The correction range is dims [11, 20]: extrapolated below, interpolated
  // above, blended between.
  EXPECT_EQ(want.low, 11);
  EXPECT_EQ(want.high, 20);
  expect_yarn(*got, want, "yarn");
  EXPECT_NEAR(got->attention_factor, 1.1386294361119891, 1e-7);
  EXPECT_EQ(got->inv_freq[0], 1.0f);                                          // pure extrapolation
  EXPECT_NEAR(got->inv_freq[31], 1 / (factor * std::pow(theta, 62.0 / 64)), 1e-6 * got->inv_freq[31]);  // pure interpolation

  // 4.56 uses the object's factor even where max_position_embeddings /
  // original_max_position_embeddings says otherwise (Qwen3 ships 40960 with
  // factor 4 over 32768: the ratio 1.25 is not used; earlier versions did).
  auto qwen3 = rope_frequencies(theta, d, scaling, 40960);
  ASSERT_TRUE(qwen3.ok());
  EXPECT_EQ(qwen3->inv_freq, got->inv_freq);
  EXPECT_EQ(qwen3->attention_factor, got->attention_factor);
  // Without original_max_position_embeddings the config's length places the range.
  const Attrs bare = {{"rope_type", "yarn"}, {"factor", factor}};
  auto fallback = rope_frequencies(theta, d, bare, 32768);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->inv_freq, got->inv_freq);
  auto longer = rope_frequencies(theta, d, bare, 131072);
  ASSERT_TRUE(longer.ok());
  expect_yarn(*longer, yarn_double(theta, d, factor, 131072, 0.1 * std::log(factor) + 1), "yarn 131072");

  // Through the op: cos and sin are both scaled by the attention factor.
  std::vector<float> x(d, 0.0f);
  for (int64_t j = 0; j < d / 2; ++j) x[j] = 1.0f;
  Tensor out = run1("rope", {f32({1, 1, d}, x), i32({1}, {1000})},
                    {{"theta", theta}, {"scaling", scaling}, {"max_position_embeddings", 131072}});
  for (int64_t j = 0; j < d / 2; ++j) {
    double angle = double(1000.0f * got->inv_freq[j]);
    EXPECT_NEAR(out.f32()[j], want.attention_factor * std::cos(angle), 2e-6) << j;
    EXPECT_NEAR(out.f32()[j + d / 2], want.attention_factor * std::sin(angle), 2e-6) << j;
  }
  // Position 0 is no longer the identity: x * attention_factor.
  Tensor zero = run1("rope", {f32({1, 1, d}, x), i32({1}, {0})},
                     {{"theta", theta}, {"scaling", scaling}, {"max_position_embeddings", 131072}});
  EXPECT_EQ(zero.f32()[0], float(want.attention_factor));
}

TEST(Rope, YarnAttentionFactorChoices) {
  const double theta = 1e6, factor = 4;
  const int64_t d = 64;
  const double orig = 32768;
  auto with = [&](Attrs extra) {
    Attrs s = {{"rope_type", "yarn"}, {"factor", factor}, {"original_max_position_embeddings", orig}};
    s.update(extra);
    auto f = rope_frequencies(theta, d, s, 131072);
    EXPECT_TRUE(f.ok()) << f.error().message;
    return f.ok() ? *f : RopeFrequencies{};
  };
  YarnDouble base = yarn_double(theta, d, factor, orig, 0);
  // An explicit attention_factor wins, the frequencies unchanged.
  RopeFrequencies explicit_af = with({{"attention_factor", 0.8}});
  EXPECT_EQ(explicit_af.attention_factor, 0.8f);
  base.attention_factor = 0.8;
  expect_yarn(explicit_af, base, "attention_factor 0.8");
  // mscale and mscale_all_dim (DeepSeek): a ratio of the two get_mscale values.
  RopeFrequencies ms = with({{"mscale", 1.0}, {"mscale_all_dim", 0.5}});
  EXPECT_NEAR(ms.attention_factor, (0.1 * 1.0 * std::log(factor) + 1) / (0.1 * 0.5 * std::log(factor) + 1), 1e-7);
  RopeFrequencies equal = with({{"mscale", 0.707}, {"mscale_all_dim", 0.707}});
  EXPECT_EQ(equal.attention_factor, 1.0f);
  // Only one of them (or a zero): the default 0.1 ln(factor) + 1.
  RopeFrequencies one = with({{"mscale", 1.0}, {"mscale_all_dim", 0}});
  EXPECT_NEAR(one.attention_factor, 0.1 * std::log(factor) + 1, 1e-7);
  // factor <= 1: get_mscale is 1.
  auto unit = rope_frequencies(theta, d, {{"rope_type", "yarn"}, {"factor", 1.0}}, 4096);
  ASSERT_TRUE(unit.ok());
  EXPECT_EQ(unit->attention_factor, 1.0f);
}

// LongRoPE (_compute_longrope_parameters, longrope_frequency_update): the
// short factors while the sequence is at most the original length, the
// long ones past it; inv[j] = 1 / (factor[j] theta^(2j/d)); the attention
// factor from max_position_embeddings / original_max_position_embeddings.
TEST(Rope, LongRope) {
  const double theta = 1e4;
  const int64_t d = 12, max_pos = 256, orig = 24;
  const std::vector<double> shorts = {1.0, 1.05, 1.15, 1.3, 1.6, 2.0}, longs = {1.0, 1.6, 3.0, 6.5, 14.0, 30.0};
  Attrs s = {{"type", "longrope"}, {"short_factor", shorts}, {"long_factor", longs}};
  const double att = std::sqrt(1 + std::log(double(max_pos) / orig) / std::log(double(orig)));
  for (int64_t seq_len : {0, 1, 24, 25, 36}) {
    auto f = rope_frequencies(theta, d, s, max_pos, seq_len, orig);
    ASSERT_TRUE(f.ok()) << f.error().message;
    const auto& factors = seq_len > orig ? longs : shorts;
    for (int64_t j = 0; j < d / 2; ++j)
      EXPECT_NEAR(f->inv_freq[size_t(j)], 1.0 / (factors[size_t(j)] * std::pow(theta, 2.0 * j / d)), 1e-7)
          << "seq_len " << seq_len << " pair " << j;
    EXPECT_NEAR(f->attention_factor, att, 1e-6);
  }
  // Past the original length every position's rotation changes.
  EXPECT_EQ(rope_history_changes_past(s, max_pos, orig), orig);
  EXPECT_EQ(rope_history_changes_past({{"rope_type", "yarn"}, {"factor", 4.0}}, max_pos, orig), 0);
  EXPECT_TRUE(rope_frequencies_read_seq_len(s));
  // What the frequencies depend on: the regime alone (kernels keep them
  // from step to step within one).
  EXPECT_EQ(rope_frequencies_key(s, max_pos, orig, 1), 0);
  EXPECT_EQ(rope_frequencies_key(s, max_pos, orig, 24), 0);
  EXPECT_EQ(rope_frequencies_key(s, max_pos, orig, 25), 1);
  EXPECT_EQ(rope_frequencies_key(s, max_pos, orig, 4000), 1);
  Attrs dyn = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_EQ(rope_frequencies_key(dyn, 256, 0, 256), 0);
  EXPECT_EQ(rope_frequencies_key(dyn, 256, 0, 300), 300);
  EXPECT_EQ(rope_frequencies_key(nullptr, 256, 0, 300), 0);
  // Without the config's original length: the object's, with its factor.
  Attrs in_object = s;
  in_object["original_max_position_embeddings"] = 64;
  in_object["factor"] = 4.0;
  auto obj = rope_frequencies(theta, d, in_object, 0, 65, 0);
  ASSERT_TRUE(obj.ok()) << obj.error().message;
  EXPECT_NEAR(obj->inv_freq[5], 1.0 / (30.0 * std::pow(theta, 10.0 / 12)), 1e-9);
  EXPECT_NEAR(obj->attention_factor, std::sqrt(1 + std::log(4.0) / std::log(64.0)), 1e-6);
  EXPECT_EQ(rope_history_changes_past(in_object, 0, 0), 64);
  // An explicit attention_factor wins; "su" is LongRoPE's first name.
  in_object["attention_factor"] = 1.5;
  in_object["type"] = "su";
  auto su = rope_frequencies(theta, d, in_object, 0, 10, 0);
  ASSERT_TRUE(su.ok()) << su.error().message;
  EXPECT_EQ(su->attention_factor, 1.5f);
  EXPECT_NEAR(su->inv_freq[1], 1.0 / (1.05 * std::pow(theta, 2.0 / 12)), 1e-7);
  // A factor that is not a positive number is refused naming it.
  Attrs bad = s;
  bad["long_factor"][3] = -1;
  auto neg = rope_frequencies(theta, d, bad, max_pos, 30, orig);
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().message, "rope_scaling type 'longrope': long_factor[3] must be a positive number, got -1");
}

TEST(Rope, YarnBetasAndTruncate) {
  const double theta = 1e6, factor = 4, orig = 32768;
  const int64_t d = 64;
  const double la = 0.1 * std::log(factor) + 1;
  Attrs s = {{"rope_type", "yarn"}, {"factor", factor}, {"original_max_position_embeddings", orig},
             {"truncate", false}};
  auto untruncated = rope_frequencies(theta, d, s, 0);
  ASSERT_TRUE(untruncated.ok()) << untruncated.error().message;
  YarnDouble want = yarn_double(theta, d, factor, orig, la, false);
  EXPECT_NE(want.low, std::floor(want.low));  // the range really is fractional
  expect_yarn(*untruncated, want, "truncate false");
  s["truncate"] = true;
  s["beta_fast"] = 16;
  s["beta_slow"] = 2;
  auto betas = rope_frequencies(theta, d, s, 0);
  ASSERT_TRUE(betas.ok());
  expect_yarn(*betas, yarn_double(theta, d, factor, orig, la, true, 16, 2), "betas 16, 2");
  s["beta_fast"] = nullptr;  // None: the defaults 32 and 1
  s["beta_slow"] = 0;
  auto defaults = rope_frequencies(theta, d, s, 0);
  ASSERT_TRUE(defaults.ok());
  expect_yarn(*defaults, yarn_double(theta, d, factor, orig, la), "beta defaults");
}

TEST(Rope, Errors) {
  const std::vector<TypedShape> in = {{DType::F32, {Dim::seq(), Dim::of(4), Dim::of(8)}},
                                      {DType::I32, {Dim::seq()}}};
  auto unknown = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"type", "ntk-by-parts"}, {"factor", 4.0}}}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "rope: rope_scaling type 'ntk-by-parts' is not supported yet");
  // longrope needs a factor list of rope_dim / 2 (here 4) numbers.
  auto short_list = infer("rope", in, {{"theta", 1e4}, {"max_position_embeddings", 256},
                                       {"scaling", {{"rope_type", "longrope"}, {"short_factor", {1, 2}},
                                                    {"long_factor", {1, 2, 3, 4}}}}});
  ASSERT_FALSE(short_list.ok());
  EXPECT_EQ(short_list.error().message,
            "rope: rope_scaling type 'longrope' needs 'short_factor', a list of 4 numbers (one per rotated pair of "
            "the 8 rope dims)");
  // dynamic and yarn need a length: the config's max_position_embeddings,
  // or (0 = unknown) the object's original_max_position_embeddings.
  for (const char* type : {"dynamic", "yarn"}) {
    auto no_len = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", type}, {"factor", 4.0}}}});
    ASSERT_FALSE(no_len.ok()) << type;
    EXPECT_NE(no_len.error().message.find("max_position_embeddings"), std::string::npos) << no_len.error().message;
    auto with_len = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", type}, {"factor", 4.0}}},
                                       {"max_position_embeddings", 4096}});
    EXPECT_TRUE(with_len.ok()) << type << ": " << with_len.error().message;
    auto with_orig = infer("rope", in, {{"theta", 1e4},
                                        {"scaling", {{"rope_type", type}, {"factor", 4.0},
                                                     {"original_max_position_embeddings", 4096}}}});
    EXPECT_TRUE(with_orig.ok()) << type << ": " << with_orig.error().message;
    auto no_factor = infer("rope", in, {{"theta", 1e4}, {"scaling", {{"rope_type", type}}},
                                        {"max_position_embeddings", 4096}});
    ASSERT_FALSE(no_factor.ok()) << type;
    EXPECT_EQ(no_factor.error().message,
              "rope: rope_scaling type '" + std::string(type) + "' needs a number 'factor'");
  }
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
