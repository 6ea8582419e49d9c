// Text to video through a Wan pipeline folder (families/toys/wan-tiny.json:
// UMT5, WanTransformer3DModel, AutoencoderKLWan with random weights): the
// video's shape and range, its context, and the properties diffusers'
// chunked VAE has by construction (a latent frame's pixels depend on it and
// the frames before only) held by the whole-sequence templates. No diffusers
// golden of Wan is in ../shared yet: these check structure, not diffusers'
// numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/runtime/forward.h"
#include "engine/runtime/pipeline.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

// The tiny pipeline, written once per test.
struct TinyWan {
  TempDir dir;
  Pipeline p;
  explicit TinyWan(uint64_t seed = 7, const std::string& spec = "wan-tiny.json") {
    Status st = write_toy_from_spec(std::string(ARCHETYPE_FAMILIES_DIR) + "/toys/" + spec, dir.path(), seed);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    auto loaded = load_pipeline(dir.path());
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    if (loaded.ok()) p = std::move(*loaded);
  }
};

// Frames [first, first + n) of a video [C, F, H, W].
std::vector<float> frames_of(const Tensor& v, int64_t first, int64_t n) {
  const int64_t C = v.dim(0), F = v.dim(1), plane = v.dim(2) * v.dim(3);
  std::vector<float> out;
  for (int64_t c = 0; c < C; ++c)
    out.insert(out.end(), v.f32() + (c * F + first) * plane, v.f32() + (c * F + first + n) * plane);
  return out;
}

// The tiny pipelines' prompt (ids 5, 9, </s>) against the empty one, from
// seeded latents of `shape`.
ImagineOptions prompt_options(const Dims& shape, float guidance, int steps) {
  ImagineOptions opt;
  opt.ids = {5, 9, 1};
  opt.negative_ids = {1};
  opt.guidance = guidance;
  opt.steps = steps;
  opt.latents = seeded_latents(shape, 3);
  return opt;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  EXPECT_LE(worst, tol) << what;
}

TEST(VideoPipeline, TinyWanMakesAVideoFromText) {
  TinyWan w;
  ASSERT_TRUE(w.p.vae);
  EXPECT_TRUE(makes_video(w.p));
  EXPECT_EQ(vae_scale(w.p), 8);
  EXPECT_EQ(vae_temporal_scale(w.p), 4);
  auto shape = latent_shape(w.p, 32, 48, 9);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(*shape, (Dims{4, 3, 4, 6}));
  ImagineOptions opt = prompt_options(*shape, 5.0f, 3);
  auto r = imagine(w.p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->image.shape, (Dims{3, 9, 32, 48}));
  for (int64_t i = 0; i < r->image.numel(); ++i) {
    ASSERT_TRUE(r->image.f32()[i] >= 0.0f && r->image.f32()[i] <= 1.0f) << i;
  }
  EXPECT_TRUE(r->denoised.guided);
  EXPECT_EQ(r->denoised.trajectory.shape, (Dims{4, 4, 3, 4, 6}));
  // The context: UMT5's states of the three tokens, then zeros to 512 rows.
  ASSERT_EQ(r->prompt_embeds.shape, (Dims{512, 16}));
  double kept = 0, past = 0;
  for (int64_t i = 0; i < 512 * 16; ++i) (i < 3 * 16 ? kept : past) += std::abs(r->prompt_embeds.f32()[i]);
  EXPECT_GT(kept, 0.0);
  EXPECT_EQ(past, 0.0);
  // The same seed, the same video; guidance changes it.
  auto again = imagine(w.p, opt);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::memcmp(again->image.f32(), r->image.f32(), r->image.nbytes()), 0);
  opt.guidance = 1.0f;
  auto plain = imagine(w.p, opt);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->denoised.guided);
  EXPECT_NE(std::memcmp(plain->image.f32(), r->image.f32(), r->image.nbytes()), 0);
}

