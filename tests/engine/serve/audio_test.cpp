// The audio endpoints: a voice's WAV is what speaking the text in-process
// gives; a transcription of an uploaded sound file is what transcribing it
// in-process gives; uploads that are not audio, and speech requests the
// voice cannot serve, are 400s.
#include "tests/engine/serve/serve_fixture.h"

#include <filesystem>

#include "tests/golden_checkpoints.h"

#include "importer/audio/audio_file.h"
#include "importer/audio/resample.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/speak.h"
#include "engine/runtime/transcribe.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::RunningServer;
using json = nlohmann::json;

// The goldens as a voice and a Whisper with its tokenizer, each written once
// into a folder removed when the test program ends.
std::string scratch_checkpoint(const char* name, void (*write)(const fs::path&)) {
  static testing::TempDir scratch;
  fs::path d = scratch / name;
  if (!fs::exists(d)) {
    fs::create_directories(d);
    write(d);
  }
  return d.string();
}
std::string make_voice() { return scratch_checkpoint("voice", testing::write_golden_voice); }
std::string make_speech_model() {
  return scratch_checkpoint("whisper", [](const fs::path& d) { testing::write_golden_whisper(d, "", true); });
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
                          json{{"input", "hi"}, {"speed", 10}}, json{{"voice", "alloy"}},
                          json{{"input", "hi"}, {"response_format", 5}}, json{{"input", "hi"}, {"model", 7}}}) {
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
