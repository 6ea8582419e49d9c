// A loaded model's step graph lowered for the NPU2 engine (engine/npu2/lower.h),
// with the numeric profile beside its template; what `archc lower` and
// `archrun generate --backend npu2 | --numerics npu2` share.
#pragma once

#include <string>

#include "engine/npu2/lower.h"
#include "engine/runtime/model.h"

namespace arch {

struct Npu2Options {
  int64_t max_context = 0;  // 0: the config's max_position_embeddings, at most 4096
  int64_t chunk = 64;       // the prompt version's rows
  std::string profile;      // a profile file ("": the one beside the template, or the defaults)
};

// The lowering of `m`'s token graph (the graph generation steps through).
// Refusals are in the result; an error is for what is not a refusal (no
// token graph, a bad profile file).
Result<npu2::Lowering> lower_model(const Model& m, const Npu2Options& opt);
// The same on a graph of `m`'s family (a rewrite hook sees the graph
// before the model is whole).
Result<npu2::Lowering> lower_graph(const Graph& step, const std::string& template_path, const std::string& family,
                                   int64_t config_max_positions, const Npu2Options& opt);

// The rewrite that makes the host reference compute under the NPU2
// numerics (LoadOptions::rewrite): each graph lowered with `opt`, then
// rounded where its program stores bf16; a refusal is an error naming
// `model` and what was refused.
GraphRewrite npu2_numerics_rewrite(const std::string& model, const Npu2Options& opt);

// "MODEL: the NPU2 engine has no unit for ...": the refusals, one per line.
std::string refusal_message(const std::string& model, const npu2::Lowering& l);

}  // namespace arch
