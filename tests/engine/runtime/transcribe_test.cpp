// Transcription's decoding rules on the whisper golden's tiny checkpoint
// (random weights: what it hears is noise, so the tests check the rules,
// not the words), given a generation_config.json in Whisper's form: the
// prompt, language detection, the timestamp rules (segments in pairs,
// rising, the first no later than max_initial_timestamp_index), windows
// of the encoder's length, beam search, suppressed tokens, and the text
// through a byte-level BPE tokenizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/audio/audio_file.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "engine/runtime/dispatch.h"
#include "importer/checkpoint/safetensors.h"
#include "engine/runtime/beam_search.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/transcribe.h"
#include "tests/golden_checkpoints.h"
#include "tests/shared_data.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

// The golden whisper checkpoint beside a Whisper-style generation config:
// <|startoftranscript|> 1, <|endoftext|> 2, <|en|> 3, <|de|> 4,
// transcribe 5, translate 6, <|notimestamps|> 7, timestamps from 8.
struct SpeechModel {
  fs::path dir;
  std::shared_ptr<Model> model;
  explicit SpeechModel(const std::string& extra = "", bool tokenizer = false) {
    dir = fs::temp_directory_path() / ("speech_model_" + std::to_string(getpid()) + "_" + std::to_string(++count));
    fs::create_directories(dir);
    testing::write_golden_whisper(dir, extra, tokenizer);
    auto m = load_model(dir.string());
    EXPECT_TRUE(m.ok()) << m.error().message;
    if (m.ok()) model = *m;
  }
  ~SpeechModel() { fs::remove_all(dir); }
  static inline int count = 0;
};

std::vector<float> speech(const char* name = "speech3") {
  auto a = read_audio(testing::golden_dir("whisper_mel") + "/" + name + ".wav");
  EXPECT_TRUE(a.ok()) << a.error().message;
  return a.ok() ? a->samples : std::vector<float>{};
}

TEST(Transcribe, ThePromptAndTheWindowsOfTheEncodersLength) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  SpeechModel sm;
  ASSERT_TRUE(sm.model);
  TranscribeOptions opt;
  opt.language = "de";
  opt.task = "translate";
  auto r = transcribe(*sm.model, nullptr, speech(), opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, (std::vector<int32_t>{1, 4, 6, 7}));
  EXPECT_EQ(r->language, "de");
  // 128 frames of 160 samples: 1.28 s windows; speech3 is 4.003 s.
  EXPECT_EQ(r->windows, 4);
  ASSERT_FALSE(r->segments.empty());
  EXPECT_DOUBLE_EQ(r->segments.front().start, 0.0);
  for (const auto& s : r->segments) {
    EXPECT_LE(s.end, 4.003 + 1e-9);
    for (int32_t t : s.tokens) {
      EXPECT_NE(t, 0);  // suppressed
      EXPECT_NE(t, 2);  // the end is not text
    }
  }
}

TEST(Transcribe, DetectsTheLanguageOfAMultilingualCheckpoint) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  SpeechModel sm;
  ASSERT_TRUE(sm.model);
  auto r = transcribe(*sm.model, nullptr, speech(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->language == "en" || r->language == "de") << r->language;
  EXPECT_EQ(r->prompt[0], 1);
  EXPECT_EQ(r->prompt[1], r->language == "en" ? 3 : 4);
  EXPECT_EQ(r->prompt[2], 5);
}

TEST(Transcribe, TimestampsComeInRisingPairs) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  SpeechModel sm;
  ASSERT_TRUE(sm.model);
  TranscribeOptions opt;
  opt.language = "en";
  opt.timestamps = true;
  opt.temperatures = {0.0f};
  auto r = transcribe(*sm.model, nullptr, speech("speech1"), opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, (std::vector<int32_t>{1, 3, 5}));  // no <|notimestamps|>
  ASSERT_FALSE(r->segments.empty());
  double last_end = 0;
  for (const auto& s : r->segments) {
    EXPECT_GE(s.start, last_end - 1e-9);
    EXPECT_GE(s.end, s.start);
    last_end = s.end;
    for (int32_t t : s.tokens) EXPECT_LT(t, 8) << "a timestamp among the text";
  }
  // The first timestamp at most 10 steps (0.2 s) in.
  EXPECT_LE(r->segments.front().start, 0.2 + 1e-9);
}

