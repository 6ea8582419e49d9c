#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace arch {

namespace {

// The order of ids by likelihood: higher logit first, then the lower id (a
// stable sort's), for the draws' candidates and logprobs' alternatives.
bool ranks_before(std::span<const float> logits, int32_t a, int32_t b) {
  return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
}

}  // namespace

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

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t id, int top) {
  TokenLogprobs out;
  const size_t n = logits.size();
  if (n == 0) return out;
  const double log_sum = log_sum_exp(logits);
  auto logprob = [&](int32_t c) { return float(double(logits[size_t(c)]) - log_sum); };
  if (id >= 0 && size_t(id) < n) out.logprob = logprob(id);
  // The best `top` in one pass: a small list kept in order.
  const size_t k = std::min<size_t>(size_t(std::max(top, 0)), n);
  auto before = [&](int32_t a, int32_t b) { return ranks_before(logits, a, b); };
  std::vector<int32_t> best;
  float cut = -INFINITY;  // the last kept one's logit, once k are kept: below it, nothing to do
  for (size_t i = 0; i < n && k > 0; ++i) {
    if (logits[i] < cut) continue;
    const int32_t c = int32_t(i);
    if (best.size() == k && !before(c, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), c, before), c);
    if (best.size() > k) best.pop_back();
    if (best.size() == k) cut = logits[size_t(best.back())];
  }
  for (int32_t c : best) out.top.emplace_back(c, logprob(c));
  return out;
}

int32_t Sampler::next(std::span<const float> logits) {
  const int32_t id = draw(adjusted(logits));
  if (opt_.presence_penalty != 0.0f || opt_.frequency_penalty != 0.0f) ++drawn_[id];
  return id;
}

// The row as given where nothing adjusts it; else a copy with the few ids
// the request names changed (the rest of a 152k vocabulary as it is).
std::span<const float> Sampler::adjusted(std::span<const float> logits) {
  if (opt_.logit_bias.empty() && drawn_.empty()) return logits;
  const size_t n = logits.size();
  row_.assign(logits.begin(), logits.end());
  for (const auto& [id, bias] : opt_.logit_bias)
    if (id >= 0 && size_t(id) < n) row_[size_t(id)] += bias;
  for (const auto& [id, count] : drawn_)
    if (size_t(id) < n) row_[size_t(id)] -= float(count) * opt_.frequency_penalty + opt_.presence_penalty;
  return row_;
}

// Temperature sampling without sorting the vocabulary: a stable sort of
// 151936 ids took 16-18 ms a token (Zen 5), twice a whole decode step.
// Nothing cut: the draw walks the ids in their own order (the same
// distribution as in sorted order). top-k: the k best chosen by selection.
// top-p: only a head of the candidates is sorted, grown until its mass
// reaches top_p. The order is a stable sort's (higher logit first, then
// the lower id), so ties keep the lower id as before.
int32_t Sampler::draw(std::span<const float> logits) {
  if (opt_.greedy || opt_.temperature <= 0 || logits.empty()) return argmax(logits);
  const size_t n = logits.size();
  const size_t k = opt_.top_k > 0 ? std::min<size_t>(size_t(opt_.top_k), n) : n;
  // A NaN would leave no order the sorts can take: such a row (a broken
  // model's) is decoded greedily.
  if (std::any_of(logits.begin(), logits.end(), [](float x) { return x != x; })) return argmax(logits);
  const float inv_t = float(1.0 / opt_.temperature);
  weights_.resize(n);
  if (k == n && opt_.top_p >= 1.0f) {  // nothing cut: every id, in id order, no index list
    const float top = *std::max_element(logits.begin(), logits.end());
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += weights_[i] = std::exp((logits[i] - top) * inv_t);
    double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (size_t i = 0; i < n; ++i)
      if ((r -= weights_[i]) <= 0) return int32_t(i);
    return int32_t(n - 1);
  }
  auto before = [&](int32_t a, int32_t b) { return ranks_before(logits, a, b); };
  ids_.resize(n);
  std::iota(ids_.begin(), ids_.end(), 0);
  if (k < n) {
    std::nth_element(ids_.begin(), ids_.begin() + std::ptrdiff_t(k - 1), ids_.end(), before);
    ids_.resize(k);
  }
  float top = logits[ids_[0]];
  for (int32_t i : ids_) top = std::max(top, logits[i]);
  // exp((logit - max) / temperature) by id, in float (expf: a vocabulary's
  // worth in a fraction of a millisecond), summed in double.
  double sum = 0;
  for (int32_t i : ids_) sum += weights_[size_t(i)] = std::exp((logits[size_t(i)] - top) * inv_t);
  size_t keep = k;
  if (opt_.top_p < 1.0f) {
    // The smallest head of the sorted candidates whose share reaches top_p,
    // never empty: top_p 0 keeps the likeliest alone (greedy), as
    // transformers' TopPLogitsWarper keeps at least one.
    for (size_t head = std::min<size_t>(k, 64);; head = std::min(k, head * 8)) {
      std::nth_element(ids_.begin(), ids_.begin() + std::ptrdiff_t(head - 1), ids_.end(), before);
      std::sort(ids_.begin(), ids_.begin() + std::ptrdiff_t(head), before);
      double acc = 0;
      for (keep = 0; keep < head && (keep == 0 || acc < opt_.top_p);) acc += weights_[size_t(ids_[keep++])] / sum;
      if (acc >= opt_.top_p || head == k) break;
    }
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += weights_[size_t(ids_[i])];
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= weights_[size_t(ids_[i])];
    if (r <= 0) return ids_[i];
  }
  return ids_[keep - 1];
}

}  // namespace arch
