// speak() over TTSStyle: the vits golden's voice with its knobs (rate,
// noise, seed) and its refusals; then a multi-speaker voice (MMS-TTS's toy
// spec given three speakers and the conditioning convs transformers has
// for them), whose speakers must sound different and each the same twice.
#include "engine/runtime/speak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/limits.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/shared_data.h"
#include "tests/test_files.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

std::vector<int32_t> golden_ids() {
  std::ifstream f(testing::golden_dir("vits") + "/inputs.json");
  return nlohmann::json::parse(f)["input_ids"].get<std::vector<int32_t>>();
}

TEST(Speak, TheGoldensVoiceAndItsKnobs) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  auto m = load_model(testing::golden_dir("vits"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_NE(speech_graph(**m), nullptr);
  const auto ids = golden_ids();
  auto plain = speak(**m, ids);  // the config's noise scales are 0: deterministic
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->sample_rate, 16000);
  EXPECT_EQ(plain->frames, 82);
  EXPECT_EQ(plain->waveform.size(), size_t(82 * 16));
  EXPECT_EQ(plain->durations.size(), ids.size());
  // Half the rate: every duration at least as long, the whole longer.
  SpeakOptions slow;
  slow.speaking_rate = 0.5f;
  auto s = speak(**m, ids, slow);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_GT(s->frames, plain->frames);
  for (size_t k = 0; k < ids.size(); ++k) EXPECT_GE(s->durations[k], plain->durations[k]);
  // Noise from a seed: the same twice, another seed another waveform.
  SpeakOptions noisy;
  noisy.noise_scale = 0.667f;
  noisy.noise_scale_duration = 0.8f;
  noisy.seed = 7;
  auto a = speak(**m, ids, noisy), b = speak(**m, ids, noisy);
  noisy.seed = 8;
  auto c = speak(**m, ids, noisy);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->waveform, b->waveform);
  EXPECT_NE(a->waveform, c->waveform);
  for (float v : a->waveform) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= 1.0f);
}

