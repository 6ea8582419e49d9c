// A sound file (anything libsndfile reads) from any bytes, mixed to mono
// and resampled to Whisper's 16 kHz.
#include "importer/audio/audio_file.h"
#include "importer/audio/resample.h"
#include "engine/core/limits.h"
#include "tests/fuzz/fuzz_input.h"

// A far smaller audio_samples than the default (2^28 a channel, gigabytes
// as floats): the same checks at 2^15, two seconds at 16 kHz, more than an
// input of at most 16 KiB (tools/fuzz.sh) holds. Upsampling claims past it
// are refused before libsoxr builds its filter, so a run takes a fraction of
// a millisecond (4,000 a second, against 10 at 2^22).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)arch::set_limit("audio_samples", int64_t(1) << 15);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto a = arch::read_audio(arch::fuzz::input_file(data, size, ".wav"));
  if (a.ok()) (void)arch::resample(a->samples, a->sample_rate, 16000);
  return 0;
}
