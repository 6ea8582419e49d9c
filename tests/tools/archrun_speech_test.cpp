// archrun mel and transcribe from the command line: the features file
// against the whisper_mel golden, a WAV transcribed end to end, and the
// bad input the issue names (not audio, empty, no samples, mel bins that
// disagree with the conv weights), each a clear error and a non-zero exit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

std::string mel_dir() { return testing::golden_dir("whisper_mel"); }

TEST(ArchrunMel, WritesTransformersFeatures) {
  ARCH_REQUIRE_SHARED(mel_dir());
  testing::TempDir tmp;
  auto r = run_tool(testing::archrun() + " mel " + mel_dir() + "/speech2.wav --bins 128 -o " + tmp / "f.safetensors" +
                    " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["audio_frames"], 290);
  auto got = read_safetensors(tmp / "f.safetensors");
  ASSERT_TRUE(got.ok()) << got.error().message;
  auto want = read_safetensors(mel_dir() + "/expected.safetensors");
  ASSERT_TRUE(want.ok());
  const Tensor& f = got->tensors.at("input_features");
  const Tensor& ref = want->tensors.at("speech2_mel128");
  ASSERT_EQ(f.shape, ref.shape);
  double worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) worst = std::max(worst, double(std::abs(f.f32()[i] - ref.f32()[i])));
  EXPECT_LE(worst, 1e-4);
  const Tensor& mask = got->tensors.at("attention_mask");
  EXPECT_EQ(mask.shape, (Dims{1, 3000}));
}

TEST(ArchrunTranscribe, AWavEndToEnd) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  auto r = run_tool(testing::archrun() + " transcribe " + testing::golden_dir("whisper") + " " + mel_dir() +
                    "/speech1_22050.wav --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt"], (std::vector<int>{1}));  // its generation_config: decoder_start_token_id alone
  EXPECT_EQ(j["windows"], 3);                     // 2.78 s in the tiny encoder's 1.28 s windows
  ASSERT_FALSE(j["segments"].empty());
  for (const auto& s : j["segments"]) {
    EXPECT_LE(s["start"].get<double>(), s["end"].get<double>());
    EXPECT_FALSE(s["tokens"].empty());
  }
  // Without --json: the ids, one line a segment, since it has no tokenizer.
  auto plain = run_tool(testing::archrun() + " transcribe " + testing::golden_dir("whisper") + " " + mel_dir() +
                        "/speech1.wav");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.out.find("no tokenizer: ids"), std::string::npos) << plain.out;
}

TEST(ArchrunSpeech, BadInputIsAClearErrorNamingTheFile) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  testing::TempDir tmp;
  std::ofstream(tmp / "notes.wav") << "not a sound file\n";
  std::ofstream(tmp / "empty.wav");
  for (const char* name : {"notes.wav", "empty.wav"}) {
    auto r = run_tool(testing::archrun() + " transcribe " + testing::golden_dir("whisper") + " " + tmp / name);
    EXPECT_NE(r.exit_code, 0) << name;
    EXPECT_NE(r.out.find(tmp / name), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
    auto m = run_tool(testing::archrun() + " mel " + tmp / name + " -o " + tmp / "x.safetensors");
    EXPECT_NE(m.exit_code, 0) << name;
    EXPECT_NE(m.out.find(tmp / name), std::string::npos) << m.out;
  }
  // A decoder prompt longer than the decoder's positions (max_target_positions 64).
  {
    auto stored = read_safetensors(testing::golden_dir("whisper") + "/inputs.safetensors");
    ASSERT_TRUE(stored.ok());
    Tensor ids = Tensor::zeros(DType::I64, {1, 70});
    for (int64_t i = 0; i < 70; ++i) static_cast<int64_t*>(ids.data)[i] = 1 + i;
    ASSERT_TRUE(write_safetensors(tmp / "long.safetensors",
                                  {{"input_features", stored->tensors.at("input_features")}, {"decoder_input_ids", ids}})
                    .ok());
    auto f = run_tool(testing::archrun() + " forward " + testing::golden_dir("whisper") + " --inputs " +
                      tmp / "long.safetensors" + " --out " + tmp / "o.safetensors");
    EXPECT_NE(f.exit_code, 0);
    EXPECT_NE(f.out.find("model.decoder.embed_positions.weight, positions"), std::string::npos) << f.out;
    EXPECT_NE(f.out.find("the table has 64 rows"), std::string::npos) << f.out;
  }
  // A config whose num_mel_bins disagrees with the conv weights.
  fs::create_directories(tmp / "bins");
  fs::create_symlink(testing::golden_dir("whisper") + "/model.safetensors", tmp / "bins/model.safetensors");
  auto cfg = testing::read_json(testing::golden_dir("whisper") + "/config.json");
  cfg["num_mel_bins"] = 128;
  std::ofstream(tmp / "bins/config.json") << cfg.dump();
  auto r = run_tool(testing::archrun() + " transcribe " + tmp / "bins" + " " + mel_dir() + "/speech1.wav");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("model.encoder.conv1.weight"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace arch
