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
  allowed_.assign(logits.size(), 0);
  last_allowed_ = last_visited_ = 0;
  if (!broken_) {
    const int id = states_.intern(matcher_.state());
    const uint64_t gen = states_.generation();
    auto it = std::find_if(remembered_.begin(), remembered_.end(),
                           [&](const Remembered& r) { return r.state == id && r.generation == gen && r.allowed.size() == allowed_.size(); });
    if (it != remembered_.end()) {
      allowed_ = it->allowed;
      last_allowed_ = it->count;
    } else {
      last_allowed_ = vocab_->trie.allowed(states_, matcher_.state(), allowed_, &last_visited_);
      if (remembered_.size() < 8) remembered_.emplace_back();
      Remembered& r = remembered_[next_slot_++ % remembered_.size()];
      r = Remembered{states_.intern(matcher_.state()), states_.generation(), allowed_, last_allowed_};
    }
  }
  const bool end = broken_ || matcher_.complete() || last_allowed_ == 0;
  for (int32_t e : eos_)
    if (e >= 0 && size_t(e) < allowed_.size()) allowed_[size_t(e)] = end;
  const float none = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i)
    if (!allowed_[i]) logits[i] = none;
}

}  // namespace arch
