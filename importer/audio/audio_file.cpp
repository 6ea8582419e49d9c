#include "importer/audio/audio_file.h"

#include <sndfile.h>

#include <memory>

#include "engine/core/limits.h"

namespace arch {

Result<Audio> read_audio(const std::string& path) {
  SF_INFO info{};
  SNDFILE* f = sf_open(path.c_str(), SFM_READ, &info);
  if (!f) return error(path + ": not a sound file libsndfile reads (" + sf_strerror(nullptr) + ")");
  std::unique_ptr<SNDFILE, int (*)(SNDFILE*)> closer(f, sf_close);
  if (info.samplerate <= 0)
    return error(path + ": the file gives a sample rate of " + std::to_string(info.samplerate));
  if (info.channels <= 0) return error(path + ": the file gives " + std::to_string(info.channels) + " channels");
  if (info.frames <= 0) return error(path + ": the file holds no samples");
  // A header's claim, checked before the buffer is made for it.
  ARCH_TRY_STATUS(check_limit("audio_samples", int64_t(info.frames), path, "the file's samples per channel"));
  ARCH_TRY_STATUS(check_limit("audio_samples", int64_t(info.frames) * info.channels, path, "the file's samples"));
  std::vector<float> interleaved(size_t(info.frames) * size_t(info.channels));
  const sf_count_t got = sf_readf_float(f, interleaved.data(), info.frames);
  if (got <= 0) return error(path + ": no samples could be read (" + sf_strerror(f) + ")");
  Audio a;
  a.sample_rate = info.samplerate;
  a.channels = info.channels;
  a.samples.resize(size_t(got));
  // The channels' mean, as a mono mix-down.
  for (sf_count_t i = 0; i < got; ++i) {
    double s = 0;
    for (int c = 0; c < info.channels; ++c) s += interleaved[size_t(i) * size_t(info.channels) + size_t(c)];
    a.samples[size_t(i)] = float(s / info.channels);
  }
  return a;
}

}  // namespace arch