TEST(Speak, RefusalsNameTheFault) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  auto m = load_model(testing::golden_dir("vits"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto ids = golden_ids();
  EXPECT_NE(speak(**m, {}).error().message.find("no ids"), std::string::npos);
  EXPECT_NE(speak(**m, std::vector<int32_t>{0, 40, 0}).error().message.find("id 40 is outside the vocabulary"),
            std::string::npos);
  SpeakOptions o;
  o.speaking_rate = 0;
  EXPECT_EQ(speak(**m, ids, o).error().message, "speaking_rate is 0: it must be a number from 0.1 to 10");
  o = {};
  o.noise_scale = -1;
  EXPECT_EQ(speak(**m, ids, o).error().message, "noise_scale is -1: it must be a number from 0 to 10");
  o = {};
  o.speaker = 1;
  EXPECT_NE(speak(**m, ids, o).error().message.find("this voice has 1 speaker"), std::string::npos);
}

// Knobs that would make the frames (and the memory) grow past bounds, or
// the arithmetic Inf: a rate of 1e-30 is 1e30 times as many frames; ids
// past 'speech_ids' one run's memory without end.
TEST(Speak, KnobsAndIdsPastTheirBoundsAreRefusedBeforeTheRun) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  auto m = load_model(testing::golden_dir("vits"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto ids = golden_ids();
  SpeakOptions o;
  o.speaking_rate = 1e-30f;
  EXPECT_EQ(speak(**m, ids, o).error().message, "speaking_rate is 1e-30: it must be a number from 0.1 to 10");
  o.speaking_rate = 11;
  EXPECT_EQ(speak(**m, ids, o).error().message, "speaking_rate is 11: it must be a number from 0.1 to 10");
  o = {};
  o.noise_scale = INFINITY;
  EXPECT_EQ(speak(**m, ids, o).error().message, "noise_scale is inf: it must be a number from 0 to 10");
  o = {};
  o.noise_scale_duration = 1e38f;
  EXPECT_EQ(speak(**m, ids, o).error().message, "noise_scale_duration is 1e+38: it must be a number from 0 to 10");
  o = {};
  o.speaking_rate = 0.1f;
  o.noise_scale = 10;
  EXPECT_TRUE(speak(**m, ids, o).ok()) << "the bounds themselves are allowed";
  EXPECT_EQ(speak(**m, std::vector<int32_t>(5000, 1)).error().message,
            "the ids one run of the voice takes (5000) exceeds the limit 'speech_ids' (4096); if this is meant, raise "
            "it with --limit speech_ids=N or ARCHETYPE_LIMITS=speech_ids=N");
  // A long text never meets it: it is cut into pieces of at most 400 bytes,
  // each at most 801 ids (a blank between and around its characters).
  const auto pieces = speech_pieces(std::string(20000, 'a'));
  EXPECT_GE(pieces.size(), 50u);
  for (const auto& piece : pieces) EXPECT_LE(piece.size(), 400u);
  EXPECT_LE(2 * 400 + 1, limit("speech_ids"));
}

TEST(Speak, SpeakersOfAMultiSpeakerVoice) {
  // MMS-TTS's shapes with three speakers: transformers' VitsModel then has
  // embed_speaker and a 1x1 conditioning conv in the duration predictor,
  // each flow WaveNet (weight-normed) and the vocoder.
  std::ifstream in(std::string(ARCHETYPE_FAMILIES_DIR) + "/toys/mms-tts.json");
  auto spec = nlohmann::ordered_json::parse(in);
  const int E = 16, H = 192;
  spec["config"]["num_speakers"] = 3;
  spec["config"]["speaker_embedding_size"] = E;
  auto& t = spec["tensors"];
  t.push_back(nlohmann::ordered_json::array({"embed_speaker.weight", {3, E}}));
  t.push_back(nlohmann::ordered_json::array({"duration_predictor.cond.weight", {H, E, 1}}));
  t.push_back(nlohmann::ordered_json::array({"duration_predictor.cond.bias", {H}}));
  t.push_back(nlohmann::ordered_json::array({"flow.flows.{f<4}.wavenet.cond_layer.weight_g", {2 * H * 4, 1, 1}, 1.0}));
  t.push_back(nlohmann::ordered_json::array({"flow.flows.{f<4}.wavenet.cond_layer.weight_v", {2 * H * 4, E, 1}}));
  t.push_back(nlohmann::ordered_json::array({"flow.flows.{f<4}.wavenet.cond_layer.bias", {2 * H * 4}}));
  t.push_back(nlohmann::ordered_json::array({"decoder.cond.weight", {512, E, 1}}));
  t.push_back(nlohmann::ordered_json::array({"decoder.cond.bias", {512}}));
  testing::TempDir tmp;
  std::ofstream(tmp / "spec.json") << spec.dump();
  ASSERT_TRUE(write_toy_from_spec(tmp / "spec.json", tmp / "voice", 3).ok());
  auto m = load_model(tmp / "voice");
  ASSERT_TRUE(m.ok()) << m.error().message;
  for (const char* used : {"embed_speaker.weight", "duration_predictor.cond.weight", "decoder.cond.weight",
                           "flow.flows.0.wavenet.cond_layer.weight_v"})
    EXPECT_EQ(std::find((*m)->unused_tensors.begin(), (*m)->unused_tensors.end(), used), (*m)->unused_tensors.end())
        << used << " is not read";
  const std::vector<int32_t> ids = {0, 8, 0, 9, 0};
  std::vector<std::vector<float>> voices;
  for (int speaker : {0, 2, 2}) {
    SpeakOptions o;
    o.speaker = speaker;
    o.noise_scale = 0;
    o.noise_scale_duration = 0;
    auto sp = speak(**m, ids, o);
    ASSERT_TRUE(sp.ok()) << sp.error().message;
    voices.push_back(sp->waveform);
  }
  EXPECT_NE(voices[0], voices[1]);
  EXPECT_EQ(voices[1], voices[2]);
  SpeakOptions none;
  none.speaker = 3;
  EXPECT_NE(speak(**m, ids, none).error().message.find("this voice has 3 speakers (0 .. 2)"), std::string::npos);
}

TEST(Speak, LongTextIsCutAfterItsSentences) {
  // Short text: whole, whitespace and all.
  EXPECT_EQ(speech_pieces(" Hi. There. ", 40), (std::vector<std::string>{" Hi. There. "}));
  // Longer: after the last sentence end that fits, the spaces dropped.
  EXPECT_EQ(speech_pieces("One two. Three four! Five six seven.", 20),
            (std::vector<std::string>{"One two. Three four!", "Five six seven."}));
  // A sentence longer than the limit: at its last space within it.
  EXPECT_EQ(speech_pieces("aaaa bbbb cccc dddd", 10), (std::vector<std::string>{"aaaa bbbb", "cccc dddd"}));
  // No space at all: at the limit, never inside a UTF-8 character.
  const std::string e = "\xc3\xa9\xc3\xa9\xc3\xa9";  // three e-acute, 6 bytes
  EXPECT_EQ(speech_pieces(e, 3), (std::vector<std::string>{"\xc3\xa9", "\xc3\xa9", "\xc3\xa9"}));
  // Every byte of the text is in some piece, in order (spaces between aside).
  std::string long_text;
  for (int k = 0; k < 50; ++k) long_text += "Sentence number " + std::to_string(k) + " ends here. ";
  std::string joined;
  for (const auto& p : speech_pieces(long_text, 120)) {
    EXPECT_LE(p.size(), 120u);
    joined += p + " ";
  }
  EXPECT_EQ(joined, long_text);
}

}  // namespace
}  // namespace arch
