#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace arch {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = int32_t(i);
  return best;
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