TEST(VideoPipeline, FrameCountsAndSizesAreChecked) {
  TinyWan w;
  auto frames = latent_shape(w.p, 32, 48, 8);
  ASSERT_FALSE(frames.ok());
  EXPECT_CONTAINS(frames.error().message, "one more than a multiple of 4");
  EXPECT_CONTAINS(frames.error().message, "5 or 9 would be");
  auto side = latent_shape(w.p, 40, 48, 5);
  ASSERT_FALSE(side.ok());
  EXPECT_CONTAINS(side.error().message, "the video's height must be a positive multiple of 16");
  auto defaults = latent_shape(w.p);
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(*defaults, (Dims{4, 21, 60, 104}));  // WanPipeline's 81 frames of 480 x 832
  ImagineOptions opt;
  opt.ids = {5, 1};
  opt.latents = seeded_latents({4, 2, 4, 6}, 1);
  opt.init_image = Tensor::zeros(DType::F32, {3, 32, 48});
  auto r = imagine(w.p, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error().message, "starts from text alone");
}

// The two VAEs: Wan 2.1's (8x, 4 latent channels here) and Wan 2.2's
// (residual levels, 2x2 patches: 16x, 8 latent channels here).
struct VaeCase {
  const char* spec;
  int64_t z, scale;
};

class WanVae : public ::testing::TestWithParam<VaeCase> {};

INSTANTIATE_TEST_SUITE_P(Both, WanVae, ::testing::Values(VaeCase{"wan-tiny.json", 4, 8}, VaeCase{"wan22-tiny.json", 8, 16}),
                         [](const auto& info) { return std::string(info.param.z == 4 ? "Wan21" : "Wan22"); });

// diffusers decodes a latent frame at a time, each causal convolution
// carrying the frames before (Wan 2.2's repeated shortcut dropping its
// first frame on the first): the video of the first k latent frames is the
// first 1 + 4 (k - 1) frames of the longer one's, as the whole-sequence
// template makes it too.
TEST_P(WanVae, DecodingIsCausalAsDiffusersChunksIt) {
  const VaeCase c = GetParam();
  TinyWan w(7, c.spec);
  const int64_t Z = c.z, H = 4 * c.scale, W = 6 * c.scale;
  Tensor z = seeded_latents({Z, 3, 4, 6}, 11);
  auto decode = [&](int64_t latent_frames) {
    Tensor part = Tensor::zeros(DType::F32, {Z, latent_frames, 4, 6});
    for (int64_t ch = 0; ch < Z; ++ch)
      std::memcpy(part.f32() + ch * latent_frames * 24, z.f32() + ch * 3 * 24, size_t(latent_frames * 24) * sizeof(float));
    auto out = forward(*w.p.vae, {{"latents", part}}, {"decoded_sample"}, nullptr, "decode");
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? out->at("decoded_sample") : Tensor{};
  };
  const Tensor whole = decode(3), two = decode(2), one = decode(1);
  ASSERT_EQ(whole.shape, (Dims{3, 9, H, W}));
  ASSERT_EQ(two.shape, (Dims{3, 5, H, W}));
  ASSERT_EQ(one.shape, (Dims{3, 1, H, W}));  // one latent frame is one image
  expect_near_all(frames_of(two, 0, 5), frames_of(whole, 0, 5), 1e-5f, "2 latent frames");
  expect_near_all(frames_of(one, 0, 1), frames_of(whole, 0, 1), 1e-5f, "1 latent frame");
  // A later frame does depend on the frames before it: the first latent
  // frame changed, the second's four frames change too.
  for (int64_t ch = 0; ch < Z; ++ch) z.f32()[ch * 3 * 24] += 1.0f;
  EXPECT_NE(frames_of(decode(2), 1, 4), frames_of(two, 1, 4));
}

