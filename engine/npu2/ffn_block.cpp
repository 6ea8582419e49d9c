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
  // Two norms of the residual: a dense FFN and experts side by side (Gemma 4's MoE layers).
  int norms = 0;
  for (const Node* u : open_users(r)) norms += u->op == "rms_norm";
  if (norms > 1) return dense_and_experts_block(block, r, add);
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
  std::vector<const Node*> projections(x_users.begin(), x_users.end());
  auto f = gated_ffn(block, projections, *norm);
  if (!f) return after(add);
  const Projection* down = &f->down;
  // A norm on the FFN's output before the add (Gemma 2/3).
  auto readers = open_users(down->out);
  const Node* post = readers.size() == 1 && readers[0]->op == "rms_norm" && readers[0]->inputs[0] == down->out ? readers[0] : nullptr;
  if (post) readers = open_users(post->outputs[0]);
  if (!add || readers.size() != 1 || readers[0] != add) {
    refuse(block, readers.empty() ? *down->matmul : *readers[0], "the down projection is not added to the residual", "a residual add");
    return after(add);
  }
  if (write_gated_ffn(block, x, *f, "ffn_out") < 0) return -1;
  const int branch = post ? post_norm(block, *post, down->out, "ffn_out") : down->out;
  if (branch < 0) return -1;
  return residual_unit(block, *add, r, branch, "ffn_out");
}

std::optional<BlockReader::GatedFfn> BlockReader::gated_ffn(const std::string& block,
                                                           const std::vector<const Node*>& projections, const Node& at) {
  // Gate and up: views of the projections (two, or one merged matrix).
  std::vector<Part> parts;
  for (const Node* u : projections) {
    auto pr = projection(u, block);
    if (!pr) return std::nullopt;
    for (int leaf : leaves_of(pr->out)) {
      auto part = part_of(*pr, leaf, block);
      if (!part) return std::nullopt;
      parts.push_back(*part);
    }
  }
  if (parts.size() != 2) {
    refuse(block, projections.empty() ? at : *projections[0],
           parts.size() == 1 ? "a non-gated FFN (one up projection)" : "the FFN's input makes " + std::to_string(parts.size()) + " values, not a gate and an up",
           "a SwiGLU FFN: gate and up projections, silu(gate) * up, down");
    return std::nullopt;
  }
  // The gate is the part an activation reads; the activation times the up.
  GatedFfn f;
  for (auto [gp, upp] : {std::pair{parts[0], parts[1]}, std::pair{parts[1], parts[0]}}) {
    auto u = open_users(gp.value);
    if (u.size() == 1 && u[0]->op != "mul") {
      f.act = u[0];
      f.gate = gp;
      f.up = upp;
      break;
    }
  }
  f.mul = f.act ? sole_user(f.act->outputs[0], "mul") : nullptr;
  if (!f.act || !f.mul || !(f.mul->inputs[0] == f.up.value || f.mul->inputs[1] == f.up.value)) {
    refuse(block, *projections[0], "the FFN's two values do not meet as act(gate) * up", "a gated FFN");
    return std::nullopt;
  }
  // The gated activation's unit takes silu (SwiGLU) and GELU, exact or
  // tanh's (GeGLU: Gemma's gelu_pytorch_tanh).
  if (f.act->op != "silu" && f.act->op != "gelu_tanh" && f.act->op != "gelu") {
    refuse(block, *f.act, "a gated FFN of " + f.act->op + "(gate) * up", "a gated-activation unit for " + f.act->op);
    return std::nullopt;
  }
  auto down = projection(sole_user(f.mul->outputs[0], "matmul"), block);
  if (!down) {
    refuse(block, *f.mul, "the gated product does not go to a down projection", "a down matvec");
    return std::nullopt;
  }
  f.down = *down;
  return f;
}

int BlockReader::write_gated_ffn(const std::string& block, int x, const GatedFfn& f, const std::string& out) {
  auto gu = matvec(block, "gate_up", std::vector<Part>{f.gate, f.up}, "gate_up");
  if (!gu) return -1;
  const Slot gs = gu->writes[0], us = gu->writes[1];
  write(*gu, {x}, *f.gate.proj.matmul);
  claim(f.act);
  claim(f.mul);
  // Its columns of the act buffer (another layer's FFN may be wider).
  const Slot act_slot{"act", 0, dim(f.mul->outputs[0], -1)};
  need_buffer("act", opt.profile.activations, act_slot.end);
  Unit s = unit("swiglu", block);
  s.reads = {gs, us};
  s.writes = {act_slot};
  s.attrs = {{"activation", f.act->op}};
  s.values = {name(f.mul->outputs[0])};
  s.ops = {op_str(*f.act), op_str(*f.mul)};
  write(s, {f.gate.value, f.up.value}, *f.act);
  auto dn = matvec(block, "down", {f.down}, out);
  if (!dn) return -1;
  dn->reads = {act_slot};
  write(*dn, {f.mul->outputs[0]}, *f.down.matmul);
  return f.down.out;
}

}  // namespace arch::npu2
