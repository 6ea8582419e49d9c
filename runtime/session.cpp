#include "runtime/session.h"

#include <cstring>

#include "runtime/forward.h"
#include "kernels/kernels.h"

namespace arch {

Session::Session(const Model& m, int64_t max_context) : m_(m) {
  state_.max_context = max_context;
  if (adaptive_threads() > 1) governor_ = std::make_unique<ThreadGovernor>(adaptive_threads());
}

void Session::check_with(CheckStats* stats) {
  state_.check = stats;
  state_.ops = &op_table();
}

void Session::reset() {
  state_.states.clear();
  position_ = 0;
}

Result<std::map<std::string, Tensor>> Session::step(std::span<const int32_t> ids,
                                                    const std::vector<std::string>& outputs, bool last_only) {
  const Graph& g = m_.graph();
  int64_t n = int64_t(ids.size());
  if (n == 0) return error("a step needs at least one token");
  if (position_ + n > state_.max_context)
    return error("the context is full: " + std::to_string(position_) + " + " + std::to_string(n) +
                 " tokens exceed the " + std::to_string(state_.max_context) + " positions it was sized for");
  int tokens_id = g.find_input("tokens"), positions_id = g.find_input("positions");
  if (tokens_id < 0) return error("graph " + g.name + " has no 'tokens' input");
  std::map<int, Tensor> inputs;
  Tensor tok = Tensor::zeros(DType::I32, {n});
  std::memcpy(tok.data, ids.data(), size_t(n) * 4);
  inputs[tokens_id] = tok;
  if (positions_id >= 0) {
    Tensor pos = Tensor::zeros(DType::I32, {n});
    for (int64_t k = 0; k < n; ++k) pos.i32()[k] = int32_t(position_ + k);
    inputs[positions_id] = pos;
  }
  ARCH_TRY(std::vector<int> keep, output_values(g, outputs));
  const Program& program = last_only && m_.last_logits.graph ? m_.last_logits : m_.program;
  // One token is a decode step, measured by the governor; a prompt chunk
  // runs on the count it has come to (both sum the same on any number).
  if (governor_) {
    if (n == 1) governor_->begin_decode();
    else governor_->begin_prompt();
  }
  ARCH_TRY(auto vals, run_program(program, state_, inputs, n, position_ + n, keep));
  if (governor_ && n == 1) governor_->end_decode();
  position_ += n;
  return collect_outputs(g, vals, outputs);
}

}  // namespace arch
