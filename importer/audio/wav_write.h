// A waveform written as a 16-bit PCM WAV file through libsndfile: whole or
// not at all (written beside the path, then renamed over it), so a failed
// or interrupted write leaves no partial file and keeps an earlier one.
#pragma once

#include <span>
#include <string>

#include "engine/core/error.h"

namespace arch {

// Samples in [-1, 1] (clipped past it), mono, at `sample_rate` Hz. Errors
// name the path and the fault (a folder that does not exist, no room).
Status write_wav(const std::string& path, std::span<const float> samples, int sample_rate);

}  // namespace arch
