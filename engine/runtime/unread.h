// Checkpoint tensors no graph of a template reads. A template may say why
// (its `unread` declarations; a wrapper's registry entry for what it holds
// beside the family's model); the rest are what a run warns of, what
// --strict refuses, and what refuses a checkpoint its tensors alone matched
// to a family: the template would compute without them, and they are the
// tell of another architecture.
#pragma once

#include <string>
#include <vector>

#include "dsl/ast.h"
#include "engine/runtime/dispatch.h"

namespace arch {

// The registry's note as a template's `unread` declaration.
dsl::UnreadDecl unread_decl(const UnreadNote& note);

// Those of `unread` that no declaration explains, in their order.
std::vector<std::string> unexplained_tensors(const std::vector<std::string>& unread,
                                             const std::vector<dsl::UnreadDecl>& declared);

// Tensor names as one short line, for a checkpoint may hold thousands: the
// names that differ only in their numbers folded into one
// ("model.layers.*.self_attn.q_proj.bias (24)"), at most `groups` of them,
// then how many tensors more.
std::string summarize_tensors(const std::vector<std::string>& names, size_t groups = 4);

}  // namespace arch
