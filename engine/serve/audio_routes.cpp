// POST /v1/audio/speech (a voice: text or ids to a WAV) and POST
// /v1/audio/transcriptions (a speech encoder-decoder: a multipart upload of
// any sound file libsndfile reads to text), one request at a time each.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <httplib.h>

#include "importer/audio/audio_file.h"
#include "importer/audio/resample.h"
#include "importer/audio/wav_write.h"
#include "engine/runtime/speak.h"
#include "engine/runtime/transcribe.h"
#include "engine/serve/completion_request.h"
#include "engine/serve/http_reply.h"
#include "engine/serve/scratch_file.h"
#include "engine/serve/server.h"

namespace arch::serve {

void Server::speech(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json_request(req);
  if (auto* e = std::get_if<ApiError>(&parsed)) return reply_error(res, *e);
  const nlohmann::json& j = std::get<nlohmann::json>(parsed);
  if (!speaks_) return reply_error(res, bad_request("model '" + name_ + "' is not a voice: it serves " + serves(), "model"));
  auto field = string_field(j, "response_format", "wav");
  if (auto* e = std::get_if<ApiError>(&field)) return reply_error(res, *e);
  const std::string& format = std::get<std::string>(field);
  if (format != "wav" && format != "pcm")
    return reply_error(res, bad_request("'response_format' " + format + " is not served here: wav or pcm (16-bit, the voice's rate)", "response_format"));
  SpeakOptions opt;
  if (j.contains("speed") && !j["speed"].is_null()) {
    if (!j["speed"].is_number() || j["speed"].get<double>() < 0.25 || j["speed"].get<double>() > 4.0)
      return reply_error(res, bad_request("'speed' must be a number from 0.25 to 4", "speed"));
    opt.speaking_rate = j["speed"].get<float>();
  }
  // A voice by number (a multi-speaker voice's speaker); OpenAI's names take the first.
  if (j.contains("voice") && j["voice"].is_string()) {
    const std::string v = j["voice"];
    if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.size() < 7) opt.speaker = std::stoi(v);
  }
  if (j.contains("seed") && j["seed"].is_number_integer()) opt.seed = j["seed"].get<int64_t>();
  Result<Speech> spoken = error("");
  {
    auto lock = hold_work();
    if (j.contains("input_ids")) {  // a Piper-style voice's phoneme ids
      std::vector<int32_t> ids;
      for (const auto& x : j["input_ids"])
        if (x.is_number_integer()) ids.push_back(x.get<int32_t>());
      if (!j["input_ids"].is_array() || ids.size() != j["input_ids"].size() || ids.empty())
        return reply_error(res, bad_request("'input_ids' must be a non-empty array of ids", "input_ids"));
      spoken = speak(*model_, ids, opt);
    } else {
      if (!j.contains("input") || !j["input"].is_string()) return reply_error(res, bad_request("'input' (the text) is required", "input"));
      if (!tok_) return reply_error(res, bad_request("this voice has no vocabulary: send 'input_ids'", "input"));
      spoken = speak_text(*model_, *tok_, j["input"].get<std::string>(), opt);
    }
  }
  if (!spoken.ok()) return reply_error(res, bad_request(spoken.error().message, "input"));
  if (format == "pcm") {
    std::string pcm(spoken->waveform.size() * 2, '\0');
    for (size_t k = 0; k < spoken->waveform.size(); ++k) {
      const int16_t v = int16_t(std::lround(std::clamp(spoken->waveform[k], -1.0f, 1.0f) * 32767.0f));
      std::memcpy(pcm.data() + 2 * k, &v, 2);
    }
    res.set_header("X-Sample-Rate", std::to_string(spoken->sample_rate));
    return res.set_content(pcm, "audio/pcm");
  }
  ScratchFile wav(".wav");
  if (Status st = write_wav(wav.path, spoken->waveform, spoken->sample_rate); !st.ok())
    return reply_error(res, {500, st.error().message, "server_error", "", ""});
  res.set_header("X-Audio-Seconds", std::to_string(spoken->seconds()));
  res.set_content(wav.read(), "audio/wav");
}

void Server::transcription(const httplib::Request& req, httplib::Response& res) {
  if (!req.is_multipart_form_data())
    return reply_error(res, bad_request("send the audio as multipart/form-data, its 'file' field the sound file", "file"));
  auto field = [&](const char* name, const std::string& fallback = "") {
    return req.has_file(name) ? req.get_file_value(name).content : fallback;
  };
  const std::string model = field("model");
  if (!model.empty() && model != name_)
    return reply_error(res, unknown_model(model));
  if (!transcribes_) return reply_error(res, bad_request("model '" + name_ + "' does not transcribe speech: it serves " + serves(), "model"));
  if (!req.has_file("file")) return reply_error(res, bad_request("'file' (the sound file) is required", "file"));
  const std::string format = field("response_format", "json");
  if (format != "json" && format != "text" && format != "verbose_json")
    return reply_error(res, bad_request("'response_format' must be json, text or verbose_json", "response_format"));
  TranscribeOptions opt;
  opt.language = field("language");
  opt.timestamps = format == "verbose_json";
  if (const std::string t = field("temperature"); !t.empty()) {
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end || !(v >= 0 && v <= 1)) return reply_error(res, bad_request("'temperature' must be from 0 to 1", "temperature"));
    if (v > 0) opt.temperatures = {float(v)};
  }
  ScratchFile upload(std::filesystem::path(req.get_file_value("file").filename).extension().string());
  upload.write(req.get_file_value("file").content);
  auto audio = read_audio(upload.path);
  if (!audio.ok()) {
    std::string why = audio.error().message;
    if (auto at = why.find(upload.path); at != std::string::npos) why.replace(at, upload.path.size(), "the upload");
    return reply_error(res, bad_request("the upload is not audio this server reads (WAV, FLAC, OGG): " + why, "file"));
  }
  if (!audio->warning.empty()) {  // served as far as the data goes; said where the operator sees it
    std::string why = audio->warning;
    if (auto at = why.find(upload.path); at != std::string::npos) why.replace(at, upload.path.size(), "an upload");
    std::fprintf(stderr, "archrun serve: warning: %s\n", why.c_str());
  }
  auto samples = resample(audio->samples, audio->sample_rate, 16000);
  if (!samples.ok()) return reply_error(res, bad_request("the upload cannot be resampled: " + samples.error().message, "file"));
  Result<Transcript> t = error("");
  {
    auto lock = hold_work();
    t = transcribe(*model_, tok_.get(), *samples, opt);
  }
  if (!t.ok()) return reply_error(res, {500, "transcription failed: " + t.error().message, "server_error", "", ""});
  if (format == "text") return res.set_content(t->text, "text/plain; charset=utf-8");
  nlohmann::json j = {{"text", t->text}};
  if (format == "verbose_json") {
    j["task"] = opt.task;
    j["language"] = t->language;
    j["duration"] = double(samples->size()) / 16000.0;
    nlohmann::json segs = nlohmann::json::array();
    for (size_t k = 0; k < t->segments.size(); ++k) {
      const Segment& s = t->segments[k];
      segs.push_back({{"id", k}, {"start", s.start}, {"end", s.end}, {"text", s.text}, {"tokens", s.tokens},
                      {"temperature", s.temperature}, {"avg_logprob", s.avg_logprob},
                      {"compression_ratio", s.compression_ratio}, {"no_speech_prob", s.no_speech_prob}});
    }
    j["segments"] = segs;
  }
  reply_json(res, j);
}

}  // namespace arch::serve
