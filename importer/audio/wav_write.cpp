#include "importer/audio/wav_write.h"

#include <sndfile.h>

#include <cstdio>

#include "engine/core/output_file.h"

namespace arch {

Status write_wav(const std::string& path, std::span<const float> samples, int sample_rate) {
  if (sample_rate <= 0) return error(path + ": a sample rate of " + std::to_string(sample_rate) + " Hz");
  if (samples.empty()) return error(path + ": no samples to write");
  // Whole or absent (engine/core/output_file.h): libsndfile writes into the unnamed
  // file by its descriptor, which the output keeps (close_desc false).
  ARCH_TRY(OutputFile out, OutputFile::create(path));
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  SNDFILE* f = sf_open_fd(out.fd(), SFM_WRITE, &info, SF_FALSE);
  if (!f) return error(path + ": cannot be written (" + sf_strerror(nullptr) + ")");
  sf_command(f, SFC_SET_CLIPPING, nullptr, SF_TRUE);  // past +-1 holds at full scale instead of wrapping
  const sf_count_t wrote = sf_write_float(f, samples.data(), sf_count_t(samples.size()));
  const std::string why = sf_strerror(f);
  const int closed = sf_close(f);
  if (wrote != sf_count_t(samples.size()) || closed != 0)
    return error(path + ": writing failed after " + std::to_string(wrote) + " of " + std::to_string(samples.size()) +
                 " samples (" + why + ")");
  return out.commit();
}

}  // namespace arch
