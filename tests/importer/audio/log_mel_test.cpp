// The audio front end against ../shared/golden/whisper_mel: transformers'
// WhisperFeatureExtractor on real speech. From the 16 kHz WAVs every
// element within the golden's 1e-4 (absolute); from the 22050 Hz original
// through our resampler, its loose check (over speech frames and mel bins
// below 7 kHz: mean |diff| <= 0.005, 99th percentile <= 0.1). Then the
// reader's refusals.
#include <gtest/gtest.h>

#include "engine/core/limits.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "importer/audio/audio_file.h"
#include "importer/audio/log_mel.h"
#include "importer/audio/resample.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/shared_data.h"

namespace arch {
namespace {

std::string mel_dir() { return testing::golden_dir("whisper_mel"); }

struct Case {
  const char* name;
  int bins;
};

class WhisperMelGolden : public ::testing::TestWithParam<Case> {};

TEST_P(WhisperMelGolden, EveryElementWithinTheGoldensTolerance) {
  ARCH_REQUIRE_SHARED(mel_dir());
  const Case c = GetParam();
  auto audio = read_audio(mel_dir() + "/" + c.name + ".wav");
  ASSERT_TRUE(audio.ok()) << audio.error().message;
  EXPECT_EQ(audio->sample_rate, 16000);
  auto mel = whisper_log_mel(audio->samples, {.bins = c.bins});
  ASSERT_TRUE(mel.ok()) << mel.error().message;
  auto expected = read_safetensors(mel_dir() + "/expected.safetensors");
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  const Tensor& want = expected->tensors.at(std::string(c.name) + "_mel" + std::to_string(c.bins));
  ASSERT_EQ(want.shape, (Dims{1, c.bins, 3000}));
  ASSERT_EQ(mel->features.shape, (Dims{c.bins, 3000}));
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, double(std::abs(mel->features.f32()[i] - want.f32()[i])));
  EXPECT_LE(worst, 1e-4) << c.name << " " << c.bins << " bins";
  const Tensor& mask = expected->tensors.at(std::string(c.name) + "_attention_mask");
  for (int64_t t = 0; t < 3000; ++t) ASSERT_EQ(mel->attention_mask.i32()[t], mask.i32()[t]) << "frame " << t;
}

INSTANTIATE_TEST_SUITE_P(Speech, WhisperMelGolden,
                         ::testing::Values(Case{"speech1", 80}, Case{"speech1", 128}, Case{"speech2", 80},
                                           Case{"speech2", 128}, Case{"speech3", 80}, Case{"speech3", 128}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name) + "_" + std::to_string(info.param.bins);
                         });

TEST(WhisperMel, From22050HzThroughTheResamplerPassesTheLooseCheck) {
  ARCH_REQUIRE_SHARED(mel_dir());
  auto audio = read_audio(mel_dir() + "/speech1_22050.wav");
  ASSERT_TRUE(audio.ok()) << audio.error().message;
  ASSERT_EQ(audio->sample_rate, 22050);
  auto at16k = resample(audio->samples, audio->sample_rate, 16000);
  ASSERT_TRUE(at16k.ok()) << at16k.error().message;
  EXPECT_NEAR(double(at16k->size()), 44555.0, 2.0);  // sox made 44555
  auto expected = read_safetensors(mel_dir() + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  for (auto [bins, below_7k] : {std::pair{80, 77}, std::pair{128, 123}}) {
    auto mel = whisper_log_mel(*at16k, {.bins = bins});
    ASSERT_TRUE(mel.ok()) << mel.error().message;
    const Tensor& want = expected->tensors.at("speech1_mel" + std::to_string(bins));
    std::vector<double> d;
    for (int m = 0; m < below_7k; ++m)
      for (int t = 0; t < 279; ++t)
        d.push_back(std::abs(double(mel->features.f32()[m * 3000 + t]) - want.f32()[m * 3000 + t]));
    double mean = 0;
    for (double x : d) mean += x / double(d.size());
    std::sort(d.begin(), d.end());
    const double p99 = d[size_t(0.99 * double(d.size() - 1))];
    EXPECT_LE(mean, 0.005) << bins << " bins";
    EXPECT_LE(p99, 0.1) << bins << " bins";
  }
}

TEST(WhisperMel, SlaneyFiltersHaveUnitAreaTriangles) {
  // Every filter is non-zero somewhere, and its peak bin lies below the
  // next filter's.
  auto f = slaney_mel_filters(80, 400, 16000, 0.0, 8000.0);
  ASSERT_EQ(f.size(), 201u * 80u);
  int last_peak = -1;
  for (int m = 0; m < 80; ++m) {
    int peak = 0;
    for (int k = 0; k < 201; ++k)
      if (f[size_t(k) * 80 + size_t(m)] > f[size_t(peak) * 80 + size_t(m)]) peak = k;
    EXPECT_GT(f[size_t(peak) * 80 + size_t(m)], 0.0) << m;
    EXPECT_GE(peak, last_peak) << m;
    last_peak = peak;
  }
}

TEST(WhisperMel, AWindowPastTheAudioIsAllFloorAndMasked) {
  std::vector<float> tone(32000);
  for (size_t i = 0; i < tone.size(); ++i) tone[i] = 0.5f * float(std::sin(2 * M_PI * 440.0 * double(i) / 16000.0));
  auto mel = whisper_log_mel(tone, {}, 16000);  // from 1 s: 1 s of tone, then zeros
  ASSERT_TRUE(mel.ok()) << mel.error().message;
  int ones = 0;
  for (int t = 0; t < 3000; ++t) ones += mel->attention_mask.i32()[t];
  EXPECT_EQ(ones, 100);
}

// ---- the reader's refusals --------------------------------------------------

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& name, const std::string& bytes)
      : path(std::filesystem::temp_directory_path() / ("arch_audio_" + name)) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