// Likewise the encoder, which diffusers runs on the first frame, then four
// at a time (Wan 2.2's averaged shortcut padding each chunk's odd frame
// count in front): 1 + 4 k frames make k + 1 latent frames, a prefix's the
// prefix of the longer video's.
TEST_P(WanVae, EncodingIsCausalAsDiffusersChunksIt) {
  const VaeCase c = GetParam();
  TinyWan w(7, c.spec);
  const int64_t H = 4 * c.scale, W = 6 * c.scale, plane = H * W;
  Tensor video = seeded_latents({3, 9, H, W}, 5);
  for (int64_t i = 0; i < video.numel(); ++i) video.f32()[i] = std::tanh(video.f32()[i]);
  auto encode = [&](int64_t frames) {
    Tensor part = Tensor::zeros(DType::F32, {3, frames, H, W});
    for (int64_t ch = 0; ch < 3; ++ch)
      std::memcpy(part.f32() + ch * frames * plane, video.f32() + ch * 9 * plane, size_t(frames * plane) * sizeof(float));
    auto out = forward(*w.p.vae, {{"video", part}}, {"latent_mean", "latent_mean_scaled"}, nullptr, "encode");
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : NamedTensors{};
  };
  const NamedTensors whole = encode(9), first = encode(5);
  ASSERT_EQ(whole.at("latent_mean").shape, (Dims{c.z, 3, 4, 6}));
  ASSERT_EQ(first.at("latent_mean").shape, (Dims{c.z, 2, 4, 6}));
  expect_near_all(frames_of(first.at("latent_mean"), 0, 2), frames_of(whole.at("latent_mean"), 0, 2), 1e-5f, "5 frames");
  // Scaled as the decoder unscales it: (mean - latents_mean) / latents_std.
  const Tensor& m = whole.at("latent_mean");
  const Tensor& sc = whole.at("latent_mean_scaled");
  EXPECT_NEAR(sc.f32()[0], (m.f32()[0] - (-0.7571f)) / 2.8184f, 1e-5f);
}

// Wan 2.2's TI2V pipeline (its per-token timesteps, expand_timesteps, all
// the step's own from text alone): a video at 16x the latents.
TEST(VideoPipeline, Wan22MakesAVideo) {
  TinyWan w(7, "wan22-tiny.json");
  EXPECT_EQ(vae_scale(w.p), 16);
  auto shape = latent_shape(w.p, 64, 96, 9);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(*shape, (Dims{8, 3, 4, 6}));
  auto r = imagine(w.p, prompt_options(*shape, 5.0f, 2));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->image.shape, (Dims{3, 9, 64, 96}));
  auto odd = latent_shape(w.p, 40, 96, 9);
  ASSERT_FALSE(odd.ok());
  EXPECT_CONTAINS(odd.error().message, "multiple of 32");
}

// The rotary tables: a head's features split between frame, row and column
// (4, 4 and 4 of the tiny transformer's 12), each at its own position.
TEST(WanDiT, RopeGivesEachAxisItsShare) {
  TinyWan w;
  // latents [4, 2, 4, 6]: tokens (frame, row, col) over a 2 x 2 x 3 grid.
  auto packed = forward(*w.p.denoiser, {{"latents", seeded_latents({4, 2, 4, 6}, 1)}}, {"hidden_states", "img_ids"}, nullptr, "pack");
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  ASSERT_EQ(packed->at("hidden_states").shape, (Dims{12, 16}));
  Tensor t = Tensor::zeros(DType::F32, {1});
  t.f32()[0] = 500.0f;
  auto out = forward(*w.p.denoiser, {{"hidden_states", packed->at("hidden_states")}, {"img_ids", packed->at("img_ids")},
                                     {"timestep", t}, {"encoder_hidden_states", seeded_latents({5, 16}, 2)}},
                     {"rope.cos", "rope.sin", "sample"}, nullptr, "denoise");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->at("sample").shape, (Dims{12, 16}));
  // Token (frame 1, row 0, col 2) is 1 * 6 + 0 * 3 + 2 = 8.
  const float* cos = out->at("rope.cos").f32() + 8 * 12;
  const double f[2] = {1.0, 1.0 / 100.0};  // 10000^(-2k/4), k = 0, 1
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(cos[2 * k], std::cos(1 * f[k]), 1e-6) << "frame, pair " << k;
    EXPECT_NEAR(cos[2 * k + 1], std::cos(1 * f[k]), 1e-6);
    EXPECT_NEAR(cos[4 + 2 * k], 1.0, 1e-6) << "row 0";
    EXPECT_NEAR(cos[8 + 2 * k], std::cos(2 * f[k]), 1e-6) << "column, pair " << k;
  }
}

