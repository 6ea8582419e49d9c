// Per-layer inputs (Gemma 4's PLE) and a layer's output scale. Before the
// first layer, each token's per-layer inputs [layers, P]: its own rows of a
// second table, scaled, plus a projection of its embedding, scaled and
// normed per layer, the sum scaled: an embedding unit, a matvec, a head norm
// and an add, into the ple buffer, whose columns [i P, (i + 1) P) are layer
// i's input. After a layer's FFN: act(residual @ gate^T) * its input, a
// projection, a norm, the residual add. Then the residual times a number or
// a one-element weight (Gemma 4's layer_scalar) as a scale unit.
#include "engine/npu2/block_reader.h"

namespace arch::npu2 {

int BlockReader::per_layer_inputs(int tokens, int h) {
  const Node* pm = nullptr;
  for (const Node* u : open_users(h))
    if (u->op == "matmul") pm = u;
  if (!pm) return h;
  const std::string block = "per_layer_inputs";
  auto fail = [&](const Node& at, const std::string& reason) {
    refuse(block, at, reason, "per-layer inputs: the token's rows of a table, scaled, plus a scaled projection of its embedding normed per layer, the sum scaled");
    return -1;
  };
  auto pr = projection(pm, block);
  if (!pr) return -1;
  auto by_number = [&](const Node* n, int v) -> std::optional<double> {
    return n && n->op == "mul" && n->inputs.size() == 2 ? g.number_of(other_input(*n, v)) : std::nullopt;
  };
  const Node* pscale = sole_user(pr->out, "mul");
  const auto pby = by_number(pscale, pr->out);
  const Node* prs = pby ? sole_user(pscale->outputs[0], "reshape") : nullptr;
  const Node* pnorm = prs ? sole_user(prs->outputs[0], "rms_norm") : nullptr;
  const Node* sum = pnorm ? sole_user(pnorm->outputs[0], "add") : nullptr;
  if (!sum || pnorm->inputs.size() < 2 || pnorm->inputs[1] < 0 || g.values[prs->outputs[0]].type.shape.size() != 3)
    return fail(*pm, "the embedding's projection is not scaled, split per layer and normed with a weight");
  const Node* ors = producer(other_input(*sum, pnorm->outputs[0]));
  const Node* omul = ors && ors->op == "reshape" ? producer(ors->inputs[0]) : nullptr;
  const Node* oembed = omul && omul->op == "mul" ? producer(omul->inputs[0]) : nullptr;
  const auto oby = oembed ? by_number(omul, oembed->outputs[0]) : std::nullopt;
  if (!oby || oembed->op != "embed" || oembed->inputs[1] != tokens)
    return fail(*sum, "the projection is not added to the token's own scaled rows of a table");
  const Node* fin = sole_user(sum->outputs[0], "mul");
  const auto fby = by_number(fin, sum->outputs[0]);
  if (!fby) return fail(*sum, "the per-layer inputs' sum is not scaled by a number");
  const int64_t L = dim(prs->outputs[0], 1), P = dim(prs->outputs[0], 2);
  auto claim_number = [&](const Node* n, int v) {
    claim(n);
    claim(producer(other_input(*n, v)));
  };
  // The token's own rows, scaled.
  auto table = bind(block, *oembed, "table", {oembed->inputs[0]});
  if (!table) return -1;
  need_buffer("ple", opt.profile.activations, L * P);
  {
    Unit u = unit("embedding", block);
    u.reads = {Slot{"ids"}};
    u.writes = {Slot{"ple"}};
    u.constants = {*table};
    u.attrs = {{"scale", *oby}};
    u.values = {name(omul->outputs[0])};
    u.ops = {op_str(*oembed), op_str(*omul)};
    claim(oembed);
    claim_number(omul, oembed->outputs[0]);
    write(u, {tokens}, *oembed);
  }
  // The embedding's projection, scaled, normed per layer.
  auto m = matvec(block, "ple", {*pr}, "ple_proj");
  if (!m) return -1;
  m->reads = {Slot{"residual"}};
  m->attrs["scale"] = *pby;
  m->values = {name(pscale->outputs[0])};
  m->ops.push_back(op_str(*pscale));
  claim_number(pscale, pr->out);
  write(*m, {h}, *pm);
  {
    auto w = bind(block, *pnorm, "weight", {pnorm->inputs[1]});
    if (!w) return -1;
    Unit u = unit("head_norm", block);
    u.reads = {Slot{"ple_proj"}};
    u.writes = {Slot{"ple_proj"}};
    u.constants = {*w};
    u.attrs = {{"eps", pnorm->attrs.value("eps", 1e-6)}, {"heads", L}, {"head_dim", P}};
    u.values = {name(pnorm->outputs[0])};
    u.ops = {op_str(*prs), op_str(*pnorm)};
    claim(prs);
    claim(pnorm);
    write(u, {pscale->outputs[0]}, *pnorm);
  }
  {
    Unit u = unit("add", block);
    u.reads = {Slot{"ple_proj"}, Slot{"ple"}};
    u.writes = {Slot{"ple"}};
    u.attrs = {{"scale", *fby}};
    u.values = {name(fin->outputs[0])};
    u.ops = {op_str(*ors), op_str(*sum), op_str(*fin)};
    claim(ors);
    claim(sum);
    claim_number(fin, sum->outputs[0]);
    write(u, {pnorm->outputs[0], omul->outputs[0]}, *sum);
  }
  // Layer i's input: columns [i P, (i + 1) P) of the ple buffer.
  for (const Node* s : open_users(fin->outputs[0])) {
    const int64_t i = s->attrs.value("index", int64_t(-1));
    if (s->op != "select" || s->attrs.value("axis", int64_t(0)) != 1 || i < 0 || i >= L)
      return fail(*s, "the per-layer inputs are read by " + s->op + ", not one layer's slice");
    claim(s);
    holds[key(Slot{"ple", i * P, (i + 1) * P})] = s->outputs[0];
  }
  return h;
}

int BlockReader::layer_end(int r, int l) {
  if (r < 0) return r;
  const std::string block = "layers." + std::to_string(l) + ".per_layer";
  // A projection of the residual: the layer's per-layer input block.
  const Node* gm = nullptr;
  for (const Node* u : open_users(r))
    if (u->op == "matmul") gm = u;
  if (gm) {
    const Node* add = residual_add(r);
    auto gate = projection(gm, block);
    if (!gate) return after(add);
    const Node* act = nullptr;
    for (const char* op : {"gelu_tanh", "gelu", "silu"})
      if (!act) act = sole_user(gate->out, op);
    const Node* mul = act ? sole_user(act->outputs[0], "mul") : nullptr;
    const int input = mul ? other_input(*mul, act->outputs[0]) : -1;
    const Node* sel = producer(input);
    std::optional<Projection> down = mul ? projection(sole_user(mul->outputs[0], "matmul"), block) : std::nullopt;
    auto readers = down ? open_users(down->out) : std::vector<const Node*>{};
    const Node* post = readers.size() == 1 && readers[0]->op == "rms_norm" ? readers[0] : nullptr;
    if (post) readers = open_users(post->outputs[0]);
    if (!down || !sel || sel->op != "select" || !add || readers.size() != 1 || readers[0] != add) {
      refuse(block, *gm, "a projection of the residual that is not act(residual @ gate^T) * the layer's per-layer input, projected, added",
             "a per-layer input block");
      return after(add);
    }
    const int64_t P = dim(input, -1);
    const Slot in_slot{"ple", sel->attrs.value("index", int64_t(0)) * P, (sel->attrs.value("index", int64_t(0)) + 1) * P};
    auto gu = matvec(block, "ple_gate", {*gate}, "ple_gate");
    if (!gu) return -1;
    gu->reads = {Slot{"residual"}};
    write(*gu, {r}, *gm);
    need_buffer("ple_act", opt.profile.activations, P);
    Unit s = unit("swiglu", block);
    s.reads = {Slot{"ple_gate"}, in_slot};
    s.writes = {Slot{"ple_act"}};
    s.attrs = {{"activation", act->op}};
    s.values = {name(mul->outputs[0])};
    s.ops = {op_str(*act), op_str(*mul)};
    claim(act);
    claim(mul);
    write(s, {gate->out, input}, *act);
    auto dn = matvec(block, "ple_out", {*down}, "ple_out");
    if (!dn) return -1;
    dn->reads = {Slot{"ple_act"}};
    write(*dn, {mul->outputs[0]}, *down->matmul);
    const int branch = post ? this->post_norm(block, *post, down->out, "ple_out") : down->out;
    if (branch < 0) return -1;
    r = residual_unit(block, *add, r, branch, "ple_out");
  }
  // The layer's output scaled: by a number, or a one-element weight.
  auto us = open_users(r);
  if (us.size() == 1 && us[0]->op == "mul" && us[0]->inputs.size() == 2) {
    const Node* m = us[0];
    const int other = other_input(*m, r);
    const auto number = g.number_of(other);
    const WeightRef* w = weight(other);
    if (!number && !(w && g.values[other].type.shape.size() == 1 && dim(other, 0) == 1)) return r;  // not a scale: the next block says what it is
    Unit u = unit("scale", "layers." + std::to_string(l) + ".scale");
    u.reads = {Slot{"residual"}};
    u.writes = {Slot{"residual"}};
    if (number) {
      u.attrs = {{"scale", *number}};
      claim(producer(other));
    } else {
      auto c = bind(u.block, *m, "scale", {other});
      if (!c) return -1;
      c->dtype = "f32";  // one number: f32 costs nothing
      u.constants = {*c};
    }
    u.values = {name(m->outputs[0])};
    u.ops = {op_str(*m)};
    claim(m);
    write(u, {r}, *m);
    r = m->outputs[0];
  }
  return r;
}

}  // namespace arch::npu2
