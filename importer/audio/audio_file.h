// A sound file read whole (WAV, FLAC, OGG and the rest libsndfile reads),
// its channels mixed down to one.
#pragma once

#include <string>
#include <vector>

#include "engine/core/error.h"

namespace arch {

struct Audio {
  std::vector<float> samples;  // mono, in [-1, 1]: int16 as x / 32768, as transformers reads a WAV
  int sample_rate = 0;
  int channels = 0;            // in the file, before the mix-down
  std::string warning;         // set: the file is not what its header says (read as far as it goes)
  double seconds() const { return sample_rate > 0 ? double(samples.size()) / sample_rate : 0.0; }
};

// Errors name the file and the fault: not a sound file, no samples, a
// sample rate of 0, a sample that is NaN or infinite (a float WAV can hold
// them). A header claiming more data than the file holds is read as far as
// the data goes, with a warning giving both lengths.
Result<Audio> read_audio(const std::string& path);

}  // namespace arch
