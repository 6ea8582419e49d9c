#include "engine/runtime/grammar_constraint.h"

#include <algorithm>
#include <limits>

namespace arch {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const GrammarVocab> vocab,
                                     std::vector<int32_t> eos)
    : matcher_(std::move(g)), vocab_(std::move(vocab)), eos_(std::move(eos)) {}

void GrammarConstraint::mask(std::span<float> logits, const std::vector<int32_t>& so_far) {
  for (; taken_ < so_far.size(); ++taken_) {
    const int32_t t = so_far[taken_];
    if (std::find(eos_.begin(), eos_.end(), t) != eos_.end()) continue;
    const bool known = t >= 0 && size_t(t) < vocab_->bytes.size() && !vocab_->bytes[size_t(t)].empty();
    if (!known || !matcher_.accept(vocab_->bytes[size_t(t)])) broken_ = true;
  }
  // The allowed tokens: a state met lately has its mask remembered (no
  // copy: masked from where it is kept), another walks the trie.
  last_allowed_ = last_visited_ = 0;
  const std::vector<char>* allow = nullptr;
  if (!broken_) {
    const int id = states_.intern(matcher_.state());
    const uint64_t gen = states_.generation();
    auto it = std::find_if(remembered_.begin(), remembered_.end(),
                           [&](const Remembered& r) { return r.state == id && r.generation == gen && r.allowed.size() == logits.size(); });
    if (it == remembered_.end()) {
      if (remembered_.size() < 8) remembered_.emplace_back();
      it = remembered_.begin() + ptrdiff_t(next_slot_++ % remembered_.size());
      it->allowed.assign(logits.size(), 0);
      it->count = vocab_->trie.allowed(states_, matcher_.state(), it->allowed, &last_visited_);
      it->state = states_.intern(matcher_.state());  // the walk may have started the table again
      it->generation = states_.generation();
    }
    allow = &it->allowed;
    last_allowed_ = it->count;
  }
  // The end-of-sequence ids: only once the text is whole (or nothing else can follow).
  const bool end = broken_ || matcher_.complete() || last_allowed_ == 0;
  eos_logits_.clear();
  for (int32_t e : eos_)
    if (e >= 0 && size_t(e) < logits.size()) eos_logits_.push_back(logits[size_t(e)]);
  const float none = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i)
    if (!allow || !(*allow)[i]) logits[i] = none;
  size_t k = 0;
  for (int32_t e : eos_)
    if (e >= 0 && size_t(e) < logits.size()) logits[size_t(e)] = end ? eos_logits_[k++] : none;
}

}  // namespace arch
