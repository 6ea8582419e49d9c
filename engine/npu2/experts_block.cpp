// A layer's experts FFN (a mixture of experts): the router's logits (and a
// shared expert's gate logit beside them) as one matvec; the route (softmax,
// the top k, their weights as the graph takes them: the top-k values or the
// scores gathered at the chosen experts, renormalised, scaled) as one unit
// writing each row's expert numbers and weights; each chosen expert's gate
// and up as one routed matvec reading only the k experts' rows, the gated
// activation, their down projections as another; a shared expert as a
// SwiGLU FFN; the weighted sum of the experts' outputs plus the (gated)
// shared expert's as one unit; the residual add.
#include <algorithm>

#include "engine/npu2/block_reader.h"

namespace arch::npu2 {

namespace {

int other_input(const Node& n, int v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; }

}  // namespace

int BlockReader::experts_block(const std::string& block, int r, const Node* norm, const Node* add) {
  const int x = norm->outputs[0];
  auto fail = [&](const Node& at, const std::string& reason, const std::string& needed) {
    refuse(block, at, "experts: " + reason, needed);
    return after(add);
  };
  // The routed matmuls reading x (gate and up) and the one after them (down).
  std::vector<const Node*> routed, projections;
  for (const Node* u : open_users(x)) {
    if (u->op == "routed_matmul" && u->inputs[0] == x) routed.push_back(u);
    else if (u->op == "matmul") projections.push_back(u);
    else return fail(*u, "the FFN's input is read by " + u->op, "an experts unit reading it");
  }
  if (routed.size() != 2)
    return fail(*routed[0], std::to_string(routed.size()) + " routed matmuls read the FFN's input, not a gate and an up",
                "a routed gate and up");
  const int ids = routed[0]->inputs[2];
  if (routed[1]->inputs[2] != ids) return fail(*routed[1], "the gate and up are routed by different choices", "one route");
  const Node *act = nullptr, *gate = nullptr, *up = nullptr;
  for (int i : {0, 1})
    for (const char* op : {"silu", "gelu_tanh", "gelu"})
      if (const Node* a = act ? nullptr : sole_user(routed[size_t(i)]->outputs[0], op))
        act = a, gate = routed[size_t(i)], up = routed[size_t(1 - i)];
  const Node* gmul = act ? sole_user(act->outputs[0], "mul") : nullptr;
  if (!gmul || other_input(*gmul, act->outputs[0]) != up->outputs[0])
    return fail(*routed[0], "the routed gate and up do not meet as act(gate) * up", "a gated activation of the experts");
  const Node* down = sole_user(gmul->outputs[0], "routed_matmul");
  if (!down || down->inputs[2] != ids) return fail(*gmul, "the experts' gated product does not go to a routed down projection", "a routed down");
  // The combine: sum(down * reshape(weights, [seq, k, 1]), axis 1).
  const Node* wmul = sole_user(down->outputs[0], "mul");
  const Node* wshape = wmul ? producer(other_input(*wmul, down->outputs[0])) : nullptr;
  const Node* wsum = wmul ? sole_user(wmul->outputs[0], "sum") : nullptr;
  if (!wsum || !wshape || wshape->op != "reshape" || wsum->attrs.value("axis", int64_t(-1)) != 1 || wsum->attrs.value("keepdim", false))
    return fail(*down, "the experts' outputs are not summed by their weights (sum(down * weights, axis 1))", "a weighted sum of the chosen experts");
  // The route: softmax, topk; the weights the topk values or the scores
  // gathered at the chosen experts; renormalised; scaled by a number.
  const Node* topk = producer(ids);
  const Node* softmax = topk && topk->op == "topk" ? producer(topk->inputs[0]) : nullptr;
  if (!softmax || softmax->op != "softmax")
    return fail(topk ? *topk : *routed[0], "the experts are not chosen as the top k of softmax(router logits)",
                "a route unit for this router (sigmoid scores, a bias on the choice, expert groups: DeepSeek-V3's)");
  std::optional<Projection> router = projection(producer(softmax->inputs[0]), block);
  if (!router || router->matmul->inputs[0] != x) return fail(*softmax, "the router's logits are not a projection of the FFN's input", "a router matvec");
  // From the weights back: a scale, a renormalisation, then their source.
  int v = wshape->inputs[0];
  double scale = 0;
  const Node *scaled = nullptr, *div = nullptr, *sum = nullptr, *gather = nullptr;
  if (const Node* m = producer(v); m && m->op == "mul" && g.number_of(m->inputs[1])) {
    scaled = m;
    scale = *g.number_of(m->inputs[1]);
    v = m->inputs[0];
  }
  if (const Node* d = producer(v); d && d->op == "div") {
    sum = producer(d->inputs[1]);
    if (!sum || sum->op != "sum" || sum->inputs[0] != d->inputs[0] || !sum->attrs.value("keepdim", false))
      return fail(*d, "the expert weights are divided by something not their sum", "renormalised top-k weights");
    div = d;
    v = d->inputs[0];
  }
  if (const Node* gt = producer(v); gt && gt->op == "gather" && gt->inputs[0] == softmax->outputs[0] && gt->inputs[1] == ids)
    gather = gt;
  else if (v != topk->outputs[0])
    return fail(*wshape, "the expert weights are not the top-k scores (renormalised, scaled)", "a route unit for these weights");
  std::vector<const Node*> route_ops{softmax, topk};
  for (const Node* o : {gather, sum, div, scaled})
    if (o) route_ops.push_back(o);
  // A shared expert: a SwiGLU of x added to the experts' sum, gated by
  // sigmoid(a projection of x) or not.
  int out = wsum->outputs[0];
  const Node* shared_add = nullptr;
  const Node *sg_sigmoid = nullptr, *sg_mul = nullptr;
  std::optional<Projection> sg;
  int shared = -1;
  if (const Node* a = sole_user(out, "add"); a && a != add) {
    shared_add = a;
    shared = other_input(*a, out);
    if (const Node* m = producer(shared); m && m->op == "mul") {
      for (int i : {0, 1})
        if (const Node* s = producer(m->inputs[size_t(i)]); s && s->op == "sigmoid") sg_sigmoid = s, shared = m->inputs[size_t(1 - i)];
      if (!sg_sigmoid) return fail(*m, "a shared expert scaled by something not a sigmoid gate", "a shared expert's sigmoid gate");
      sg_mul = m;
      sg = projection(producer(sg_sigmoid->inputs[0]), block);
      if (!sg || sg->matmul->inputs[0] != x) return fail(*sg_sigmoid, "the shared expert's gate is not a projection of the FFN's input", "a gate matvec");
    }
    out = a->outputs[0];
  }
  if (!add || other_input(*add, r) != out) return fail(*wsum, "the experts' output is not added to the residual", "a residual add");
  const Node* shared_down = shared >= 0 ? producer(shared) : nullptr;
  // The shared expert's gate and up: the other projections of x.
  std::vector<Projection> shared_in;
  for (const Node* m : projections)
    if (m != router->matmul && (!sg || m != sg->matmul)) {
      auto pr = projection(m, block);
      if (!pr) return after(add);
      shared_in.push_back(*pr);
    }
  const Node *s_act = nullptr, *s_mul = nullptr;
  Projection s_gate, s_up;
  std::optional<Projection> s_down;
  if (shared_down) {
    if (shared_in.size() != 2) return fail(*shared_down, "the shared expert is not a gate and an up projection of the FFN's input", "a SwiGLU shared expert");
    for (int i : {0, 1})
      if (auto us = open_users(shared_in[size_t(i)].out); us.size() == 1 && us[0]->op != "mul")
        s_act = us[0], s_gate = shared_in[size_t(i)], s_up = shared_in[size_t(1 - i)];
    s_mul = s_act ? sole_user(s_act->outputs[0], "mul") : nullptr;
    s_down = s_mul ? projection(sole_user(s_mul->outputs[0], "matmul"), block) : std::nullopt;
    if (!s_down || s_down->out != shared || other_input(*s_mul, s_act->outputs[0]) != s_up.out ||
        (s_act->op != "silu" && s_act->op != "gelu_tanh" && s_act->op != "gelu"))
      return fail(*shared_down, "the shared expert is not act(gate) * up, down", "a SwiGLU shared expert");
  } else if (!shared_in.empty()) {
    return fail(*shared_in[0].matmul, "a projection of the FFN's input beside the experts that is no shared expert", "a unit reading it");
  }

  // The routed matrices: each expert's rows of every stacked weight.
  auto stack_of = [&](const Node& routed_mm, Constant& c) -> bool {
    const Node* st = producer(routed_mm.inputs[1]);
    if (!st || st->op != "stack") return false;
    for (int e : st->inputs) {
      const WeightRef* wr = weight(e);
      if (!wr || dim(e, 0) < 0) return false;
      c.parts.push_back(TensorView{wr->tensor, 0, dim(e, 0)});
    }
    claim(st);
    return true;
  };
  const int64_t E = dim(routed[0]->inputs[1], 0), K = dim(ids, 1), I = dim(gate->outputs[0], 2), D = dim(down->outputs[0], 2);
  const int64_t Din = dim(x, -1);

  // The units, in the engine's order.
  std::vector<Projection> router_parts{*router};
  if (sg) router_parts.push_back(*sg);
  auto rm = matvec(block, "router", router_parts, "router");
  if (!rm) return -1;
  write(*rm, {x}, *router->matmul);
  {
    need_buffer("route_weight", opt.profile.output_of("router", false), K);
    need_buffer("route_id", "i32", K);
    Unit u = unit("route", block);
    u.reads = {rm->writes[0]};
    u.writes = {Slot{"route_weight"}, Slot{"route_id"}};
    u.attrs = {{"experts", E}, {"k", K}, {"weights", gather ? "gathered" : "topk"}, {"normalize", div != nullptr}};
    if (scale != 0) u.attrs["scale"] = scale;
    u.values = {name(wshape->inputs[0]), name(ids)};
    for (const Node* o : route_ops) {
      u.ops.push_back(op_str(*o));
      claim(o);
      for (int in : o->inputs)
        if (in >= 0 && g.number_of(in)) claim(producer(in));
    }
    write(u, {router->out}, *topk);
  }
  {
    Constant c;
    c.role = "weight";
    c.dtype = opt.profile.weights;
    if (!stack_of(*gate, c) || !stack_of(*up, c)) return fail(*gate, "the experts' matrices are not a stack of checkpoint tensors", "stacked expert weights");
    c.shape = {2 * E * I, Din};
    need_buffer("expert_gate_up", opt.profile.activations, 2 * K * I);
    Unit u = unit("expert_matvec", block);
    u.reads = {Slot{"normed"}, Slot{"route_id"}};
    u.writes = {Slot{"expert_gate_up", 0, K * I}, Slot{"expert_gate_up", K * I, 2 * K * I}};
    u.constants = {c};
    u.attrs = {{"experts", E}, {"k", K}, {"role", "expert_gate_up"}};
    u.values = {name(gate->outputs[0]), name(up->outputs[0])};
    u.ops = {op_str(*gate), op_str(*up)};
    claim(gate);
    claim(up);
    write(u, {x, ids}, *gate);
  }
  {
    need_buffer("expert_act", opt.profile.activations, K * I);
    Unit u = unit("swiglu", block);
    u.reads = {Slot{"expert_gate_up", 0, K * I}, Slot{"expert_gate_up", K * I, 2 * K * I}};
    u.writes = {Slot{"expert_act"}};
    u.attrs = {{"activation", act->op}};
    u.values = {name(gmul->outputs[0])};
    u.ops = {op_str(*act), op_str(*gmul)};
    claim(act);
    claim(gmul);
    write(u, {gate->outputs[0], up->outputs[0]}, *act);
  }
  {
    Constant c;
    c.role = "weight";
    c.dtype = opt.profile.weights;
    if (!stack_of(*down, c)) return fail(*down, "the experts' matrices are not a stack of checkpoint tensors", "stacked expert weights");
    c.shape = {E * D, I};
    need_buffer("expert_out", opt.profile.activations, K * D);
    Unit u = unit("expert_matvec", block);
    u.reads = {Slot{"expert_act"}, Slot{"route_id"}};
    u.writes = {Slot{"expert_out"}};
    u.constants = {c};
    u.attrs = {{"experts", E}, {"k", K}, {"role", "expert_down"}};
    u.values = {name(down->outputs[0])};
    u.ops = {op_str(*down)};
    claim(down);
    write(u, {gmul->outputs[0], ids}, *down);
  }
  if (shared_down) {  // the shared expert, as a dense FFN
    auto gu = matvec(block, "gate_up", {s_gate, s_up}, "gate_up");
    if (!gu) return -1;
    write(*gu, {x}, *s_gate.matmul);
    // Its columns of the act buffer (a dense layer's FFN may be wider).
    const Slot act_slot{"act", 0, dim(s_mul->outputs[0], -1)};
    need_buffer("act", opt.profile.activations, act_slot.end);
    Unit s = unit("swiglu", block);
    s.reads = {gu->writes[0], gu->writes[1]};
    s.writes = {act_slot};
    s.attrs = {{"activation", s_act->op}};
    s.values = {name(s_mul->outputs[0])};
    s.ops = {op_str(*s_act), op_str(*s_mul)};
    claim(s_act);
    claim(s_mul);
    write(s, {s_gate.out, s_up.out}, *s_act);
    auto dn = matvec(block, "down", {*s_down}, "ffn_out");
    if (!dn) return -1;
    dn->reads = {act_slot};
    write(*dn, {s_mul->outputs[0]}, *s_down->matmul);
  }
  {
    // sum_j weight_j down_j [+ (sigmoid(gate) *) shared], into ffn_out.
    need_buffer("ffn_out", opt.profile.activations, D);
    Unit u = unit("combine", block);
    u.reads = {Slot{"expert_out"}, Slot{"route_weight"}};
    std::vector<int> reads = {down->outputs[0], wshape->inputs[0]};
    if (shared_down) {
      u.reads.push_back(Slot{"ffn_out"});
      reads.push_back(shared);
      if (sg) {
        u.reads.push_back(rm->writes[1]);
        reads.push_back(sg->out);
      }
    }
    u.writes = {Slot{"ffn_out"}};
    u.attrs = {{"k", K}, {"shared", shared_down ? (sg ? "gated" : "added") : "none"}};
    u.values = {name(out)};
    for (const Node* o : {wshape, wmul, wsum, sg_sigmoid, sg_mul, shared_add})
      if (o) u.ops.push_back(op_str(*o)), claim(o);
    write(u, reads, *wsum);
  }
  return residual_unit(block, *add, r, out, "ffn_out");
}

}  // namespace arch::npu2
