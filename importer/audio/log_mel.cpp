#include "importer/audio/log_mel.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <mutex>
#include <string>
#include <vector>

namespace arch {

namespace {

// The Slaney mel scale: linear to 1 kHz, logarithmic above.
double hz_to_mel(double f) {
  const double min_log_hz = 1000.0, min_log_mel = 15.0, logstep = 27.0 / std::log(6.4);
  return f < min_log_hz ? 3.0 * f / 200.0 : min_log_mel + std::log(f / min_log_hz) * logstep;
}

double mel_to_hz(double m) {
  const double min_log_hz = 1000.0, min_log_mel = 15.0, logstep = std::log(6.4) / 27.0;
  return m < min_log_mel ? 200.0 * m / 3.0 : min_log_hz * std::exp(logstep * (m - min_log_mel));
}

// FFTW's planner is not thread-safe; plans are made once per size.
std::mutex fftw_mutex;

}  // namespace

std::vector<double> slaney_mel_filters(int bins, int n_fft, int sample_rate, double f_min, double f_max) {
  const int nfreq = n_fft / 2 + 1;
  std::vector<double> fft_freqs(static_cast<size_t>(nfreq)), filter_freqs(static_cast<size_t>(bins) + 2);
  for (int i = 0; i < nfreq; ++i) fft_freqs[size_t(i)] = double(sample_rate / 2) * i / (nfreq - 1);
  const double m0 = hz_to_mel(f_min), m1 = hz_to_mel(f_max);
  for (int i = 0; i < bins + 2; ++i) filter_freqs[size_t(i)] = mel_to_hz(m0 + (m1 - m0) * i / (bins + 1));
  std::vector<double> f(static_cast<size_t>(nfreq) * static_cast<size_t>(bins));
  for (int k = 0; k < nfreq; ++k)
    for (int m = 0; m < bins; ++m) {
      // Triangles rising from edge m to m + 1 and falling to m + 2; Slaney
      // norm: each scaled to unit area, 2 / (width in Hz).
      const double down = -(filter_freqs[size_t(m)] - fft_freqs[size_t(k)]) /
                          (filter_freqs[size_t(m) + 1] - filter_freqs[size_t(m)]);
      const double up = (filter_freqs[size_t(m) + 2] - fft_freqs[size_t(k)]) /
                        (filter_freqs[size_t(m) + 2] - filter_freqs[size_t(m) + 1]);
      const double enorm = 2.0 / (filter_freqs[size_t(m) + 2] - filter_freqs[size_t(m)]);
      f[size_t(k) * size_t(bins) + size_t(m)] = std::max(0.0, std::min(down, up)) * enorm;
    }
  return f;
}

Result<LogMel> whisper_log_mel(std::span<const float> samples, const LogMelOptions& opt, int64_t offset) {
  if (opt.bins <= 0 || opt.n_fft <= 0 || opt.hop <= 0 || opt.window_samples < opt.n_fft)
    return error("log-mel: bins " + std::to_string(opt.bins) + ", n_fft " + std::to_string(opt.n_fft) + ", hop " +
                 std::to_string(opt.hop) + " must be positive and the window at least one FFT long");
  const int64_t n = opt.window_samples, pad = opt.n_fft / 2, nfft = opt.n_fft;
  const int64_t nfreq = nfft / 2 + 1, frames = 1 + n / opt.hop;  // the STFT's; the last is dropped
  offset = std::clamp<int64_t>(offset, 0, int64_t(samples.size()));
  const int64_t have = std::min<int64_t>(n, int64_t(samples.size()) - offset);
  // The window: the audio, zeros after it, reflect-padded by n_fft / 2 on both ends.
  std::vector<double> x(static_cast<size_t>(n + 2 * pad), 0.0);
  auto at = [&](int64_t i) { return i < have ? double(samples[size_t(offset + i)]) : 0.0; };
  for (int64_t i = 0; i < n; ++i) x[size_t(pad + i)] = at(i);
  for (int64_t i = 1; i <= pad; ++i) {
    x[size_t(pad - i)] = at(i);               // reflect: x[-i] = x[i]
    x[size_t(pad + n - 1 + i)] = at(n - 1 - i);
  }
  std::vector<double> hann(static_cast<size_t>(nfft));  // periodic: np.hanning(n_fft + 1)[:-1]
  for (int64_t i = 0; i < nfft; ++i) hann[size_t(i)] = 0.5 - 0.5 * std::cos(2.0 * M_PI * double(i) / double(nfft));
  const std::vector<double> filters = slaney_mel_filters(opt.bins, opt.n_fft, opt.sample_rate, 0.0, 8000.0);

  double* in = fftw_alloc_real(size_t(nfft));
  fftw_complex* out = fftw_alloc_complex(size_t(nfreq));
  fftw_plan plan;
  {
    std::lock_guard<std::mutex> lock(fftw_mutex);
    plan = fftw_plan_dft_r2c_1d(int(nfft), in, out, FFTW_ESTIMATE);
  }
  const int64_t kept = frames - 1;
  std::vector<double> log_spec(static_cast<size_t>(opt.bins) * static_cast<size_t>(kept));
  std::vector<double> power(static_cast<size_t>(nfreq));
  double top = -INFINITY;
  for (int64_t t = 0; t < kept; ++t) {
    for (int64_t i = 0; i < nfft; ++i) in[i] = x[size_t(t * opt.hop + i)] * hann[size_t(i)];
    fftw_execute(plan);
    for (int64_t k = 0; k < nfreq; ++k) {
      // Stored as complex64 by transformers' numpy path, then widened.
      const double re = double(float(out[k][0])), im = double(float(out[k][1]));
      power[size_t(k)] = re * re + im * im;
    }
    for (int m = 0; m < opt.bins; ++m) {
      double mel = 0;
      for (int64_t k = 0; k < nfreq; ++k) mel += filters[size_t(k) * size_t(opt.bins) + size_t(m)] * power[size_t(k)];
      const double l = std::log10(std::max(mel, 1e-10));
      log_spec[size_t(m) * size_t(kept) + size_t(t)] = l;
      top = std::max(top, l);
    }
  }
  {
    std::lock_guard<std::mutex> lock(fftw_mutex);
    fftw_destroy_plan(plan);
  }
  fftw_free(in);
  fftw_free(out);

  LogMel r;
  r.features = Tensor::zeros(DType::F32, {opt.bins, kept});
  for (size_t i = 0; i < log_spec.size(); ++i) r.features.f32()[i] = float((std::max(log_spec[i], top - 8.0) + 4.0) / 4.0);
  // The padding mask every hop-th sample: ones for the first ceil(have / hop) frames.
  r.attention_mask = Tensor::zeros(DType::I32, {kept});
  const int64_t ones = std::min<int64_t>(kept, (have + opt.hop - 1) / opt.hop);
  for (int64_t t = 0; t < ones; ++t) r.attention_mask.i32()[t] = 1;
  return r;
}

}  // namespace arch