TEST(BeamSearch, OneBeamIsGreedyAndWiderBeamsReplayHistories) {
  // A beam of one is greedy decoding, token for token. Three beams over
  // three sessions end with a hypothesis whose score the search reports as
  // its own: replaying its tokens greedily-forced in a fresh session gives
  // the same sum of log-probabilities (the rewound and replayed sessions
  // held the right histories).
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  auto m = load_model(testing::golden_dir("whisper"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto feats = read_safetensors(testing::golden_dir("whisper") + "/inputs.safetensors");
  ASSERT_TRUE(feats.ok());
  std::vector<std::unique_ptr<Session>> sessions;
  for (int b = 0; b < 3; ++b) sessions.push_back(std::make_unique<Session>(**m, 64));
  auto state = sessions[0]->encode({{"input_features", feats->tensors.at("input_features")}});
  ASSERT_TRUE(state.ok()) << state.error().message;
  const std::vector<int32_t> prompt = {1};
  const LogitsProcessor none = [](std::span<float>, const std::vector<int32_t>&) {};
  auto one = beam_search(sessions, *state, prompt, 1, 12, 2, none);
  ASSERT_TRUE(one.ok()) << one.error().message;
  Session g(**m, 64);
  g.begin(*state);
  GenerateOptions opt;
  opt.max_new_tokens = 12;
  opt.stop_ids = {2};
  auto greedy = generate(g, prompt, opt);
  ASSERT_TRUE(greedy.ok()) << greedy.error().message;
  EXPECT_EQ(one->tokens, greedy->tokens);

  auto three = beam_search(sessions, *state, prompt, 3, 12, 2, none);
  ASSERT_TRUE(three.ok()) << three.error().message;
  ASSERT_FALSE(three->tokens.empty());
  Session check(**m, 64);
  check.begin(*state);
  double sum = 0;
  std::vector<int32_t> next = prompt;
  for (int32_t t : three->tokens) {
    auto out = check.step(next, {"logits"}, true);
    ASSERT_TRUE(out.ok()) << out.error().message;
    const Tensor& l = out->at("logits");
    const float* row = l.f32() + l.numel() - l.dim(-1);
    float top = -INFINITY;
    for (int64_t i = 0; i < l.dim(-1); ++i) top = std::max(top, row[i]);
    double z = 0;
    for (int64_t i = 0; i < l.dim(-1); ++i) z += std::exp(double(row[i]) - top);
    sum += double(row[t]) - top - std::log(z);
    next = {t};
  }
  EXPECT_NEAR(three->sum_logprob, sum, 1e-3 * std::abs(sum) + 1e-4);
}

TEST(Transcribe, TextThroughTheTokenizer) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  SpeechModel sm("", /*tokenizer=*/true);
  ASSERT_TRUE(sm.model);
  auto tok = load_model_tokenizer(sm.dir.string());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  TranscribeOptions opt;
  opt.language = "en";
  opt.temperatures = {0.0f};
  auto r = transcribe(*sm.model, tok->get(), speech("speech1"), opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->segments.empty());
  const Segment& s = r->segments.front();
  EXPECT_EQ(s.text, (*tok)->decode(s.tokens, true));
  EXPECT_FALSE(s.text.empty());
  EXPECT_GT(s.compression_ratio, 0.0f);
}

TEST(Transcribe, RefusesWhatTheCheckpointCannotDo) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  SpeechModel sm;
  ASSERT_TRUE(sm.model);
  TranscribeOptions opt;
  opt.language = "xx";
  auto r = transcribe(*sm.model, nullptr, speech(), opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("language 'xx'"), std::string::npos) << r.error().message;
  // The golden's own config names no timestamps token.
  auto plain = load_model(testing::golden_dir("whisper"));
  ASSERT_TRUE(plain.ok());
  TranscribeOptions ts;
  ts.timestamps = true;
  r = transcribe(**plain, nullptr, speech(), ts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no_timestamps_token_id"), std::string::npos) << r.error().message;
  EXPECT_FALSE(transcribe(**plain, nullptr, {}, {}).ok());
}

TEST(Transcribe, WhisperBaseShapesWithAWhisperStyleTokenizer) {
  // whisper-base's shapes (random weights) and a tokenizer in Whisper's
  // form: GPT-2's byte-level BPE, then the special tokens from 50257 and
  // 1501 timestamps from 50364. One 30 s window for 2.8 s of speech; the
  // text leaves the special tokens out; <|nocaptions|> is the no-speech
  // token.
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper_mel"));
  fs::path dir = fs::temp_directory_path() / ("whisper_base_" + std::to_string(getpid()));
  ASSERT_TRUE(write_toy_from_spec(families_dir() + "/toys/whisper-base.json", dir.string(), 3).ok());
  std::ifstream in(testing::shared_dir() + "/tokenizers/gpt2/tokenizer.json");
  nlohmann::json tj = nlohmann::json::parse(in);
  auto special = [&](int id, const std::string& content) {
    tj["added_tokens"].push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                  {"rstrip", false}, {"normalized", false}, {"special", true}});
  };
  special(50257, "<|endoftranscript|>");
  special(50258, "<|startoftranscript|>");
  for (int k = 0; k < 99; ++k) special(50259 + k, k == 0 ? "<|en|>" : k == 2 ? "<|de|>" : "<|lang" + std::to_string(k) + "|>");
  special(50358, "<|translate|>");
  special(50359, "<|transcribe|>");
  special(50360, "<|startoflm|>");
  special(50361, "<|startofprev|>");
  special(50362, "<|nocaptions|>");
  special(50363, "<|notimestamps|>");
  for (int k = 0; k <= 1500; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "<|%.2f|>", 0.02 * k);
    special(50364 + k, buf);
  }
  std::ofstream(dir / "tokenizer.json") << tj.dump();
  auto m = load_model(dir.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto tok = load_model_tokenizer(dir.string());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ((*tok)->token_to_id("<|nocaptions|>"), std::optional<int32_t>(50362));
  TranscribeOptions opt;
  opt.language = "en";
  opt.timestamps = true;
  opt.temperatures = {0.0f};
  opt.max_new_tokens = 24;
  auto r = transcribe(**m, tok->get(), speech("speech1"), opt);
  fs::remove_all(dir);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, (std::vector<int32_t>{50258, 50259, 50359}));
  EXPECT_EQ(r->windows, 1);
  for (const auto& s : r->segments) {
    EXPECT_EQ(s.text.find("<|"), std::string::npos) << s.text;
    EXPECT_GE(s.start, 0.0);
    EXPECT_LE(s.end, 2.79);
    // Random weights are sure of their argmax: the probability may round to 0.
    EXPECT_GE(s.no_speech_prob, 0.0f);
    EXPECT_LE(s.no_speech_prob, 1.0f);
    for (int32_t t : s.tokens) EXPECT_LT(t, 50364) << "a timestamp among the text";
  }
}

TEST(Transcribe, CompressionRatioRisesWithRepetition) {
  EXPECT_LT(compression_ratio("The quick brown fox jumps over the lazy dog."), 1.2);
  std::string loop;
  for (int i = 0; i < 40; ++i) loop += "thank you ";
  EXPECT_GT(compression_ratio(loop), 2.4);
}

}  // namespace
}  // namespace arch
