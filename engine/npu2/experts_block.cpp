// A layer's experts FFN (a mixture of experts): the router's logits (and a
// shared expert's gate logit beside them) as one matvec; the route (softmax,
// the top k, their weights as the graph takes them: the top-k values or the
// scores gathered at the chosen experts, renormalised, scaled by a number or
// by a per-expert weight) as one unit writing each row's expert numbers and
// weights; each chosen expert's gate and up as one routed matvec reading only
// the k experts' rows (of per-expert tensors stacked, or of one [experts,
// 2 inner, width] tensor), the gated activation, their down projections as
// another; a shared expert as a SwiGLU FFN; the weighted sum of the experts'
// outputs plus the (gated) shared expert's as one unit; the residual add.
// Gemma 4's MoE layers put a dense FFN beside the experts, each with its own
// norms, the router reading the residual through a weightless norm and a
// scale: dense_and_experts_block.
#include <algorithm>

#include "engine/npu2/block_reader.h"

namespace arch::npu2 {

std::optional<BlockReader::Experts> BlockReader::read_experts(const std::string& block, int x) {
  auto fail = [&](const Node& at, const std::string& reason, const std::string& needed) -> std::optional<Experts> {
    refuse(block, at, "experts: " + reason, needed);
    return std::nullopt;
  };
  Experts e;
  // The routed matmuls reading x: a gate and an up, or one sliced in two.
  std::vector<const Node*> routed;
  for (const Node* u : open_users(x))
    if (u->op == "routed_matmul" && u->inputs[0] == x) routed.push_back(u);
  if (routed.size() == 1) {
    const Node* a = nullptr;
    const Node* b = nullptr;
    for (const Node* s : open_users(routed[0]->outputs[0]))
      if (s->op == "slice" && s->attrs.value("axis", int64_t(0)) == 2) (a ? b : a) = s;
    if (!a || !b) return fail(*routed[0], "one routed matmul not cut into a gate and an up", "a routed gate and up");
    e.gate_mm = e.up_mm = routed[0];
    e.gate_slice = a, e.up_slice = b;
  } else if (routed.size() == 2) {
    e.gate_mm = routed[0], e.up_mm = routed[1];
  } else {
    return fail(*routed[0], std::to_string(routed.size()) + " routed matmuls read the FFN's input, not a gate and an up",
                "a routed gate and up");
  }
  e.ids = e.gate_mm->inputs[2];
  if (e.up_mm->inputs[2] != e.ids) return fail(*e.up_mm, "the gate and up are routed by different choices", "one route");
  const int va = e.gate_slice ? e.gate_slice->outputs[0] : e.gate_mm->outputs[0];
  const int vb = e.gate_slice ? e.up_slice->outputs[0] : e.up_mm->outputs[0];
  for (auto [g_, u_] : {std::pair{va, vb}, std::pair{vb, va}})
    for (const char* op : {"silu", "gelu_tanh", "gelu"})
      if (const Node* a = e.act ? nullptr : sole_user(g_, op)) e.act = a, e.gate = g_, e.up = u_;
  if (e.act && e.gate == vb && e.gate_slice) std::swap(e.gate_slice, e.up_slice);
  e.gmul = e.act ? sole_user(e.act->outputs[0], "mul") : nullptr;
  if (!e.gmul || other_input(*e.gmul, e.act->outputs[0]) != e.up)
    return fail(*e.gate_mm, "the routed gate and up do not meet as act(gate) * up", "a gated activation of the experts");
  e.down = sole_user(e.gmul->outputs[0], "routed_matmul");
  if (!e.down || e.down->inputs[2] != e.ids) return fail(*e.gmul, "the experts' gated product does not go to a routed down projection", "a routed down");
  // The weighted sum: sum(down * weights, axis 1), the weights [seq, k, 1].
  e.wmul = sole_user(e.down->outputs[0], "mul");
  e.wsum = e.wmul ? sole_user(e.wmul->outputs[0], "sum") : nullptr;
  if (!e.wsum || e.wsum->attrs.value("axis", int64_t(-1)) != 1 || e.wsum->attrs.value("keepdim", false))
    return fail(*e.down, "the experts' outputs are not summed by their weights (sum(down * weights, axis 1))", "a weighted sum of the chosen experts");
  const Node* topk = producer(e.ids);
  const Node* softmax = topk && topk->op == "topk" ? producer(topk->inputs[0]) : nullptr;
  if (!softmax || softmax->op != "softmax")
    return fail(topk ? *topk : *e.gate_mm, "the experts are not chosen as the top k of softmax(router logits)",
                "a route unit for this router (sigmoid scores, a bias on the choice, expert groups: DeepSeek-V3's)");
  e.weights = other_input(*e.wmul, e.down->outputs[0]);
  // The route, from the weights back: a per-expert scale, the reshape to
  // [seq, k, 1], a scale by a number, a renormalisation, then their source
  // (the top-k values, or the scores gathered at the chosen experts).
  int v = e.weights;
  const Node *per_expert = nullptr, *per_expert_rows = nullptr, *per_expert_mul = nullptr;
  if (const Node* m = producer(v); m && m->op == "mul")
    for (int i : {0, 1})
      if (const Node* em = producer(m->inputs[size_t(i)]); em && em->op == "embed" && em->inputs[1] == e.ids) {
        per_expert = em;
        per_expert_mul = m;
        per_expert_rows = producer(em->inputs[0]);
        e.expert_scale = per_expert_rows && per_expert_rows->op == "reshape" ? per_expert_rows->inputs[0] : em->inputs[0];
        if (per_expert_rows && per_expert_rows->op != "reshape") per_expert_rows = nullptr;
        v = m->inputs[size_t(1 - i)];
      }
  if (per_expert && (!weight(e.expert_scale) || g.values[e.expert_scale].type.shape.size() != 1))
    return fail(*per_expert, "the expert weights are scaled by rows of something not a per-expert weight", "a per-expert scale");
  const Node* wshape = producer(v);
  if (!wshape || wshape->op != "reshape")
    return fail(*e.wmul, "the expert weights are not reshaped to [seq, k, 1]", "a route unit for these weights");
  v = wshape->inputs[0];
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
  if (const Node* gt = producer(v); gt && gt->op == "gather" && gt->inputs[0] == softmax->outputs[0] && gt->inputs[1] == e.ids)
    gather = gt;
  else if (v != topk->outputs[0])
    return fail(*wshape, "the expert weights are not the top-k scores (renormalised, scaled)", "a route unit for these weights");
  auto router = projection(producer(softmax->inputs[0]), block);
  if (!router) return fail(*softmax, "the router's logits are not a projection", "a router matvec");
  e.router = *router;
  e.route_ops = {softmax, topk};
  for (const Node* o : {gather, sum, div, scaled, wshape, per_expert_rows, per_expert, per_expert_mul})
    if (o) e.route_ops.push_back(o);
  e.experts = dim(e.gate_mm->inputs[1], 0), e.k = dim(e.ids, 1), e.inner = dim(e.gate, 2), e.width = dim(x, -1);
  e.route_attrs = {{"experts", e.experts}, {"k", e.k}, {"weights", gather ? "gathered" : "topk"}, {"normalize", div != nullptr}};
  if (scaled) e.route_attrs["scale"] = scale;
  return e;
}

bool BlockReader::write_experts(const std::string& block, int x, const Experts& e) {
  const int64_t E = e.experts, K = e.k, I = e.inner, D = dim(e.down->outputs[0], 2);
  {
    need_buffer("route_weight", opt.profile.output_of("router", false), K);
    need_buffer("route_id", "i32", K);
    Unit u = unit("route", block);
    u.reads = {Slot{"router", 0, E}};
    u.writes = {Slot{"route_weight"}, Slot{"route_id"}};
    u.attrs = e.route_attrs;
    if (e.expert_scale >= 0) {
      auto c = bind(block, *e.route_ops.back(), "expert_scale", {e.expert_scale});
      if (!c) return false;
      c->dtype = "f32";  // a number an expert: f32 costs nothing
      u.constants = {*c};
    }
    u.values = {name(e.weights), name(e.ids)};
    for (const Node* o : e.route_ops) {
      u.ops.push_back(op_str(*o));
      claim(o);
      for (int in : o->inputs)
        if (in >= 0 && g.number_of(in)) claim(producer(in));
    }
    write(u, {e.router.out}, *e.route_ops[1]);
  }
  // Each expert's rows of a routed matmul's matrix: per-expert tensors
  // stacked, or rows [first, end) of each expert's block of one tensor.
  auto rows_of = [&](const Node& mm, Constant& c, int64_t first, int64_t end) -> bool {
    const Node* st = producer(mm.inputs[1]);
    if (st && st->op == "stack") {
      for (int w : st->inputs) {
        const WeightRef* wr = weight(w);
        if (!wr || dim(w, 0) < 0) return false;
        c.parts.push_back(TensorView{wr->tensor, first, end});
      }
      claim(st);
      return true;
    }
    const WeightRef* wr = weight(mm.inputs[1]);
    const int64_t n = dim(mm.inputs[1], 1);
    if (!wr || n < 0) return false;
    for (int64_t x_ = 0; x_ < E; ++x_) c.parts.push_back(TensorView{wr->tensor, x_ * n + first, x_ * n + end});
    return true;
  };
  auto section = [&](const Node* slice) -> std::pair<int64_t, int64_t> {
    if (!slice) return {0, I};
    return {slice->attrs.value("start", int64_t(0)), slice->attrs.value("end", int64_t(0))};
  };
  {
    Constant c;
    c.role = "weight";
    c.dtype = opt.profile.weights;
    const auto [g0, g1] = section(e.gate_slice);
    const auto [u0, u1] = section(e.up_slice);
    if (g1 - g0 != I || u1 - u0 != I || !rows_of(*e.gate_mm, c, g0, g1) || !rows_of(*e.up_mm, c, u0, u1)) {
      refuse(block, *e.gate_mm, "experts: their matrices are not checkpoint tensors (stacked, or one [experts, N, width])", "expert weights");
      return false;
    }
    c.shape = {2 * E * I, e.width};
    need_buffer("expert_gate_up", opt.profile.activations, 2 * K * I);
    Unit u = unit("expert_matvec", block);
    u.reads = {Slot{"normed"}, Slot{"route_id"}};
    u.writes = {Slot{"expert_gate_up", 0, K * I}, Slot{"expert_gate_up", K * I, 2 * K * I}};
    u.constants = {c};
    u.attrs = {{"experts", E}, {"k", K}, {"role", "expert_gate_up"}};
    u.values = {name(e.gate), name(e.up)};
    for (const Node* o : {e.gate_mm, e.up_mm == e.gate_mm ? nullptr : e.up_mm, e.gate_slice, e.up_slice})
      if (o) u.ops.push_back(op_str(*o)), claim(o);
    write(u, {x, e.ids}, *e.gate_mm);
  }
  {
    need_buffer("expert_act", opt.profile.activations, K * I);
    Unit u = unit("swiglu", block);
    u.reads = {Slot{"expert_gate_up", 0, K * I}, Slot{"expert_gate_up", K * I, 2 * K * I}};
    u.writes = {Slot{"expert_act"}};
    u.attrs = {{"activation", e.act->op}};
    u.values = {name(e.gmul->outputs[0])};
    u.ops = {op_str(*e.act), op_str(*e.gmul)};
    claim(e.act);
    claim(e.gmul);
    write(u, {e.gate, e.up}, *e.act);
  }
  {
    Constant c;
    c.role = "weight";
    c.dtype = opt.profile.weights;
    if (!rows_of(*e.down, c, 0, D)) {
      refuse(block, *e.down, "experts: their matrices are not checkpoint tensors (stacked, or one [experts, N, width])", "expert weights");
      return false;
    }
    c.shape = {E * D, I};
    need_buffer("expert_out", opt.profile.activations, K * D);
    Unit u = unit("expert_matvec", block);
    u.reads = {Slot{"expert_act"}, Slot{"route_id"}};
    u.writes = {Slot{"expert_out"}};
    u.constants = {c};
    u.attrs = {{"experts", E}, {"k", K}, {"role", "expert_down"}};
    u.values = {name(e.down->outputs[0])};
    u.ops = {op_str(*e.down)};
    claim(e.down);
    write(u, {e.gmul->outputs[0], e.ids}, *e.down);
  }
  return true;
}

// The combine unit: sum_j weight_j down_j [+ (sigmoid(gate) *) shared].
static Unit combine_unit(const std::string& block, int64_t k) {
  Unit u = unit("combine", block);
  u.reads = {Slot{"expert_out"}, Slot{"route_weight"}};
  u.attrs = {{"k", k}, {"shared", "none"}};
  return u;
}

int BlockReader::experts_block(const std::string& block, int r, const Node* norm, const Node* add) {
  const int x = norm->outputs[0];
  auto fail = [&](const Node& at, const std::string& reason, const std::string& needed) {
    refuse(block, at, "experts: " + reason, needed);
    return after(add);
  };
  std::vector<const Node*> projections;
  for (const Node* u : open_users(x)) {
    if (u->op == "matmul") projections.push_back(u);
    else if (u->op != "routed_matmul") return fail(*u, "the FFN's input is read by " + u->op, "an experts unit reading it");
  }
  auto e = read_experts(block, x);
  if (!e) return after(add);
  if (e->router.matmul->inputs[0] != x) return fail(*e->router.matmul, "the router's logits are not a projection of the FFN's input", "a router matvec");
  // A shared expert: a SwiGLU of x added to the experts' sum, gated by
  // sigmoid(a projection of x) or not.
  int out = e->wsum->outputs[0];
  const Node *shared_add = nullptr, *sg_sigmoid = nullptr, *sg_mul = nullptr;
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
  if (!add || other_input(*add, r) != out) return fail(*e->wsum, "the experts' output is not added to the residual", "a residual add");
  // The shared expert's gate and up: the other projections of x.
  std::vector<const Node*> shared_in;
  for (const Node* m : projections)
    if (m != e->router.matmul && (!sg || m != sg->matmul)) shared_in.push_back(m);
  std::optional<GatedFfn> sf;
  if (shared >= 0) {
    sf = gated_ffn(block, shared_in, *e->wsum);
    if (!sf) return after(add);
    if (sf->down.out != shared) return fail(*sf->down.matmul, "the shared expert's output is not what the experts' sum is added to", "a shared expert");
  } else if (!shared_in.empty()) {
    return fail(*shared_in[0], "a projection of the FFN's input beside the experts that is no shared expert", "a unit reading it");
  }

  // The units, in the engine's order.
  std::vector<Projection> router_parts{e->router};
  if (sg) router_parts.push_back(*sg);
  auto rm = matvec(block, "router", router_parts, "router");
  if (!rm) return -1;
  if (router_parts.size() == 1) rm->writes[0] = Slot{"router", 0, e->experts};
  write(*rm, {x}, *e->router.matmul);
  if (!write_experts(block, x, *e)) return -1;
  if (sf && write_gated_ffn(block, x, *sf, "ffn_out") < 0) return -1;
  need_buffer("ffn_out", opt.profile.activations, dim(e->down->outputs[0], 2));
  Unit u = combine_unit(block, e->k);
  std::vector<int> reads = {e->down->outputs[0], e->weights};
  if (sf) {
    u.reads.push_back(Slot{"ffn_out"});
    reads.push_back(shared);
    if (sg) {
      u.reads.push_back(rm->writes[1]);
      reads.push_back(sg->out);
    }
    u.attrs["shared"] = sg ? "gated" : "added";
  }
  u.writes = {Slot{"ffn_out"}};
  u.values = {name(out)};
  for (const Node* o : {e->wmul, e->wsum, sg_sigmoid, sg_mul, shared_add})
    if (o) u.ops.push_back(op_str(*o)), claim(o);
  write(u, reads, *e->wsum);
  return residual_unit(block, *add, r, out, "ffn_out");
}

int BlockReader::dense_and_experts_block(const std::string& block, int r, const Node* add) {
  auto fail = [&](const Node& at, const std::string& reason) {
    refuse(block, at, reason,
           "a dense FFN and experts side by side: each norm of the residual read by one of them (the router's weightless and "
           "scaled), their post-norms summed, normed, added");
    return after(add);
  };
  // The residual's norms: the dense FFN's (read by projections), the
  // experts' (read by routed matmuls), the router's (weightless, scaled).
  const Node *dense = nullptr, *experts = nullptr, *routing = nullptr;
  for (const Node* u : open_users(r)) {
    if (u == add) continue;
    if (u->op != "rms_norm") return fail(*u, "the residual is read by " + u->op + " beside the FFN's norms");
    const bool weightless = u->inputs.size() < 2 || u->inputs[1] < 0;
    bool routed = false;
    for (const Node* n : open_users(u->outputs[0])) routed = routed || n->op == "routed_matmul";
    (weightless ? routing : routed ? experts : dense) = u;
  }
  if (!dense || !experts || !routing) return fail(*(dense ? dense : experts ? experts : routing), "the residual is read by norms that are not a dense FFN's, the experts' and the router's");
  auto e = read_experts(block, experts->outputs[0]);
  if (!e) return after(add);
  // The router's input: rms_norm(residual) * a weight * a number.
  const Node* m2 = producer(e->router.matmul->inputs[0]);
  const Node* m1 = m2 && m2->op == "mul" ? producer(m2->inputs[0]) : nullptr;
  const auto by = m2 && m2->op == "mul" ? g.number_of(m2->inputs[1]) : std::nullopt;
  const int rw = m1 && m1->op == "mul" ? other_input(*m1, routing->outputs[0]) : -1;
  if (!by || !m1 || !(m1->inputs[0] == routing->outputs[0] || m1->inputs[1] == routing->outputs[0]) || !weight(rw))
    return fail(*e->router.matmul, "the router does not read rms_norm(residual) * a weight * a number");
  // The dense FFN over its norm, its post-norm; the experts' post-norm;
  // their sum, normed, added.
  std::vector<const Node*> dense_in = open_users(dense->outputs[0]);
  auto f = gated_ffn(block, dense_in, *dense);
  if (!f) return after(add);
  const Node* post1 = sole_user(f->down.out, "rms_norm");
  const Node* post2 = sole_user(e->wsum->outputs[0], "rms_norm");
  const Node* both = post1 ? sole_user(post1->outputs[0], "add") : nullptr;
  const Node* post = both ? sole_user(both->outputs[0], "rms_norm") : nullptr;
  if (!post2 || !both || other_input(*both, post1->outputs[0]) != post2->outputs[0] || !post || !add ||
      other_input(*add, r) != post->outputs[0])
    return fail(*e->wsum, "the dense FFN's and the experts' outputs are not each normed, summed, normed and added to the residual");

  // The units, in the engine's order: the dense FFN, then the experts.
  auto dw = bind(block, *dense, "weight", {dense->inputs[1]});
  if (!dw) return -1;
  claim(dense);
  write(norm_unit(block, *dense, *dw, false), {r}, *dense);
  if (write_gated_ffn(block, dense->outputs[0], *f, "ffn_out") < 0) return -1;
  if (post_norm(block, *post1, f->down.out, "ffn_out") < 0) return -1;
  {
    auto w = bind(block, *m1, "weight", {rw});
    if (!w) return -1;
    need_buffer("router_in", opt.profile.activations, dim(r, -1));
    Unit u = unit("rms_norm", block);
    u.reads = {Slot{"residual"}};
    u.writes = {Slot{"router_in"}};
    u.constants = {*w};
    u.attrs = {{"eps", routing->attrs.value("eps", 1e-6)}, {"weight", "after"}, {"scales", {*by}}};
    u.values = {name(m2->outputs[0])};
    u.ops = {op_str(*routing), op_str(*m1), op_str(*m2)};
    for (const Node* n : {routing, m1, m2}) claim(n);
    claim(producer(m2->inputs[1]));
    write(u, {r}, *routing);
  }
  auto rm = matvec(block, "router", {e->router}, "router");
  if (!rm) return -1;
  rm->reads = {Slot{"router_in"}};
  rm->writes[0] = Slot{"router", 0, e->experts};
  write(*rm, {m2->outputs[0]}, *e->router.matmul);
  {
    auto w = bind(block, *experts, "weight", {experts->inputs[1]});
    if (!w) return -1;
    claim(experts);
    write(norm_unit(block, *experts, *w, false), {r}, *experts);
  }
  if (!write_experts(block, experts->outputs[0], *e)) return -1;
  need_buffer("moe_out", opt.profile.activations, dim(e->down->outputs[0], 2));
  Unit u = combine_unit(block, e->k);
  u.writes = {Slot{"moe_out"}};
  u.values = {name(e->wsum->outputs[0])};
  for (const Node* o : {e->wmul, e->wsum}) u.ops.push_back(op_str(*o)), claim(o);
  write(u, {e->down->outputs[0], e->weights}, *e->wsum);
  if (post_norm(block, *post2, e->wsum->outputs[0], "moe_out") < 0) return -1;
  {
    Unit s = unit("add", block);
    s.reads = {Slot{"ffn_out"}, Slot{"moe_out"}};
    s.writes = {Slot{"ffn_out"}};
    s.values = {name(both->outputs[0])};
    s.ops = {op_str(*both)};
    claim(both);
    write(s, {post1->outputs[0], post2->outputs[0]}, *both);
  }
  if (post_norm(block, *post, both->outputs[0], "ffn_out") < 0) return -1;
  return residual_unit(block, *add, r, post->outputs[0], "ffn_out");
}

}  // namespace arch::npu2
