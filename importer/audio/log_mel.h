// Whisper's input features, as transformers' WhisperFeatureExtractor makes
// them: 16 kHz samples padded with zeros (or cut) to a 30 s window; a
// reflect-centred STFT (periodic Hann of 400, hop 160, 3001 frames, the
// last dropped); power; Slaney-scale mel filters 0-8000 Hz with Slaney
// norm; log10 of max(mel, 1e-10); clamped to the window's max - 8; then
// (x + 4) / 4. The FFT is FFTW's, in double, rounded to complex64 as
// transformers' numpy path stores it; the rest in double.
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct LogMelOptions {
  int bins = 80;               // num_mel_bins: 80 (tiny..large-v2) or 128 (large-v3)
  int sample_rate = 16000;
  int n_fft = 400;
  int hop = 160;
  int64_t window_samples = 480000;  // 30 s
};

struct LogMel {
  Tensor features;        // F32 [bins, window_samples / hop]
  Tensor attention_mask;  // I32 [window_samples / hop]: 1 for the frames the audio reaches
};

// The features of the window of `samples` (16 kHz mono) starting at
// `offset` (samples past the end are zeros).
Result<LogMel> whisper_log_mel(std::span<const float> samples, const LogMelOptions& opt = {}, int64_t offset = 0);

// Slaney mel filters [n_fft / 2 + 1, bins] (transformers' mel_filter_bank
// with norm and mel_scale "slaney"), for tests.
std::vector<double> slaney_mel_filters(int bins, int n_fft, int sample_rate, double f_min, double f_max);

}  // namespace arch
