// A template's graph checked against a checkpoint, everything at once
// (archc --check --model): weights it reads that the checkpoint lacks,
// shapes that disagree, checkpoint tensors nothing reads (unless the
// template says why), and norm weights
// whose values contradict how the template reads them (w vs 1 + w).
#pragma once

#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "dsl/ast.h"
#include "importer/checkpoint/checkpoint.h"

namespace arch {

struct CheckpointFindings {
  std::vector<std::string> errors;    // "file:line:col: error: ..."
  std::vector<std::string> warnings;  // "file:line:col: warning: ..." or "DIR: warning: ..."
  std::vector<std::string> notes;     // "DIR: note: ...": what the template says it leaves unread
};

// `graphs`: every graph of one template (a tensor one graph reads is read).
// `unread`: the template's `unread` declarations: tensors under one are
// noted once per declaration, with its reason, not warned of one by one.
CheckpointFindings check_against_checkpoint(const std::vector<const Graph*>& graphs, const Checkpoint& ckpt,
                                            const std::vector<dsl::UnreadDecl>& unread = {});
inline CheckpointFindings check_against_checkpoint(const Graph& g, const Checkpoint& ckpt) {
  return check_against_checkpoint(std::vector<const Graph*>{&g}, ckpt);
}

// Applies the registry's view of the checkpoint (a wrapper's nested text
// model, a family's tensor prefixes), as loading a model would; returns the
// registry's notes on what the wrapper holds beside the family's model (an
// image tower), as `unread` declarations for check_against_checkpoint.
Result<std::vector<dsl::UnreadDecl>> apply_family_view(Checkpoint& ckpt, const std::string& families_dir = "");

}  // namespace arch
