// A layer's FFN block: its norm; gate and up (the gate is the projection
// the activation reads) as one matvec; act(gate) * up as one unit (silu:
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
    if (u->op == "routed_matmul" || u->op == "topk") return after(add);  // experts: refused with the graph's scan
    if (u->op != "matmul") {
      refuse(block, *u, "the FFN's input is read by " + u->op, "a SwiGLU FFN");
      return after(add);
    }
  }
  if (x_users.size() != 2) {
    refuse(block, x_users.empty() ? *norm : *x_users[0],
           x_users.size() == 1 ? "a non-gated FFN (one up projection)" : "the FFN's input is read by " + std::to_string(x_users.size()) + " projections",
           "a SwiGLU FFN: gate and up projections, silu(gate) * up, down");
    return after(add);
  }
  auto a = projection(x_users[0], block), b = projection(x_users[1], block);
  if (!a || !b) return after(add);
  // The gate is the projection an activation reads; the activation times the up.
  const Node* act = nullptr;
  Projection gate, up;
  for (auto [gp, upp] : {std::pair{*a, *b}, std::pair{*b, *a}}) {
    auto u = open_users(gp.out);
    if (u.size() == 1 && u[0]->op != "mul") {
      act = u[0];
      gate = gp;
      up = upp;
      break;
    }
  }
  const Node* mul = act ? sole_user(act->outputs[0], "mul") : nullptr;
  if (!act || !mul || !(mul->inputs[0] == up.out || mul->inputs[1] == up.out)) {
    refuse(block, *x_users[0], "the two projections do not meet as act(gate) * up", "a gated FFN");
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
  auto gu = matvec(block, "gate_up", {gate, up}, "gate_up");
  if (!gu) return -1;
  const Slot gs = gu->writes[0], us = gu->writes[1];
  write(*gu, {x}, *gate.matmul);
  claim(act);
  claim(mul);
  need_buffer("act", opt.profile.activations, dim(mul->outputs[0], -1));
  Unit s = unit("swiglu", block);
  s.reads = {gs, us};
  s.writes = {Slot{"act"}};
  s.attrs = {{"activation", act->op}};
  s.values = {name(mul->outputs[0])};
  s.ops = {op_str(*act), op_str(*mul)};
  write(s, {gate.out, up.out}, *act);
  auto dn = matvec(block, "down", {*down}, "ffn_out");
  if (!dn) return -1;
  dn->reads = {Slot{"act"}};
  write(*dn, {mul->outputs[0]}, *down->matmul);
  const int branch = post ? post_norm(block, *post, down->out, "ffn_out") : down->out;
  if (branch < 0) return -1;
  return residual_unit(block, *add, r, branch, "ffn_out");
}

}  // namespace arch::npu2
