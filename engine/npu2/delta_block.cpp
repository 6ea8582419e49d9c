// A layer's Gated-DeltaNet block (seeds/003's mixer beside attention): its
// norm; the block's input projections as one matvec, each part's rows bound
// as views so that the query, key and value come out side by side for the
// convolution, then the output gate z, beta's and the decay's inputs; the
// short causal convolution with its SiLU (conv_bias_silu) as one unit
// holding its last inputs; the query's and key's l2 norms (head norms
// without a weight, scaled); the gates (gdn_gating: the decay -exp(A)
// softplus(a + dt_bias) and beta = sigmoid(b)); the delta rule's step,
// holding each value head's matrix; the gated norm rms_norm(o) * silu(z);
// the output projection; the residual add. What it reads is found from the
// delta rule's inputs back, so the template's names do not matter.
#include <algorithm>

#include "engine/npu2/block_reader.h"

namespace arch::npu2 {

int BlockReader::mixer_block(int r, int l) {
  const Node* add = residual_add(r);
  // The block's norm output reaching a delta rule before the add: a
  // Gated-DeltaNet block.
  for (const Node* u : open_users(r))
    if (u->op == "rms_norm" && reached(u->outputs[0], "gated_delta_rule", add)) return delta_block(r, l);
  return attention_block(r, l);
}

int BlockReader::delta_block(int r, int l) {
  const std::string block = "layers." + std::to_string(l) + ".delta_net";
  const Node* add = residual_add(r);
  const Node* norm = open_block(r, block, add);
  if (!norm) return after(add);
  const int x = norm->outputs[0];
  const Node* rule = reached(x, "gated_delta_rule", add);
  if (!rule || rule->inputs.size() < 5) return after(add);
  auto fail = [&](const Node& at, const std::string& reason, const std::string& needed) {
    refuse(block, at, reason, needed);
    return after(add);
  };
  // The block's input projections and the views of them its ops read.
  std::vector<Part> leaves;
  for (const Node* u : open_users(x)) {
    auto pr = projection(u, block);
    if (!pr) return u->op == "matmul" ? after(add) : fail(*u, "the norm's output is read by " + u->op, "projections of the block's input");
    for (int leaf : leaves_of(pr->out)) {
      auto part = part_of(*pr, leaf, block);
      if (!part) return after(add);
      leaves.push_back(*part);
    }
  }
  auto leaf_of = [&](int v) -> const Part* {
    for (const auto& p : leaves)
      if (p.value == v) return &p;
    return nullptr;
  };

  // The convolution: the delta rule's value is a view of silu(conv(...)).
  const int value_in = rule->inputs[2];
  const Node* act = nullptr;
  for (const Node* m = producer(value_in); m; m = m->inputs.empty() ? nullptr : producer(m->inputs[0])) {
    if (m->op == "reshape" || m->op == "slice") continue;
    act = m;
    break;
  }
  if (!act || act->op != "silu")
    return fail(*rule, "the delta rule's values are not a view of silu(a convolution)", "a convolution with its SiLU before the delta rule");
  const Node* conv = producer(act->inputs[0]);
  const Node* conv_bias = nullptr;
  if (conv && conv->op == "add") {
    conv_bias = conv;
    conv = producer(weight(conv->inputs[1]) ? conv->inputs[0] : conv->inputs[1]);
    const int b = other_input(*conv_bias, conv ? conv->outputs[0] : -1);
    if (!weight(b) || g.values[b].type.shape.size() != 1)
      return fail(*conv_bias, "a convolution's output plus something not a bias", "a bias vector");
  }
  if (!conv || conv->op != "causal_conv1d")
    return fail(*act, "the SiLU before the delta rule does not read a causal convolution", "a causal short convolution (conv_bias_silu)");
  // Its inputs: the projections' parts, in the order the convolution reads them.
  std::vector<int> conv_inputs;
  const Node* concat = producer(conv->inputs[0]);
  const int64_t concat_axis = concat ? concat->attrs.value("axis", int64_t(0)) : 0;
  if (concat && concat->op == "concat" && (concat_axis == 1 || concat_axis == -1)) conv_inputs = concat->inputs;
  else concat = nullptr, conv_inputs = {conv->inputs[0]};
  for (int v : conv_inputs)
    if (!leaf_of(v)) return fail(*conv, "the convolution reads '" + name(v) + "', not a view of the block's projections", "the convolution over the projections' query, key and value");
  const Node* w_reshape = producer(conv->inputs[1]);
  const int conv_w = w_reshape && w_reshape->op == "reshape" ? w_reshape->inputs[0] : conv->inputs[1];
  if (!weight(conv_w)) return fail(*conv, "its weight is computed, not a checkpoint tensor", "a constant bound to a checkpoint tensor");
  const int64_t C = dim(conv->outputs[0], 1), K = dim(conv->inputs[1], 1);

  // The query's and key's norms: rms_norm without a weight, then numbers.
  struct Normed {
    int in = -1, out = -1;
    const Node* norm = nullptr;
    std::vector<const Node*> scales;
    std::vector<double> by;
  };
  auto normed = [&](int v) {
    Normed n;
    n.out = n.in = v;
    for (const Node* m = producer(v); m && m->op == "mul";) {
      auto number = g.number_of(m->inputs[1]);
      if (!number) break;
      n.scales.insert(n.scales.begin(), m);
      n.by.insert(n.by.begin(), *number);
      n.in = m->inputs[0];
      m = producer(n.in);
    }
    const Node* rn = producer(n.in);
    if (rn && rn->op == "rms_norm" && (rn->inputs.size() < 2 || rn->inputs[1] < 0)) {
      n.norm = rn;
      n.in = rn->inputs[0];
    } else if (!n.scales.empty()) {
      n.in = v, n.scales.clear(), n.by.clear();
    }
    return n;
  };
  const Normed qn = normed(rule->inputs[0]), kn = normed(rule->inputs[1]);
  // q, k and v: runs of the convolution's output.
  std::vector<std::optional<Slot>> qkv_slots;
  for (int v : {qn.in, kn.in, value_in}) {
    auto cols = columns_of(v, act->outputs[0]);
    qkv_slots.push_back(cols ? run_of("conv", *cols) : std::nullopt);
    if (!qkv_slots.back())
      return fail(*rule, "the delta rule's '" + name(v) + "' is not a run of the convolution's channels", "q, k and v as channel ranges of the convolution");
  }

  // The gates: decay = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b).
  const Node* beta = producer(rule->inputs[4]);
  const Node* decay = producer(rule->inputs[3]);
  const Node *soft = nullptr, *neg = nullptr, *ex = nullptr, *shift = nullptr;
  if (decay && decay->op == "mul")
    for (int i : {0, 1}) {
      const Node* a = producer(decay->inputs[size_t(i)]);
      const Node* b = producer(decay->inputs[size_t(1 - i)]);
      if (a && b && a->op == "neg" && b->op == "softplus") neg = a, soft = b;
    }
  if (neg) ex = producer(neg->inputs[0]);
  if (soft) shift = producer(soft->inputs[0]);
  int a_leaf = -1, dt_bias = -1;
  if (shift && shift->op == "add")
    for (int i : {0, 1})
      if (leaf_of(shift->inputs[size_t(i)]) && weight(shift->inputs[size_t(1 - i)]))
        a_leaf = shift->inputs[size_t(i)], dt_bias = shift->inputs[size_t(1 - i)];
  if (!ex || ex->op != "exp" || !weight(ex->inputs[0]) || a_leaf < 0 || !beta || beta->op != "sigmoid" || !leaf_of(beta->inputs[0]))
    return fail(*rule, "the delta rule's gates are not -exp(A_log) * softplus(a + dt_bias) and sigmoid(b) of the block's projections",
                "a gates unit (gdn_gating) for these gates");
  const int b_leaf = beta->inputs[0];

  // After the rule: rms_norm(o, w) * silu(z), merged, the output projection, the add.
  const Node* onorm = sole_user(rule->outputs[0], "rms_norm");
  const Node* gmul = onorm ? sole_user(onorm->outputs[0], "mul") : nullptr;
  const Node* zact = gmul ? producer(other_input(*gmul, onorm->outputs[0])) : nullptr;
  if (!onorm || onorm->inputs.size() < 2 || !weight(onorm->inputs[1]) || !gmul || !zact || zact->op != "silu" || !leaf_of(zact->inputs[0]))
    return fail(onorm ? *onorm : *rule, "the delta rule's output is not rms_norm(o, w) * silu(z) of the block's projections",
                "a gated norm unit for this output");
  const int z_leaf = zact->inputs[0];
  const Node* merge = sole_user(gmul->outputs[0], "reshape");
  std::optional<Projection> o = merge ? projection(sole_user(merge->outputs[0], "matmul"), block) : std::nullopt;
  if (!o) return fail(*gmul, "the gated norm's heads do not go straight to an output projection", "heads merged into one matvec");
  if (!add || open_users(o->out).size() != 1 || open_users(o->out)[0] != add)
    return fail(*o->matmul, "the output projection is not added to the residual", "a residual add");
  // Every view of the projections is one of these.
  std::vector<Part> parts;
  for (int v : conv_inputs) parts.push_back(*leaf_of(v));
  for (int v : {z_leaf, b_leaf, a_leaf}) parts.push_back(*leaf_of(v));
  for (const auto& p : leaves)
    if (std::none_of(parts.begin(), parts.end(), [&](const Part& q) { return q.value == p.value; }))
      return fail(*p.proj.matmul, "'" + name(p.value) + "' is read by neither the convolution nor the gates nor the gated norm",
                  "a unit reading it");
  const int64_t KH = dim(rule->inputs[0], 1), Dk = dim(rule->inputs[0], 2), VH = dim(value_in, 1), Dv = dim(value_in, 2);

  // The units, in the engine's order.
  auto in = matvec(block, "qkvz", parts, "delta_in");
  if (!in) return -1;
  const std::vector<Slot> in_slots = in->writes;
  write(*in, {x}, *parts[0].proj.matmul);
  const size_t nc = conv_inputs.size();
  const Slot z_slot = in_slots[nc], b_slot = in_slots[nc + 1], a_slot = in_slots[nc + 2];
  {
    auto w = bind(block, *conv, "weight", {conv_w});
    if (!w) return -1;
    w->shape = {C, K};
    std::vector<Constant> constants = {*w};
    if (conv_bias) {
      auto b = bind(block, *conv_bias, "bias", {other_input(*conv_bias, conv->outputs[0])});
      if (!b) return -1;
      constants.push_back(*b);
    }
    const int index = int(p.states.size());
    p.states.push_back(State{index, "conv", {K - 1, C}, opt.profile.conv_state});
    need_buffer("conv", opt.profile.activations, C);
    Unit u = unit("conv", block);
    u.reads = {Slot{"delta_in", 0, in_slots[nc - 1].end}};
    u.writes = {Slot{"conv"}};
    u.constants = constants;
    u.attrs = {{"state", index}, {"kernel", K}, {"channels", C}, {"activation", "silu"}};
    u.values = {name(act->outputs[0])};
    for (const Node* n : {concat, w_reshape, conv, conv_bias, act})
      if (n) u.ops.push_back(op_str(*n)), claim(n);
    for (int v : {qn.in, kn.in, value_in}) {
      auto moves = moves_between(v, act->outputs[0]);
      for (auto it = moves.rbegin(); it != moves.rend(); ++it)
        if (!claimed[node_index(*it)]) u.ops.push_back(op_str(**it)), claim(*it);
    }
    // It reads the parts the matvec has just written side by side, in its order.
    write(u, {-1}, *conv);
    for (size_t i = 0; i < 3; ++i) holds[key(*qkv_slots[i])] = std::vector<int>{qn.in, kn.in, value_in}[i];
  }
  // The query's and key's l2 norms, in place.
  for (const Normed* n : {&qn, &kn}) {
    if (!n->norm) continue;
    const Slot s = *qkv_slots[n == &qn ? 0 : 1];
    Unit u = unit("head_norm", block);
    u.reads = {s};
    u.writes = {s};
    u.attrs = {{"eps", n->norm->attrs.value("eps", 1e-6)}, {"heads", dim(n->in, 1)}, {"head_dim", dim(n->in, 2)},
               {"scales", n->by}};
    u.values = {name(n->out)};
    u.ops = {op_str(*n->norm)};
    claim(n->norm);
    for (const Node* m : n->scales) {
      u.ops.push_back(op_str(*m));
      claim(m);
      claim(producer(m->inputs[1]));
    }
    write(u, {n->in}, *n->norm);
  }
  // The gates.
  {
    auto a_log = bind(block, *ex, "a_log", {ex->inputs[0]});
    auto dt = bind(block, *shift, "dt_bias", {dt_bias});
    if (!a_log || !dt) return -1;
    a_log->dtype = dt->dtype = "f32";  // a number a value head: f32 costs nothing
    need_buffer("gates", opt.profile.output_of("gates", false), 2 * VH);
    Unit u = unit("gates", block);
    u.reads = {a_slot, b_slot};
    u.writes = {Slot{"gates", 0, VH}, Slot{"gates", VH, 2 * VH}};
    u.constants = {*a_log, *dt};
    u.values = {name(decay->outputs[0]), name(beta->outputs[0])};
    for (const Node* n : {ex, neg, shift, soft, decay, beta}) u.ops.push_back(op_str(*n)), claim(n);
    write(u, {a_leaf, b_leaf}, *decay);
  }
  // The delta rule's step.
  {
    const int index = int(p.states.size());
    p.states.push_back(State{index, "recurrent", {VH, Dk, Dv}, opt.profile.recurrent_state});
    need_buffer("delta", opt.profile.activations, VH * Dv);
    Unit u = unit("delta_rule", block);
    u.reads = {*qkv_slots[0], *qkv_slots[1], *qkv_slots[2], Slot{"gates", 0, VH}, Slot{"gates", VH, 2 * VH}};
    u.writes = {Slot{"delta"}};
    u.attrs = {{"state", index}, {"heads", VH}, {"key_heads", KH}, {"key_dim", Dk}, {"value_dim", Dv}};
    u.values = {name(rule->outputs[0])};
    u.ops = {op_str(*rule)};
    claim(rule);
    write(u, {rule->inputs[0], rule->inputs[1], value_in, rule->inputs[3], rule->inputs[4]}, *rule);
  }
  // The gated norm, in place.
  {
    auto w = bind(block, *onorm, "weight", {onorm->inputs[1]});
    if (!w) return -1;
    Unit u = unit("gated_norm", block);
    u.reads = {Slot{"delta"}, z_slot};
    u.writes = {Slot{"delta"}};
    u.constants = {*w};
    u.attrs = {{"eps", onorm->attrs.value("eps", 1e-6)}, {"heads", VH}, {"head_dim", Dv}, {"activation", "silu"}};
    u.values = {name(gmul->outputs[0])};
    u.ops = {op_str(*onorm), op_str(*zact), op_str(*gmul)};
    for (const Node* n : {onorm, zact, gmul}) claim(n);
    write(u, {rule->outputs[0], z_leaf}, *onorm);
  }
  claim(merge);
  auto out = matvec(block, "o", {*o}, "attn_out");
  if (!out) return -1;
  out->reads = {Slot{"delta"}};
  out->ops.insert(out->ops.begin(), op_str(*merge));
  write(*out, {gmul->outputs[0]}, *o->matmul);
  return residual_unit(block, *add, r, o->out, "attn_out");
}

}  // namespace arch::npu2
