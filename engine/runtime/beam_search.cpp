#include "engine/runtime/beam_search.h"

#include "engine/runtime/generate.h"

#include <algorithm>
#include <cmath>

namespace arch {

Result<std::vector<BeamResult>> beam_search(std::vector<std::unique_ptr<Session>>& sessions, const NamedTensors& state,
                                            const std::vector<int32_t>& prompt, const BeamOptions& opt) {
  const int width = opt.width, max_new = opt.max_new;
  const int32_t eot = opt.eot;
  const bool hf = opt.transformers;
  if (width < 1 || int(sessions.size()) < width)
    return error("beam search: " + std::to_string(width) + " beams need as many sessions, not " +
                 std::to_string(sessions.size()));
  struct Hyp {
    std::vector<int32_t> seq;
    double score = 0;
    int session = -1;
    std::vector<float> logits;  // its next step's, processed
  };
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
  std::vector<Hyp> live(1);
  live[0].session = 0;
  ARCH_TRY(live[0].logits, step_logits(*sessions[0], prompt, {}));
  // Finished hypotheses: (normalised score, sum, tokens).
  struct Done {
    double score, sum;
    std::vector<int32_t> seq;
  };
  std::vector<Done> finished;
  auto normalised = [&](double sum, size_t len) { return sum / std::pow(double(std::max<size_t>(1, len)), opt.length_penalty); };
  // transformers' BeamHypotheses.add: the best `width` kept; Whisper's: the first `width`.
  auto finish = [&](double sum, std::vector<int32_t> seq) {
    const double score = normalised(sum, seq.size());
    if (!hf) {
      if (int(finished.size()) < width) finished.push_back({score, sum, std::move(seq)});
      return;
    }
    if (int(finished.size()) < width) {
      finished.push_back({score, sum, std::move(seq)});
      return;
    }
    auto worst = std::min_element(finished.begin(), finished.end(), [](const Done& a, const Done& b) { return a.score < b.score; });
    if (score > worst->score) *worst = {score, sum, std::move(seq)};
  };
  auto done = [&](const std::vector<double>& running_sums, size_t generated) {
    if (int(finished.size()) < width) return false;
    if (!hf || opt.early_stopping) return true;
    // transformers' heuristic (early_stopping false): the best running sum at
    // the current length cannot beat the worst finished one.
    double worst = INFINITY, best = -INFINITY;
    for (const Done& d : finished) worst = std::min(worst, d.score);
    for (double r : running_sums) best = std::max(best, r);
    return worst >= normalised(best, generated);
  };
  std::vector<std::vector<int32_t>> held(sessions.size());  // what each session holds past the prompt
  for (int k = 0; k < max_new && !live.empty(); ++k) {
    struct Cand { double score; size_t parent; int32_t tok; };
    std::vector<Cand> cands;
    const size_t per_beam = hf ? size_t(2 * width) : size_t(width) + 1;
    for (size_t h = 0; h < live.size(); ++h) {
      std::vector<float>& l = live[h].logits;  // used this step only: transformers' log-probabilities made in place
      float top = -INFINITY;
      for (float x : l) top = std::max(top, x);
      double sum = 0;
      for (float x : l) sum += std::exp(double(x) - top);
      const double norm = top + std::log(sum);
      double shift = norm;  // Whisper's: the log-softmax taken in double with each candidate's score
      if (hf) {
        // transformers': float32 log-probabilities, then its processors on them
        for (float& x : l) x -= float(norm);
        if (opt.process_scores) opt.process_scores(l, live[h].seq);
        shift = 0;
      }
      std::vector<int32_t> idx(l.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
      const size_t take = std::min(idx.size(), per_beam);
      std::partial_sort(idx.begin(), idx.begin() + long(take), idx.end(),
                        [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
      for (size_t i = 0; i < take; ++i)
        if (l[size_t(idx[i])] > -INFINITY) cands.push_back({live[h].score + double(l[size_t(idx[i])]) - shift, h, idx[i]});
    }
    std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
    if (hf && cands.size() > size_t(2 * width)) cands.resize(size_t(2 * width));
    std::vector<Hyp> next;
    for (size_t rank = 0; rank < cands.size(); ++rank) {
      const Cand& c = cands[rank];
      if (int(next.size()) == width) break;
      std::vector<int32_t> seq = live[c.parent].seq;
      seq.push_back(c.tok);
      if (c.tok == eot) {
        if (!hf || rank < size_t(width)) finish(c.score, std::move(seq));  // transformers drops an end ranked past width
        continue;
      }
      Hyp h;
      h.seq = std::move(seq);
      h.score = c.score;
      h.session = int(c.parent);  // resolved below
      next.push_back(std::move(h));
    }
    std::vector<double> running;
    for (const Hyp& h : next) running.push_back(h.score);
    if (done(running, size_t(k + 1)) || next.empty()) {
      live.clear();
      break;
    }
    // Sessions: a parent's own session goes to its first child; the
    // others take a session no child claimed and bring it to the
    // parent's history (rewound to what it shares, the rest replayed).
    std::vector<bool> claimed(sessions.size(), false);
    std::vector<bool> parent_used(live.size(), false);
    std::vector<size_t> parent_of(next.size());
    for (size_t j = 0; j < next.size(); ++j) {
      parent_of[j] = size_t(next[j].session);
      if (!parent_used[parent_of[j]]) {
        parent_used[parent_of[j]] = true;
        next[j].session = live[parent_of[j]].session;
        claimed[size_t(next[j].session)] = true;
      } else {
        next[j].session = -1;
      }
    }
    for (size_t j = 0; j < next.size(); ++j) {
      if (next[j].session >= 0) continue;
      size_t free = 0;
      while (claimed[free]) ++free;
      claimed[free] = true;
      next[j].session = int(free);
      const auto& want = live[parent_of[j]].seq;
      const auto& have = held[free];
      Session& fs = *sessions[free];
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
      held[free] = want;
    }
    for (auto& h : next) {
      const int32_t tok = h.seq.back();
      held[size_t(h.session)] = h.seq;
      ARCH_TRY(h.logits, step_logits(*sessions[size_t(h.session)], std::span(&tok, 1), h.seq));
    }
    live = std::move(next);
  }
  for (auto& h : live) finish(h.score, h.seq);  // what still runs at the end joins the finished
  if (finished.empty()) return error("beam search ended with no hypothesis");
  std::stable_sort(finished.begin(), finished.end(), [](const Done& a, const Done& b) { return a.score > b.score; });
  std::vector<BeamResult> out;
  for (size_t i = 0; i < finished.size() && int(i) < std::max(1, opt.num_return); ++i)
    out.push_back({finished[i].seq, finished[i].sum, finished[i].score});
  return out;
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
