// archrun speak: text (or phoneme ids) through a text-to-speech template
// to a 16-bit PCM WAV file.
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/core/output_file.h"
#include "importer/audio/wav_write.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/speak.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_speak(const SpeakArgs& a) {
  if (a.has_prompt == !a.ids.empty()) return fail(error("give the text with -p, or ids with --ids (one of them)"));
  if (a.has_prompt && a.prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail(error("the text is empty: nothing to speak"));
  if (Status st = OutputFile::check(a.out); !st.ok()) return fail(st.error());  // before the work, not after
  // "-o -": the WAV is standard output, so everything for people goes to stderr.
  std::FILE* said = a.out == "-" ? stderr : stdout;
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  SpeakOptions opt;
  opt.speaking_rate = a.speaking_rate;
  opt.noise_scale = a.noise_scale;
  opt.noise_scale_duration = a.noise_scale_duration;
  opt.speaker = a.speaker;
  opt.seed = int64_t(a.seed);
  // The ids as given, or the text (a long one cut after its sentences and
  // spoken piece by piece: engine/runtime/speak.h).
  Result<Speech> spoken = error("");
  if (!a.ids.empty()) {
    auto parsed = parse_ids(a.ids);
    if (!parsed.ok()) return fail(parsed.error());
    spoken = speak(**m, *parsed, opt);
  } else {
    auto tok = open_tokenizer(a.common.model);
    if (!tok.ok()) return fail(error("-p needs the voice's tokenizer: " + tok.error().message + " (or give --ids)"));
    spoken = speak_text(**m, **tok, a.prompt, opt, [](size_t k, size_t n) {
      if (n > 1) std::fprintf(stderr, "\rspeaking piece %zu of %zu%s", k + 1, n, k + 1 == n ? "\n" : "");
    });
  }
  if (!spoken.ok()) return fail(spoken.error());
  const Speech& all = *spoken;
  const size_t ids = all.durations.size();
  if (Status st = write_wav(a.out, all.waveform, all.sample_rate); !st.ok()) return fail(st.error());
  if (a.json) {
    nlohmann::json j = {{"out", a.out},
                        {"seconds", all.seconds()},
                        {"samples", all.waveform.size()},
                        {"sample_rate", all.sample_rate},
                        {"frames", all.frames},
                        {"ids", ids},
                        {"pieces", all.pieces},
                        {"durations", all.durations},
                        {"compute_seconds", all.compute_seconds},
                        {"real_time_factor", all.real_time_factor()},
                        {"seed", a.seed}};
    std::fprintf(said, "%s\n", j.dump().c_str());
    return 0;
  }
  const std::string in_pieces = all.pieces > 1 ? " in " + std::to_string(all.pieces) + " pieces" : "";
  std::fprintf(stderr, "wrote %s: %.2f s of audio at %d Hz (%lld frames from %zu ids%s) in %.3f s: real-time factor %.3f\n",
               OutputFile::shown(a.out).c_str(), all.seconds(), all.sample_rate, (long long)all.frames, ids, in_pieces.c_str(),
               all.compute_seconds, all.real_time_factor());
  return 0;
}

}  // namespace arch::cli
