// Sample-rate conversion by libsoxr (its very-high-quality recipe): what
// brings a 44.1 or 22.05 kHz recording to Whisper's 16 kHz.
#pragma once

#include <span>
#include <vector>

#include "engine/core/error.h"

namespace arch {

// `in` at `from` Hz, returned at `to` Hz (a copy when the rates agree).
Result<std::vector<float>> resample(std::span<const float> in, int from, int to);

}  // namespace arch
