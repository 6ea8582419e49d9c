// A text encoder's two jobs beside its hidden states: an embedding of a
// text (its token states pooled as the model card says: importer/text/
// pooling_card.h), and a cross-encoder's relevance of passages to a query
// (its sequence-classification head on each (query, passage) pair).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "importer/text/pooling_card.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

// The tokens one input may hold, as its template says (its config field
// input_positions: BERT's table less RoBERTa's offset rows, BART's
// learned positions); 0 where the template does not say.
int64_t text_positions(const Model& m);

// Does the model have this output (in any graph)?
bool has_output(const Model& m, const std::string& name);
// A sequence-classification head: an encoder's `logits` of one score per
// label (a masked-LM head's are one row per token).
bool has_classifier(const Model& m);

// ids -> one vector: pooled from last_hidden_state (mean, cls, max, last)
// or the model's pooler_output; L2-normalised when `normalize`.
Result<std::vector<float>> embed_ids(const Model& m, std::span<const int32_t> ids, Pooling pooling, bool normalize);

// A pair's relevance from its classifier's logits: one label, its sigmoid;
// more, the softmax's share of the last (the "relevant" label of two-way
// heads).
float relevance(std::span<const float> logits);

struct RankedPassage {
  size_t index = 0;             // in the passages given
  float relevance_score = 0;
  std::vector<float> logits;    // the head's, raw
  size_t tokens = 0;            // the pair's, special tokens included
};

// Each passage paired with the query (the tokenizer's pair form, cut to
// the model's positions), scored by the model's `logits`, best first
// (ties keep the given order).
Result<std::vector<RankedPassage>> rerank(const Model& m, const Tokenizer& tok, const std::string& query,
                                          const std::vector<std::string>& passages);

}  // namespace arch
