// The audio endpoints: a voice's WAV is what speaking the text in-process
// gives; a transcription of an uploaded sound file is what transcribing it
// in-process gives; uploads that are not audio, and speech requests the
// voice cannot serve, are 400s.
#include "tests/serve/serve_fixture.h"

#include "audio/audio_file.h"
#include "audio/resample.h"
#include "runtime/model_text.h"
#include "runtime/speak.h"
#include "runtime/transcribe.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::RunningServer;
using json = nlohmann::json;

// The VITS golden's voice with a 40-character vocabulary (its vocab_size).
std::string make_voice() {
  static std::string dir = [] {
    fs::path d = fs::temp_directory_path() / ("serve_voice_" + std::to_string(getpid()));
    fs::create_directories(d);
    const std::string g = testing::golden_dir("vits");
    fs::create_symlink(g + "/config.json", d / "config.json");
    fs::create_symlink(g + "/model.safetensors", d / "model.safetensors");
    nlohmann::ordered_json vocab;
    const std::string chars = "_ abcdefghijklmnopqrstuvwxyz'-.,!?0123456789";
    for (size_t i = 0; i < 40; ++i) vocab[chars.substr(i, 1)] = i;
    std::ofstream(d / "vocab.json") << vocab.dump();
    std::ofstream(d / "tokenizer_config.json")
        << R"({"tokenizer_class": "VitsTokenizer", "add_blank": true, "normalize": true, "phonemize": false})";
    return d.string();
  }();
  return dir;
}

// The whisper golden beside a Whisper-style generation config and GPT-2's
// byte-level BPE (Whisper's, less its special tokens): <|startoftranscript|>
// 1, <|endoftext|> 2, <|en|> 3, <|de|> 4, transcribe 5, translate 6,
// <|notimestamps|> 7, timestamps from 8.
std::string make_speech_model() {
  static std::string dir = [] {
    fs::path d = fs::temp_directory_path() / ("serve_whisper_" + std::to_string(getpid()));
    fs::create_directories(d);
    const std::string g = testing::golden_dir("whisper");
    for (const char* f : {"config.json", "model.safetensors"}) fs::create_symlink(g + "/" + f, d / f);
    fs::create_symlink(testing::shared_dir() + "/tokenizers/gpt2/tokenizer.json", d / "tokenizer.json");
    std::ofstream(d / "generation_config.json")
        << R"({"decoder_start_token_id": 1, "eos_token_id": 2, "is_multilingual": true,
              "lang_to_id": {"<|en|>": 3, "<|de|>": 4}, "task_to_id": {"transcribe": 5, "translate": 6},
              "no_timestamps_token_id": 7, "max_initial_timestamp_index": 10, "suppress_tokens": [0],
              "begin_suppress_tokens": [9]})";
    return d.string();
  }();
  return dir;
}

std::vector<float> wav_samples(const std::string& bytes, int* rate) {
  fs::path p = fs::temp_directory_path() / ("serve_wav_" + std::to_string(getpid()) + ".wav");
  std::ofstream(p, std::ios::binary) << bytes;
  auto a = read_audio(p.string());
  fs::remove(p);
  EXPECT_TRUE(a.ok()) << a.error().message;
  if (!a.ok()) return {};
  *rate = a->sample_rate;
  return a->samples;
}

TEST(ServeAudio, SpeechIsTheVoicesWav) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  const std::string voice = make_voice();
  auto m = load_model(voice);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto tok = load_model_tokenizer(voice);
  ASSERT_TRUE(tok.ok());
  auto want = speak_text(**m, **tok, "Hello, World.");
  ASSERT_TRUE(want.ok()) << want.error().message;

  RunningServer s(testing::options(), *m, voice);
  auto c = s.client();
  auto r = c.Post("/v1/audio/speech", json{{"model", fs::path(voice).filename().string()}, {"input", "Hello, World."}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "audio/wav");
  EXPECT_EQ(r->body.substr(0, 4), "RIFF");
  int rate = 0;
  auto got = wav_samples(r->body, &rate);
  EXPECT_EQ(rate, want->sample_rate);
  ASSERT_EQ(got.size(), want->waveform.size());
  for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want->waveform[k], 1.0 / 16000) << "sample " << k;  // 16-bit PCM
  // Raw 16-bit PCM, and ids in place of text.
  auto pcm = c.Post("/v1/audio/speech", json{{"input", "Hello, World."}, {"response_format", "pcm"}}.dump(), "application/json");
  EXPECT_EQ(pcm->body.size(), 2 * want->waveform.size());
  auto ids = c.Post("/v1/audio/speech", json{{"input_ids", {0, 19, 0, 5, 0}}}.dump(), "application/json");
  EXPECT_EQ(ids->status, 200) << ids->body;
  // What the voice cannot serve.
  for (const json& bad : {json{{"input", ""}}, json{{"input", "###"}}, json{{"input", "hi"}, {"response_format", "mp3"}},
                          json{{"input", "hi"}, {"speed", 10}}, json{{"voice", "alloy"}}}) {
    auto b = c.Post("/v1/audio/speech", bad.dump(), "application/json");
    EXPECT_EQ(b->status, 400) << bad.dump() << ": " << b->body;
    EXPECT_TRUE(testing::body_of(b).contains("error")) << b->body;
  }
}

