// A sound file (anything libsndfile reads) from any bytes, mixed to mono
// and resampled to Whisper's 16 kHz.
#include "audio/audio_file.h"
#include "audio/resample.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto a = arch::read_audio(arch::fuzz::input_file(data, size, ".wav"));
  if (a.ok()) (void)arch::resample(a->samples, a->sample_rate, 16000);
  return 0;
}
