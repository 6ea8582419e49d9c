// A layer's FFN block: its norm; gate and up (two projections, or the two
// halves of one merged matrix; the gate is the one the activation reads) as
// one matvec; act(gate) * up as one unit (silu:
// SwiGLU; gelu or gelu_tanh: GeGLU); the down projection; the residual
// add. Anything else is refused by name.
#include "engine/npu2/block_reader.h"

namespace arch::npu2 {

// The FFN block of layer `l`: the residual after it, or -1.
int BlockReader::ffn_block(int r, int l) {
  const std::string block = "layers." + std::to_string(l) + ".ffn";
  const Node* add = residual_add(r);
  const Node* norm = open_block(r, block, add);
  if (!norm) return after(add);
  const int x = norm->outputs[0];
  auto x_users = open_users(x);
  for (const Node* u : x_users) {
    if (u->op == "routed_matmul") return experts_block(block, r, norm, add);
    if (u->op != "matmul") {
      refuse(block, *u, "the FFN's input is read by " + u->op, "a SwiGLU FFN");
      return after(add);
    }
  }
  // Gate and up: views of the norm's projections (two, or one merged matrix).
  std::vector<Part> parts;
  for (const Node* u : x_users) {
    auto pr = projection(u, block);
    if (!pr) return after(add);
    for (int leaf : leaves_of(pr->out)) {
      auto part = part_of(*pr, leaf, block);
      if (!part) return after(add);
      parts.push_back(*part);
    }
  }
  if (parts.size() != 2) {
    refuse(block, x_users.empty() ? *norm : *x_users[0],
           parts.size() == 1 ? "a non-gated FFN (one up projection)" : "the FFN's input makes " + std::to_string(parts.size()) + " values, not a gate and an up",
           "a SwiGLU FFN: gate and up projections, silu(gate) * up, down");
    return after(add);
  }
  // The gate is the part an activation reads; the activation times the up.
  const Node* act = nullptr;
  Part gate, up;
  for (auto [gp, upp] : {std::pair{parts[0], parts[1]}, std::pair{parts[1], parts[0]}}) {
    auto u = open_users(gp.value);
    if (u.size() == 1 && u[0]->op != "mul") {
      act = u[0];
      gate = gp;
      up = upp;
      break;
    }
  }
  const Node* mul = act ? sole_user(act->outputs[0], "mul") : nullptr;
  if (!act || !mul || !(mul->inputs[0] == up.value || mul->inputs[1] == up.value)) {
    refuse(block, *x_users[0], "the FFN's two values do not meet as act(gate) * up", "a gated FFN");
    return after(add);
  }
  // The gated activation's unit takes silu (SwiGLU) and GELU, exact or
  // tanh's (GeGLU: Gemma's gelu_pytorch_tanh).
  if (act->op != "silu" && act->op != "gelu_tanh" && act->op != "gelu") {
    refuse(block, *act, "a gated FFN of " + act->op + "(gate) * up", "a gated-activation unit for " + act->op);
    return after(add);
  }
  auto down = projection(sole_user(mul->outputs[0], "matmul"), block);
  if (!down) {
    refuse(block, *mul, "the gated product does not go to a down projection", "a down matvec");
    return after(add);
  }
  // A norm on the FFN's output before the add (Gemma 2/3).
  auto readers = open_users(down->out);
  const Node* post = readers.size() == 1 && readers[0]->op == "rms_norm" && readers[0]->inputs[0] == down->out ? readers[0] : nullptr;
  if (post) readers = open_users(post->outputs[0]);
  if (!add || readers.size() != 1 || readers[0] != add) {
    refuse(block, readers.empty() ? *down->matmul : *readers[0], "the down projection is not added to the residual", "a residual add");
    return after(add);
  }
  auto gu = matvec(block, "gate_up", std::vector<Part>{gate, up}, "gate_up");
  if (!gu) return -1;
  const Slot gs = gu->writes[0], us = gu->writes[1];
  write(*gu, {x}, *gate.proj.matmul);
  claim(act);
  claim(mul);
  // Its columns of the act buffer (another layer's FFN may be wider).
  const Slot act_slot{"act", 0, dim(mul->outputs[0], -1)};
  need_buffer("act", opt.profile.activations, act_slot.end);
  Unit s = unit("swiglu", block);
  s.reads = {gs, us};
  s.writes = {act_slot};
  s.attrs = {{"activation", act->op}};
  s.values = {name(mul->outputs[0])};
  s.ops = {op_str(*act), op_str(*mul)};
  write(s, {gate.value, up.value}, *act);
  auto dn = matvec(block, "down", {*down}, "ffn_out");
  if (!dn) return -1;
  dn->reads = {act_slot};
  write(*dn, {mul->outputs[0]}, *down->matmul);
  const int branch = post ? post_norm(block, *post, down->out, "ffn_out") : down->out;
  if (branch < 0) return -1;
  return residual_unit(block, *add, r, branch, "ffn_out");
}

}  // namespace arch::npu2