TEST(ServeAudio, ATranscriptionIsWhatTranscribingGives) {
  const std::string wav = testing::golden_dir("whisper_mel") + "/speech3.wav";
  ARCH_REQUIRE_SHARED(testing::golden_dir("whisper"));
  ARCH_REQUIRE_SHARED(wav);
  const std::string whisper = make_speech_model();
  auto m = load_model(whisper);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto a = read_audio(wav);
  ASSERT_TRUE(a.ok());
  auto samples = resample(a->samples, a->sample_rate, 16000);
  ASSERT_TRUE(samples.ok());
  TranscribeOptions opt;
  opt.timestamps = true;
  opt.language = "en";
  auto tok = load_model_tokenizer(whisper);
  ASSERT_TRUE(tok.ok());
  auto want = transcribe(**m, tok->get(), *samples, opt);
  ASSERT_TRUE(want.ok()) << want.error().message;

  RunningServer s(testing::options(), *m, whisper);
  auto c = s.client();
  std::ifstream in(wav, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string name = fs::path(whisper).filename().string();
  httplib::MultipartFormDataItems form = {{"file", bytes, "speech3.wav", "audio/wav"},
                                          {"model", name, "", ""},
                                          {"language", "en", "", ""},
                                          {"response_format", "verbose_json", "", ""}};
  auto r = c.Post("/v1/audio/transcriptions", form);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = testing::body_of(r);
  ASSERT_EQ(j["segments"].size(), want->segments.size()) << r->body;
  for (size_t k = 0; k < want->segments.size(); ++k) {
    EXPECT_EQ(j["segments"][k]["tokens"].get<std::vector<int32_t>>(), want->segments[k].tokens) << "segment " << k;
    EXPECT_DOUBLE_EQ(j["segments"][k]["start"].get<double>(), want->segments[k].start);
  }
  EXPECT_EQ(j["text"], want->text);
  EXPECT_EQ(j["language"], "en");
  // Plain json: the text alone, decoded without timestamps.
  opt.timestamps = false;
  auto plain = transcribe(**m, tok->get(), *samples, opt);
  ASSERT_TRUE(plain.ok());
  form.pop_back();
  EXPECT_EQ(testing::body_of(c.Post("/v1/audio/transcriptions", form)), (json{{"text", plain->text}}));
  EXPECT_NEAR(j["duration"].get<double>(), double(samples->size()) / 16000, 1e-9);
  // An upload that is not audio, a form without a file, a body that is no form.
  auto not_audio = c.Post("/v1/audio/transcriptions", httplib::MultipartFormDataItems{{"file", "hello, not audio", "notes.txt", "text/plain"}});
  EXPECT_EQ(not_audio->status, 400) << not_audio->body;
  EXPECT_NE(not_audio->body.find("not audio"), std::string::npos) << not_audio->body;
  auto no_file = c.Post("/v1/audio/transcriptions", httplib::MultipartFormDataItems{{"model", name, "", ""}});
  EXPECT_EQ(no_file->status, 400);
  EXPECT_EQ(c.Post("/v1/audio/transcriptions", "{}", "application/json")->status, 400);
  // A speech model serves no completions; a decoder no audio.
  EXPECT_EQ(c.Post("/v1/completions", json{{"prompt", {1}}}.dump(), "application/json")->status, 400);
}

}  // namespace
}  // namespace arch