// A PCM WAV header for `frames` int16 samples (no data follows when 0).
std::string wav_header(int sample_rate, int channels, int frames) {
  auto u32 = [](uint32_t v) { return std::string{char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; };
  auto u16 = [](uint16_t v) { return std::string{char(v), char(v >> 8)}; };
  const uint32_t data = uint32_t(frames * channels * 2);
  return "RIFF" + u32(36 + data) + "WAVEfmt " + u32(16) + u16(1) + u16(uint16_t(channels)) + u32(uint32_t(sample_rate)) +
         u32(uint32_t(sample_rate * channels * 2)) + u16(uint16_t(channels * 2)) + u16(16) + "data" + u32(data) +
         std::string(data, '\0');
}

TEST(ReadAudio, ANonAudioFileIsNamed) {
  TempFile f("text.wav", "this is not a sound file at all, just some words\n");
  auto r = read_audio(f.path.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind(f.path.string() + ": not a sound file", 0), 0u) << r.error().message;
}

TEST(ReadAudio, EmptyAndZeroLengthFilesAreRefused) {
  TempFile empty("empty.wav", "");
  auto r = read_audio(empty.path.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(empty.path.string()), std::string::npos);
  TempFile silent("zero.wav", wav_header(16000, 1, 0));
  r = read_audio(silent.path.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(silent.path.string()), std::string::npos) << r.error().message;
}

TEST(ReadAudio, ASampleRateOfZeroIsRefused) {
  TempFile f("rate0.wav", wav_header(0, 1, 100));
  auto r = read_audio(f.path.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(f.path.string()), std::string::npos) << r.error().message;
}

TEST(ReadAudio, StereoIsMixedDown) {
  // Two channels: left 0.5, right -0.25 -> 0.125.
  std::string wav = wav_header(8000, 2, 4);
  for (int i = 0; i < 4; ++i) {
    int16_t l = 16384, r = -8192;
    std::memcpy(&wav[44 + size_t(i) * 4], &l, 2);
    std::memcpy(&wav[44 + size_t(i) * 4 + 2], &r, 2);
  }
  TempFile f("stereo.wav", wav);
  auto a = read_audio(f.path.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->channels, 2);
  ASSERT_EQ(a->samples.size(), 4u);
  for (float s : a->samples) EXPECT_FLOAT_EQ(s, 0.125f);
  auto up = resample(a->samples, 8000, 16000);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->size(), 8u);
}

// The samples a file claims are held to the named limit before a buffer is
// made for them.
TEST(ReadAudio, SamplesPastTheirLimitAreRefused) {
  TempFile f("long.wav", wav_header(16000, 2, 1000));
  ASSERT_TRUE(set_limit("audio_samples", 1500).ok());
  auto r = read_audio(f.path.string());
  ASSERT_TRUE(set_limit("audio_samples", int64_t(1) << 28).ok());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, f.path.string() + ": the file's samples (2000) exceeds the limit 'audio_samples' (1500); "
                               "if this is meant, raise it with --limit audio_samples=N or ARCHETYPE_LIMITS=audio_samples=N");
  EXPECT_TRUE(read_audio(f.path.string()).ok());
}

}  // namespace
}  // namespace arch
