#include "engine/runtime/beam_search.h"

#include "engine/runtime/generate.h"

#include <algorithm>
#include <cmath>

namespace arch {

BeamSet::BeamSet(const BeamOptions& opt) : opt_(opt), live_(1) {}

double BeamSet::normalised(double sum, size_t len) const {
  return sum / std::pow(double(std::max<size_t>(1, len)), opt_.length_penalty);
}

// transformers' BeamHypotheses.add: the best `width` kept; Whisper's: the first `width`.
void BeamSet::finish(double sum, std::vector<int32_t> seq) {
  const double score = normalised(sum, seq.size());
  if (int(finished_.size()) < opt_.width) {
    finished_.push_back({score, sum, std::move(seq)});
    return;
  }
  if (!opt_.transformers) return;
  auto worst = std::min_element(finished_.begin(), finished_.end(), [](const Done& a, const Done& b) { return a.score < b.score; });
  if (score > worst->score) *worst = {score, sum, std::move(seq)};
}

bool BeamSet::done(const std::vector<double>& running_sums, size_t generated) const {
  if (int(finished_.size()) < opt_.width) return false;
  if (!opt_.transformers || opt_.early_stopping) return true;
  // transformers' heuristic (early_stopping false): the best running sum at
  // the current length cannot beat the worst finished one.
  double worst = INFINITY, best = -INFINITY;
  for (const Done& d : finished_) worst = std::min(worst, d.score);
  for (double r : running_sums) best = std::max(best, r);
  return worst >= normalised(best, generated);
}

bool BeamSet::advance() {
  const int width = opt_.width;
  const bool hf = opt_.transformers;
  struct Cand { double score; size_t parent; int32_t tok; };
  std::vector<Cand> cands;
  const size_t per_beam = hf ? size_t(2 * width) : size_t(width) + 1;
  for (size_t h = 0; h < live_.size(); ++h) {
    std::vector<float>& l = live_[h].logits;  // used this step only: transformers' log-probabilities made in place
    float top = -INFINITY;
    for (float x : l) top = std::max(top, x);
    double sum = 0;
    for (float x : l) sum += std::exp(double(x) - top);
    const double norm = top + std::log(sum);
    double shift = norm;  // Whisper's: the log-softmax taken in double with each candidate's score
    if (hf) {
      // transformers': float32 log-probabilities, then its processors on them
      for (float& x : l) x -= float(norm);
      if (opt_.process_scores) opt_.process_scores(l, live_[h].seq);
      shift = 0;
    }
    std::vector<int32_t> idx(l.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
    const size_t take = std::min(idx.size(), per_beam);
    std::partial_sort(idx.begin(), idx.begin() + long(take), idx.end(),
                      [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
    for (size_t i = 0; i < take; ++i)
      if (l[size_t(idx[i])] > -INFINITY) cands.push_back({live_[h].score + double(l[size_t(idx[i])]) - shift, h, idx[i]});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
  if (hf && cands.size() > size_t(2 * width)) cands.resize(size_t(2 * width));
  std::vector<Hyp> next;
  for (size_t rank = 0; rank < cands.size(); ++rank) {
    const Cand& c = cands[rank];
    if (int(next.size()) == width) break;
    std::vector<int32_t> seq = live_[c.parent].seq;
    seq.push_back(c.tok);
    if (c.tok == opt_.eot) {
      if (!hf || rank < size_t(width)) finish(c.score, std::move(seq));  // transformers drops an end ranked past width
      continue;
    }
    Hyp h;
    h.seq = std::move(seq);
    h.score = c.score;
    h.parent = int(c.parent);
    h.runner = -1;  // below, once the search goes on
    next.push_back(std::move(h));
  }
  ++generated_;
  std::vector<double> running;
  for (const Hyp& h : next) running.push_back(h.score);
  if (done(running, size_t(generated_)) || next.empty() || generated_ >= opt_.max_new) {
    if (generated_ >= opt_.max_new && !done(running, size_t(generated_)))
      for (auto& h : next) finish(h.score, h.seq);  // what still runs at the end joins the finished
    live_.clear();
    return false;
  }
  std::vector<char> kept(size_t(width), 0), followed(live_.size(), 0);
  for (Hyp& h : next)
    if (!followed[size_t(h.parent)]++) kept[size_t(h.runner = live_[size_t(h.parent)].runner)] = 1;
  for (Hyp& h : next) {
    if (h.runner >= 0) continue;
    int r = 0;
    while (kept[size_t(r)]) ++r;
    kept[size_t(r)] = 1;
    h.runner = r;
    h.from = live_[size_t(h.parent)].runner;
  }
  live_ = std::move(next);
  return true;
}

Result<std::vector<BeamResult>> BeamSet::results() {
  for (auto& h : live_) finish(h.score, h.seq);
  live_.clear();
  if (finished_.empty()) return error("beam search ended with no hypothesis");
  std::stable_sort(finished_.begin(), finished_.end(), [](const Done& a, const Done& b) { return a.score > b.score; });
  std::vector<BeamResult> out;
  for (size_t i = 0; i < finished_.size() && int(i) < std::max(1, opt_.num_return); ++i)
    out.push_back({finished_[i].seq, finished_[i].sum, finished_[i].score});
  return out;
}

Result<std::vector<BeamResult>> beam_search(std::vector<std::unique_ptr<Session>>& sessions, const NamedTensors& state,
                                            const std::vector<int32_t>& prompt, const BeamOptions& opt) {
  const int width = opt.width;
  if (width < 1 || int(sessions.size()) < width)
    return error("beam search: " + std::to_string(width) + " beams need as many sessions, not " +
                 std::to_string(sessions.size()));
  const int64_t base = int64_t(prompt.size());
  auto step_logits = [&](Session& s, std::span<const int32_t> ids, const std::vector<int32_t>& seq)
      -> Result<std::vector<float>> {
    ARCH_TRY(auto outs, s.step(ids, {"logits"}, /*last_only=*/true));
    const Tensor& l = outs.at("logits");
    const int64_t V = l.dim(-1), rows = l.numel() / V;
    std::vector<float> v(l.f32() + (rows - 1) * V, l.f32() + rows * V);
    ARCH_TRY_STATUS(check_logits_finite(v, int64_t(seq.size())));  // a NaN would leave the candidates no order
    if (opt.process) opt.process(v, seq);
    return v;
  };
  for (auto& s : sessions) s->reset();
  sessions[0]->begin(state);
  BeamSet beams(opt);
  std::vector<BeamSet::Hyp>& live = beams.live();
  if (opt.max_new < 1) return beams.results();
  ARCH_TRY(live[0].logits, step_logits(*sessions[0], prompt, {}));
  std::vector<std::vector<int32_t>> held(sessions.size());  // what each session holds past the prompt
  while (beams.advance()) {
    // A hypothesis taking over its parent's history brings its session
    // there: rewound to what it shares with it, the rest replayed.
    for (auto& h : live) {
      if (h.from < 0) continue;
      const std::vector<int32_t> want(h.seq.begin(), h.seq.end() - 1);
      const auto& have = held[size_t(h.runner)];
      Session& fs = *sessions[size_t(h.runner)];
      size_t common = 0;
      if (fs.position() >= base)
        while (common < want.size() && common < have.size() && want[common] == have[common]) ++common;
      Result<NamedTensors> replay = NamedTensors{};
      if (fs.position() < base) {  // never used: the prompt and the whole history
        fs.begin(state);
        std::vector<int32_t> all = prompt;
        all.insert(all.end(), want.begin(), want.end());
        replay = fs.step(all, {"logits"}, true);
      } else {
        ARCH_TRY_STATUS(fs.rewind(base + int64_t(common)));
        if (common < want.size()) replay = fs.step(std::span(want).subspan(common), {"logits"}, true);
      }
      if (!replay.ok()) return replay.error();
    }
    for (auto& h : live) {
      const int32_t tok = h.seq.back();
      held[size_t(h.runner)] = h.seq;
      ARCH_TRY(h.logits, step_logits(*sessions[size_t(h.runner)], std::span(&tok, 1), h.seq));
    }
  }
  return beams.results();
}

Result<BeamResult> beam_search(std::vector<std::unique_ptr<Session>>& sessions, const NamedTensors& state,
                               const std::vector<int32_t>& prompt, int width, int max_new, int32_t eot,
                               const LogitsProcessor& process) {
  BeamOptions opt;
  opt.width = width, opt.max_new = max_new, opt.eot = eot, opt.process = process;
  ARCH_TRY(auto best, beam_search(sessions, state, prompt, opt));
  return best.front();
}

}  // namespace arch
