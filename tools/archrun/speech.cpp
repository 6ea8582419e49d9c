// archrun mel and transcribe: a sound file to Whisper's log-mel features,
// and through a speech encoder-decoder to text.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "importer/audio/audio_file.h"
#include "importer/audio/log_mel.h"
#include "importer/audio/resample.h"
#include "importer/checkpoint/safetensors.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/transcribe.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// The file's samples, mono, at 16 kHz.
Result<std::vector<float>> speech_samples(const std::string& path, int rate = 16000) {
  ARCH_TRY(Audio a, read_audio(path));
  if (!a.warning.empty()) std::fprintf(stderr, "archrun: warning: %s\n", a.warning.c_str());
  auto r = resample(a.samples, a.sample_rate, rate);
  if (!r.ok()) return error(path + ": " + r.error().message);
  return r;
}

std::string seconds_str(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%05.2f", int(s) / 60, s - 60 * (int(s) / 60));
  return buf;
}

}  // namespace

int run_mel(const std::string& audio, int bins, const std::string& out, bool as_json) {
  auto samples = speech_samples(audio);
  if (!samples.ok()) return fail(samples.error());
  LogMelOptions opt;
  opt.bins = bins;
  auto mel = whisper_log_mel(*samples, opt);
  if (!mel.ok()) return fail(error(audio + ": " + mel.error().message));
  // Batch 1, as transformers' extractor returns them.
  Tensor features = mel->features.reshaped({1, mel->features.dim(0), mel->features.dim(1)});
  Tensor mask = mel->attention_mask.reshaped({1, mel->attention_mask.dim(0)});
  Status st = write_safetensors(out, {{"input_features", features}, {"attention_mask", mask}});
  if (!st.ok()) return fail(st.error());
  int64_t frames = 0;
  for (int64_t t = 0; t < mask.numel(); ++t) frames += mask.i32()[t];
  const double seconds = double(samples->size()) / 16000.0;
  if (as_json) {
    nlohmann::json j = {{"out", out}, {"bins", bins}, {"frames", features.dim(2)}, {"audio_frames", frames},
                        {"seconds", seconds}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fprintf(stderr, "%s: %.2f s of audio -> input_features [1, %d, %lld] (%lld frames of audio)%s; wrote %s\n",
                 audio.c_str(), seconds, bins, (long long)features.dim(2), (long long)frames,
                 seconds > 30.0 ? ", the first 30 s only" : "", out.c_str());
  }
  return 0;
}

int run_transcribe(const TranscribeArgs& a) {
  auto samples = speech_samples(a.audio);
  if (!samples.ok()) return fail(samples.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  std::shared_ptr<const Tokenizer> tok;
  if (auto t = load_model_tokenizer(a.common.model); t.ok()) tok = *t;
  TranscribeOptions opt;
  opt.language = a.language;
  opt.task = a.task;
  opt.timestamps = a.timestamps;
  opt.beam_size = a.beam_size;
  opt.seed = a.seed;
  opt.max_new_tokens = a.max_new_tokens;
  if (!a.json)
    opt.on_window = [](int done, int total) {
      if (total > 1) show_progress_count("transcribe", done, total, "windows");
    };
  auto r = transcribe(**m, tok.get(), *samples, opt);
  clear_progress_line();
  if (!r.ok()) return fail(error(a.audio + ": " + r.error().message));
  if (a.json) {
    nlohmann::json segs = nlohmann::json::array();
    for (const auto& s : r->segments)
      segs.push_back({{"start", s.start}, {"end", s.end}, {"text", s.text}, {"tokens", s.tokens},
                      {"avg_logprob", s.avg_logprob}, {"compression_ratio", s.compression_ratio},
                      {"temperature", s.temperature}, {"no_speech_prob", s.no_speech_prob}});
    nlohmann::json j = {{"text", r->text}, {"language", r->language}, {"prompt", r->prompt}, {"segments", segs}, {"windows", r->windows}, {"silent_windows", r->silent_windows},
                        {"encode_seconds", r->encode_seconds}, {"decode_seconds", r->decode_seconds}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  for (const auto& s : r->segments) {
    std::string body = s.text;
    if (!tok) {  // no tokenizer: the ids say what was heard
      for (int32_t t : s.tokens) body += (body.empty() ? "" : " ") + std::to_string(t);
    }
    if (a.timestamps) std::printf("[%s --> %s] %s\n", seconds_str(s.start).c_str(), seconds_str(s.end).c_str(), body.c_str());
    else std::printf("%s\n", body.c_str());
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%s (%s): %.2f s of audio in %d window%s; encoder %.3f s, decoder %.3f s%s%s\n",
               (*m)->family.c_str(), (*m)->template_path.c_str(), double(samples->size()) / 16000.0, r->windows,
               r->windows == 1 ? "" : "s", r->encode_seconds, r->decode_seconds,
               r->language.empty() ? "" : ("; language " + r->language).c_str(), tok ? "" : "; no tokenizer: ids");
  return 0;
}

}  // namespace arch::cli