// Wan 2.2 A14B's two experts: transformer/ while the timestep is at least
// boundary_ratio x 1000, transformer_2/ after, each step mixed by its own
// guidance scale.
struct TwoExperts {
  TinyWan high{7}, low{8};  // `low`'s transformer is the second expert
  TempDir swapped_dir;
  std::string dir() const { return high.dir.path(); }
  // The high pipeline with the second expert as its one transformer.
  Result<Pipeline> swapped() const {
    namespace fs = std::filesystem;
    fs::copy(dir(), swapped_dir.path(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    fs::remove_all(fs::path(swapped_dir.path()) / "transformer");
    fs::copy(fs::path(low.dir.path()) / "transformer", fs::path(swapped_dir.path()) / "transformer", fs::copy_options::recursive);
    return load_pipeline(swapped_dir.path());
  }
  // The high pipeline's folder with `low`'s transformer as transformer_2/ and this boundary.
  Result<Pipeline> with_boundary(const nlohmann::json& ratio) const {
    namespace fs = std::filesystem;
    fs::remove_all(fs::path(dir()) / "transformer_2");
    fs::copy(fs::path(low.dir.path()) / "transformer", fs::path(dir()) / "transformer_2", fs::copy_options::recursive);
    nlohmann::json index = nlohmann::json::parse(testing::read_file(dir() + "/model_index.json"));
    index["transformer_2"] = {"diffusers", "WanTransformer3DModel"};
    index["boundary_ratio"] = ratio;
    std::ofstream(dir() + "/model_index.json") << index.dump(2);
    return load_pipeline(dir());
  }
};

Tensor video_of(Pipeline& p, float guidance, float guidance_2 = -1.0f) {
  ImagineOptions opt = prompt_options({4, 2, 4, 6}, guidance, 4);  // timesteps 999, 899, 749, 499
  opt.guidance_2 = guidance_2;
  auto r = imagine(p, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r->image : Tensor{};
}

bool same(const Tensor& a, const Tensor& b) { return a.shape == b.shape && std::memcmp(a.f32(), b.f32(), a.nbytes()) == 0; }

TEST(VideoPipeline, TwoExpertsSplitTheStepsAtTheBoundary) {
  TwoExperts e;
  auto second = e.swapped();
  ASSERT_TRUE(second.ok()) << second.error().message;
  const Tensor high_only = video_of(e.high.p, 5.0f), low_only = video_of(*second, 5.0f);
  ASSERT_FALSE(same(high_only, low_only));
  // Boundary 0: every step is the first expert's; 1: every one the second's.
  auto zero = e.with_boundary(0.0);
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_TRUE(same(video_of(*zero, 5.0f), high_only));
  EXPECT_TRUE(same(video_of(*zero, 5.0f, 2.0f), high_only));  // no step of the second: its scale unused
  auto one = e.with_boundary(1.0);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_TRUE(same(video_of(*one, 5.0f), low_only));
  EXPECT_FALSE(same(video_of(*one, 5.0f, 2.0f), low_only));  // every step the second's, at its own scale
  // 0.8: 999 and 899 the first's, 749 and 499 the second's.
  auto mixed = e.with_boundary(0.8);
  ASSERT_TRUE(mixed.ok()) << mixed.error().message;
  const Tensor both = video_of(*mixed, 5.0f);
  EXPECT_FALSE(same(both, high_only));
  EXPECT_FALSE(same(both, low_only));
  auto bad = e.with_boundary(1.5);
  ASSERT_FALSE(bad.ok());
  EXPECT_CONTAINS(bad.error().message, "boundary_ratio must be a number from 0 to 1");
  auto alone = e.with_boundary(nullptr);
  ASSERT_FALSE(alone.ok());
  EXPECT_CONTAINS(alone.error().message, "transformer_2 without boundary_ratio");
}

}  // namespace
}  // namespace arch
