#include "importer/audio/audio_file.h"

#include <sndfile.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "engine/core/limits.h"

namespace arch {

namespace {

// libsndfile reads a file whose header claims more data than it holds as
// far as the data goes, and says so only in its log: "data : 200000
// (should be 2000)". That line, as a warning with both lengths.
std::string short_data_warning(SNDFILE* f, const std::string& path) {
  char log[8192] = {};
  sf_command(f, SFC_GET_LOG_INFO, log, sizeof log - 1);
  for (const char* line = log; *line;) {
    const char* end = std::strchr(line, '\n');
    const std::string text(line, end ? size_t(end - line) : std::strlen(line));
    long long claimed = 0, holds = 0;
    char chunk[16] = {};
    if (std::sscanf(text.c_str(), " %15[a-zA-Z ] : %lld (should be %lld)", chunk, &claimed, &holds) == 3 && claimed > holds) {
      std::string name = chunk;
      while (!name.empty() && name.back() == ' ') name.pop_back();
      if (name == "data" || name == "SSND")
        return path + ": the header claims " + std::to_string(claimed) + " bytes of samples, the file holds " +
               std::to_string(holds) + ": read as far as they go";
    }
    if (!end) break;
    line = end + 1;
  }
  return "";
}

}  // namespace

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
  for (sf_count_t i = 0; i < got * info.channels; ++i)
    if (!std::isfinite(interleaved[size_t(i)]))
      return error(path + ": sample " + std::to_string(i / info.channels) + " (channel " + std::to_string(i % info.channels) +
                   ") is " + (std::isnan(interleaved[size_t(i)]) ? "NaN" : "infinite") + ": not a sound");
  Audio a;
  a.sample_rate = info.samplerate;
  a.channels = info.channels;
  a.warning = short_data_warning(f, path);
  if (a.warning.empty() && got < info.frames)
    a.warning = path + ": the header gives " + std::to_string(info.frames) + " samples per channel, " + std::to_string(got) +
                " could be read";
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
