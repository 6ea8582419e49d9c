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
  double seconds() const { return sample_rate > 0 ? double(samples.size()) / sample_rate : 0.0; }
};

// Errors name the file and the fault: not a sound file, no samples, a
// sample rate of 0.
Result<Audio> read_audio(const std::string& path);

}  // namespace arch
