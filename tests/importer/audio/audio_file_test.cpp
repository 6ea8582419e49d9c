// read_audio on files that are not what their headers say: a data chunk
// claiming more than the file holds is read as far as it goes, with a
// warning giving both lengths; a float WAV holding NaN or infinity is
// refused, naming the sample.
#include "importer/audio/audio_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "importer/audio/wav_write.h"
#include "tests/test_files.h"

namespace arch {
namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void put_u32(std::string& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + size_t(i)] = char((v >> (8 * i)) & 0xff);
}

// A mono 32-bit float WAV (format 3) of `samples` at 16 kHz.
std::string float_wav(const std::vector<float>& samples) {
  std::string b = "RIFF....WAVEfmt ";
  auto u32 = [&](uint32_t v) { b.append(4, '\0'), put_u32(b, b.size() - 4, v); };
  auto u16 = [&](uint16_t v) { b += char(v & 0xff), b += char(v >> 8); };
  u32(16), u16(3), u16(1), u32(16000), u32(16000 * 4), u16(4), u16(32);
  b += "data";
  u32(uint32_t(samples.size() * 4));
  for (float f : samples) b.append(reinterpret_cast<const char*>(&f), 4);
  put_u32(b, 4, uint32_t(b.size() - 8));
  return b;
}

TEST(ReadAudio, AHeaderClaimingMoreDataThanTheFileHoldsIsReadWithAWarning) {
  testing::TempDir dir;
  const std::string path = dir / "lie.wav";
  ASSERT_TRUE(write_wav(path, std::vector<float>(1000, 0.25f), 16000).ok());
  std::string b = bytes_of(path);
  const size_t data = b.find("data");
  ASSERT_NE(data, std::string::npos);
  put_u32(b, data + 4, 200000);  // claims 100,000 samples
  put_u32(b, 4, uint32_t(data + 8 + 200000 - 8));
  std::ofstream(path, std::ios::binary) << b;
  auto a = read_audio(path);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->samples.size(), 1000u);
  EXPECT_NEAR(a->samples[999], 0.25f, 1e-4);
  EXPECT_EQ(a->warning, path + ": the header claims 200000 bytes of samples, the file holds 2000: read as far as they go");

  ASSERT_TRUE(write_wav(path, std::vector<float>(1000, 0.25f), 16000).ok());
  auto honest = read_audio(path);
  ASSERT_TRUE(honest.ok());
  EXPECT_EQ(honest->warning, "");
}

TEST(ReadAudio, NanAndInfiniteSamplesAreRefusedNamingTheFirst) {
  testing::TempDir dir;
  const std::string path = dir / "f.wav";
  std::vector<float> s(100, 0.1f);
  std::ofstream(path, std::ios::binary) << float_wav(s);
  auto ok = read_audio(path);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_NEAR(ok->samples[50], 0.1f, 1e-6);

  s[37] = std::numeric_limits<float>::quiet_NaN();
  std::ofstream(path, std::ios::binary) << float_wav(s);
  auto nan = read_audio(path);
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.error().message, path + ": sample 37 (channel 0) is NaN: not a sound");

  s[37] = 0.1f;
  s[90] = -std::numeric_limits<float>::infinity();
  std::ofstream(path, std::ios::binary) << float_wav(s);
  auto inf = read_audio(path);
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.error().message, path + ": sample 90 (channel 0) is infinite: not a sound");
}

}  // namespace
}  // namespace arch
