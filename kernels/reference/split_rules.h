// The split rules (engine/core/split.h) the reference ops share: the op
// definitions set OpDef::split to one of these, or to a rule of their own.
#pragma once

#include "engine/core/op.h"

namespace arch {

// Unary and broadcasting ops (add, mul, silu, ...): each input the same
// part along the matching axis, or whole where it broadcasts there.
Result<SplitAnswer> split_elementwise(const SplitQuery& q);
// Ops that mix only the last axis (rms_norm, layer_norm, softmax, topk): a
// part along any other axis of input 0, the rest whole.
Result<SplitAnswer> split_all_but_last(const SplitQuery& q);
// Ops that mix nothing along `axis` except where they act: input 0 split
// like the output, every other input whole (rope: per head).
Result<SplitAnswer> split_like_input0(const SplitQuery& q);

// The shared heads (attention's kv heads, Gated DeltaNet's key heads) that
// `heads` read where each `group` of them reads one (head h reads h / group),
// so long as the heads held read theirs in the same pattern as the whole:
// local head i reading local shared head i / (held heads / held shared).
// More processes than shared heads hold some of them twice.
Result<Part> grouped_heads(const Part& heads, int64_t group, const char* op);

// An embed table's rows as its attributes place them (embed's first_row,
// vocab): rows [first, first + V) of vocab ids.
struct EmbedRows {
  int64_t first = 0, vocab = 0;
};
EmbedRows embed_rows(const Attrs& attrs, int64_t table_rows);

}  // namespace arch
