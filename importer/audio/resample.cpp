#include "importer/audio/resample.h"

#include <soxr.h>

#include <cmath>
#include <string>

#include "engine/core/limits.h"

namespace arch {

Result<std::vector<float>> resample(std::span<const float> in, int from, int to) {
  if (from <= 0 || to <= 0)
    return error("resample: sample rates must be positive, got " + std::to_string(from) + " -> " + std::to_string(to));
  if (from == to) return std::vector<float>(in.begin(), in.end());
  const double want = std::round(double(in.size()) * to / from);
  // An upsampling claim is bounded like a file's own samples (1 Hz to
  // 16 kHz multiplies them by 16000), before the buffer is made.
  ARCH_TRY_STATUS(check_limit("audio_samples", want < 9.2e18 ? int64_t(want) : INT64_MAX, "resample",
                              "the samples at " + std::to_string(to) + " Hz from " + std::to_string(in.size()) +
                                  " at " + std::to_string(from) + " Hz"));
  // Too few to give one sample (fuzz_audio_decode: 114 samples at 16.8 MHz):
  // libsoxr reads through the null buffer of an empty output.
  if (want < 1) return std::vector<float>();
  const size_t out_len = size_t(want);
  std::vector<float> out(out_len);
  size_t done = 0;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, 0);
  soxr_error_t err = soxr_oneshot(double(from), double(to), 1, in.data(), in.size(), nullptr, out.data(), out.size(),
                                  &done, &io, &q, nullptr);
  if (err) return error(std::string("resample: libsoxr: ") + err);
  out.resize(done);
  return out;
}

}  // namespace arch
