#include "audio/resample.h"

#include <soxr.h>

#include <cmath>
#include <string>

namespace arch {

Result<std::vector<float>> resample(std::span<const float> in, int from, int to) {
  if (from <= 0 || to <= 0)
    return error("resample: sample rates must be positive, got " + std::to_string(from) + " -> " + std::to_string(to));
  if (from == to) return std::vector<float>(in.begin(), in.end());
  const size_t out_len = size_t(std::llround(double(in.size()) * to / from));
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
