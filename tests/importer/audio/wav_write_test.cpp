// write_wav: 16-bit PCM read back through the reader at its rate and length,
// clipped past [-1, 1]; a folder that does not exist is an error naming
// the path, and no file (partial or final) is left.
#include <gtest/gtest.h>

#include <filesystem>

#include "importer/audio/audio_file.h"
#include "importer/audio/wav_write.h"
#include "tests/test_files.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

TEST(WavWrite, ReadsBackAsWritten) {
  testing::TempDir dir;
  const std::string path = dir / "out.wav";
  std::vector<float> s = {0.0f, 0.5f, -0.5f, 2.0f, -2.0f};
  ASSERT_TRUE(write_wav(path, s, 22050).ok());
  auto a = read_audio(path);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->sample_rate, 22050);
  ASSERT_EQ(a->samples.size(), s.size());
  const float q = 1.0f / 32767;
  EXPECT_NEAR(a->samples[1], 0.5f, q);
  EXPECT_NEAR(a->samples[2], -0.5f, q);
  EXPECT_NEAR(a->samples[3], 1.0f, q);   // clipped
  EXPECT_NEAR(a->samples[4], -1.0f, q);
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "out.wav") << "a leftover: " << e.path();
}

TEST(WavWrite, AMissingFolderIsNamed) {
  testing::TempDir dir;
  const std::string path = dir / "no/such/out.wav";
  std::vector<float> s(100, 0.1f);
  auto st = write_wav(path, s, 16000);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(path), std::string::npos) << st.error().message;
  EXPECT_TRUE(fs::is_empty(dir.path()));
  EXPECT_FALSE(write_wav(dir.path(), s, 16000).ok()) << "a folder is no file to write";
}

}  // namespace
}  // namespace arch
