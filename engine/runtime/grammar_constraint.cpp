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
  last_allowed_ = broken_ ? 0 : vocab_->trie.allowed(matcher_, matcher_.state(), allowed_, &last_visited_);
  const bool end = broken_ || matcher_.complete() || last_allowed_ == 0;
  for (int32_t e : eos_)
    if (e >= 0 && size_t(e) < allowed_.size()) allowed_[size_t(e)] = end;
  const float none = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i)
    if (!allowed_[i]) logits[i] = none;
}

}  // namespace arch
