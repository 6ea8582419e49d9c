// archrun speak: text (or phoneme ids) through a text-to-speech template
// to a 16-bit PCM WAV file.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "audio/wav_write.h"
#include "runtime/model_text.h"
#include "runtime/speak.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_speak(const SpeakArgs& a) {
  if (a.has_prompt == !a.ids.empty()) return fail(error("give the text with -p, or ids with --ids (one of them)"));
  if (a.has_prompt && a.prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail(error("the text is empty: nothing to speak"));
  if (Status st = check_writable(a.out); !st.ok()) return fail(st.error());  // before the work, not after
  std::vector<int32_t> ids;
  if (!a.ids.empty()) {
    auto parsed = parse_ids(a.ids);
    if (!parsed.ok()) return fail(parsed.error());
    ids = *parsed;
  } else {
    auto tok = open_tokenizer(a.common.model);
    if (!tok.ok()) return fail(error("-p needs the voice's tokenizer: " + tok.error().message + " (or give --ids)"));
    ids = (*tok)->encode(a.prompt);
    // With add_blank every other id is the blank: text of which no
    // character is in the vocabulary leaves only that.
    bool spoken = false;
    for (int32_t id : ids) spoken = spoken || id != 0;
    if (!spoken)
      return fail(error("\"" + a.prompt + "\": no character of the text is in the voice's vocabulary (" +
                        (*tok)->source() + ")"));
  }
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  SpeakOptions opt;
  opt.speaking_rate = a.speaking_rate;
  opt.noise_scale = a.noise_scale;
  opt.noise_scale_duration = a.noise_scale_duration;
  opt.seed = int64_t(a.seed);
  opt.speaker = a.speaker;
  auto sp = speak(**m, ids, opt);
  if (!sp.ok()) return fail(sp.error());
  if (Status st = write_wav(a.out, sp->waveform, sp->sample_rate); !st.ok()) return fail(st.error());
  if (a.json) {
    nlohmann::json j = {{"out", a.out},
                        {"seconds", sp->seconds()},
                        {"samples", sp->waveform.size()},
                        {"sample_rate", sp->sample_rate},
                        {"frames", sp->frames},
                        {"ids", ids.size()},
                        {"durations", sp->durations},
                        {"compute_seconds", sp->compute_seconds},
                        {"real_time_factor", sp->real_time_factor()},
                        {"seed", a.seed}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::fprintf(stderr, "wrote %s: %.2f s of audio at %d Hz (%lld frames from %zu ids) in %.3f s: real-time factor %.3f\n",
               a.out.c_str(), sp->seconds(), sp->sample_rate, (long long)sp->frames, ids.size(), sp->compute_seconds,
               sp->real_time_factor());
  return 0;
}

}  // namespace arch::cli
