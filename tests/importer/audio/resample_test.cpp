#include "importer/audio/resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/limits.h"
#include "tests/test_files.h"

namespace arch {
namespace {

TEST(Resample, ConvertsTheLengthAndKeepsASineWave) {
  std::vector<float> in(44100);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(std::sin(2 * M_PI * 440.0 * double(i) / 44100.0));
  auto out = resample(in, 44100, 16000);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 16000u);
  // Away from the edges, the 440 Hz sine at 16 kHz.
  for (size_t i = 1000; i < 15000; i += 997) EXPECT_NEAR((*out)[i], std::sin(2 * M_PI * 440.0 * double(i) / 16000.0), 2e-3);
}

// Found by fuzz_audio_decode: a WAV claiming 16,793,216 Hz over 114 samples
// has less than one sample at 16 kHz; libsoxr read through the empty
// output's null buffer (SIGSEGV).
TEST(Resample, TooFewSamplesForOneGiveNoneWithoutCrashing) {
  std::vector<float> in(114, 0.25f);
  auto out = resample(in, 16793216, 16000);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->empty());
}

// Upsampling is bounded by audio_samples before the buffer is made.
TEST(Resample, AnUpsamplingPastTheSampleLimitIsRefused) {
  ASSERT_TRUE(set_limit("audio_samples", 1000).ok());
  std::vector<float> in(100, 0.f);
  auto out = resample(in, 1, 16000);
  ASSERT_TRUE(set_limit("audio_samples", int64_t(1) << 28).ok());
  ASSERT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error().message, "resample: the samples at 16000 Hz from 100 at 1 Hz (1600000) exceeds");
  EXPECT_CONTAINS(out.error().message, "'audio_samples'");
}

TEST(Resample, RatesMustBePositive) {
  std::vector<float> in(10, 0.f);
  auto out = resample(in, 0, 16000);
  ASSERT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error().message, "sample rates must be positive");
}

}  // namespace
}  // namespace arch
