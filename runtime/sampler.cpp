#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace arch {

int32_t argmax(std::span<const float> logits) {
  // The largest value first, in eight independent running maxima (a vocab of
  // 150k is read every token), then its first position.
  const size_t n = logits.size();
  if (n == 0) return 0;
  float lanes[8];
  std::fill(lanes, lanes + 8, logits[0]);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) lanes[j] = logits[i + j] > lanes[j] ? logits[i + j] : lanes[j];
  float top = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) top = logits[i] > top ? logits[i] : top;
  for (size_t k = 0; k < n; ++k)
    if (logits[k] == top) return int32_t(k);
  return 0;  // all NaN
}

int32_t Sampler::next(std::span<const float> logits) {
  if (opt_.greedy || opt_.temperature <= 0) return argmax(logits);
  // Candidates by descending logit; keep top-k, softmax at temperature,
  // then the smallest prefix whose mass reaches top-p.
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t k = opt_.top_k > 0 ? std::min<size_t>(size_t(opt_.top_k), idx.size()) : idx.size();
  idx.resize(k);
  std::vector<double> p(k);
  double maxv = logits[idx[0]], sum = 0;
  for (size_t i = 0; i < k; ++i) sum += p[i] = std::exp((logits[idx[i]] - maxv) / opt_.temperature);
  for (auto& x : p) x /= sum;
  if (opt_.top_p < 1.0f) {
    double acc = 0;
    size_t keep = 0;
    while (keep < k) {
      acc += p[keep++];
      if (acc >= opt_.top_p) break;
    }
    p.resize(keep);
    idx.resize(keep);
  }
  double total = std::accumulate(p.begin(), p.end(), 0.0);
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (size_t i = 0; i < p.size(); ++i) {
    r -= p[i];
    if (r <= 0) return idx[i];
  }
  return idx.back();
}

}  // namespace arch
