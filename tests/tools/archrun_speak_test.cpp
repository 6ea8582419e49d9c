// archrun speak from the command line on the `vits` golden (a voice folder
// made of its config and weights plus a character vocabulary): text and ids
// to a WAV that libsndfile and sox read back at the expected length, the
// golden's own waveform through --ids, and the bad input the issue names
// (empty text, text with no character in the vocabulary, a rate <= 0, an
// output that cannot be written): each a clear error, a non-zero exit, and
// no WAV left behind.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/audio/audio_file.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/golden_checkpoints.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

std::string speak(const testing::TempDir& voice, const std::string& args) {
  return testing::archrun() + " speak " + voice.path() + " " + args;
}

TEST(ArchrunSpeak, TextToAWavOfTheFramesLength) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  testing::TempDir voice, out;
  testing::write_golden_voice(voice.path());
  auto r = run_tool(speak(voice, "-p \"Hello, World.\" -o " + out / "hello.wav --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  EXPECT_EQ(j["ids"], 27);  // "hello, world.": 13 characters, blanks around them
  const int64_t samples = j["samples"];
  EXPECT_EQ(samples, j["frames"].get<int64_t>() * 16);  // the vocoder's 4 x 4 upsampling
  auto a = read_audio(out / "hello.wav");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->sample_rate, 16000);
  EXPECT_EQ(int64_t(a->samples.size()), samples);
  // Without --json: the length and the real-time factor on one line.
  auto plain = run_tool(speak(voice, "-p hello -o " + out / "plain.wav"));
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.out.find("real-time factor"), std::string::npos) << plain.out;
}

TEST(ArchrunSpeak, ALongTextIsSpokenInPieces) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  testing::TempDir voice, out;
  testing::write_golden_voice(voice.path());
  std::string text;
  for (int k = 0; k < 20; ++k) text += "this is sentence " + std::to_string(k) + " of a long text. ";
  auto r = run_tool(speak(voice, "-p \"" + text + "\" -o " + out / "long.wav --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  EXPECT_GE(j["pieces"].get<int>(), 2);
  EXPECT_EQ(j["samples"].get<int64_t>(), j["frames"].get<int64_t>() * 16);
  EXPECT_EQ(j["durations"].size(), j["ids"].get<size_t>());
  auto a = read_audio(out / "long.wav");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(int64_t(a->samples.size()), j["samples"].get<int64_t>());
}

TEST(ArchrunSpeak, SoxReadsTheLengthBack) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  if (run_tool("sox --version").exit_code != 0) GTEST_SKIP() << "SKIPPED LOUDLY: sox is not installed (tools/setup.sh installs it)";
  testing::TempDir voice, out;
  testing::write_golden_voice(voice.path());
  auto r = run_tool(speak(voice, "-p \"a test\" -o " + out / "t.wav --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  auto s = run_tool("sox --i -s " + out / "t.wav");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  EXPECT_EQ(std::stoll(s.out), j["samples"].get<int64_t>());
  EXPECT_EQ(std::stoll(run_tool("sox --i -r " + out / "t.wav").out), 16000);
  EXPECT_EQ(std::stoll(run_tool("sox --i -b " + out / "t.wav").out), 16);
}

TEST(ArchrunSpeak, IdsGiveTheGoldensWaveform) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  testing::TempDir voice, out;
  testing::write_golden_voice(voice.path());
  const auto in = testing::read_json(testing::golden_dir("vits") + "/inputs.json");
  std::string ids;
  for (int id : in["input_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  auto r = run_tool(speak(voice, "--ids " + ids + " -o " + out / "g.wav"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto a = read_audio(out / "g.wav");
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto want = read_safetensors(testing::golden_dir("vits") + "/expected.safetensors");
  ASSERT_TRUE(want.ok());
  const Tensor& w = want->tensors.at("waveform");
  ASSERT_EQ(int64_t(a->samples.size()), w.numel());
  // 16-bit samples: written x 32767, read / 32768.
  for (int64_t i = 0; i < w.numel(); ++i) EXPECT_NEAR(a->samples[size_t(i)], w.f32()[i], 2.0 / 32767) << "sample " << i;
}

TEST(ArchrunSpeak, BadInputIsAClearErrorAndLeavesNoWav) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  testing::TempDir voice, out;
  testing::write_golden_voice(voice.path());
  struct Case { std::string args, says; };
  const Case cases[] = {
      {"-p \"\" -o " + out / "x.wav", "the text is empty"},
      {"-p \"%%%\" -o " + out / "x.wav", "no character of the text is in the voice's vocabulary"},
      {"-p hello --speaking-rate 0 -o " + out / "x.wav", "speaking_rate is 0"},
      {"-p hello --speaking-rate -1 -o " + out / "x.wav", "speaking_rate is -1"},
      {"-p hello --noise-scale -1 -o " + out / "x.wav", "noise_scale is -1"},
      {"-p hello --speaker 2 -o " + out / "x.wav", "this voice has 1 speaker"},
      {"-p hello -o " + out / "no/such/x.wav", out / "no/such/x.wav"},
      {"-p hello -o " + out.path(), out.path()},
      {"--ids 0,99,0 -o " + out / "x.wav", "id 99 is outside the vocabulary"},
  };
  for (const Case& c : cases) {
    auto r = run_tool(speak(voice, c.args));
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
  }
  EXPECT_TRUE(fs::is_empty(out.path())) << "a WAV (or a partial one) was left behind";
}

TEST(ArchrunSpeak, InfoSaysWhatTrainsTheModelOnly) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  auto r = run_tool(testing::archrun() + " info " + testing::golden_dir("vits"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("unused:  posterior_encoder.* (16 tensors): the posterior encoder (spectrogram to latents) "
                       "trains the model only"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("unused:  posterior_encoder.conv_pre.weight"), std::string::npos) << "listed one by one";
}

TEST(ArchrunSpeak, TheMmsTtsToySpeaksItsVocabulary) {
  // MMS-TTS's shapes with random weights and the toy's own vocabulary: the
  // README's path, text in, a WAV of 256 samples a frame out.
  testing::TempDir tmp;
  auto toy = run_tool(testing::archrun() + " toy --shape mms-tts --out " + tmp / "mms");
  ASSERT_EQ(toy.exit_code, 0) << toy.out;
  auto r = run_tool(testing::archrun() + " speak " + tmp / "mms" + " -p \"Hi there.\" -o " + tmp / "hi.wav --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  EXPECT_EQ(j["ids"], 17);  // "hi there": 8 characters kept ('.' is not in the toy's vocabulary)
  EXPECT_EQ(j["samples"].get<int64_t>(), j["frames"].get<int64_t>() * 256);
  EXPECT_GT(j["real_time_factor"].get<double>(), 0.0);
  auto a = read_audio(tmp / "hi.wav");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(int64_t(a->samples.size()), j["samples"].get<int64_t>());
}

}  // namespace
}  // namespace arch
