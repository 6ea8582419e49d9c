// Lowering a decoder's step graph into NPU2 units, block by block: the
// embedding; per layer the attention block (norm; Q/K/V as one matvec over
// row ranges of one merged matrix; the per-head q/k norms where there are
// some; RoPE; the KV write; attention; the output projection; the residual
// add) and the FFN block (norm; gate and up as one matvec; the gated
// activation as one unit; down; the add); then the final norm, the head,
// the argmax and the step's advance. The reader follows the graph's values
// from the residual, so the template's op order does not matter; every node
// must end up in some unit.
#include "engine/npu2/lower.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "engine/npu2/block_reader.h"

namespace arch::npu2 {

// The embedding: tokens -> the residual.
int BlockReader::embedding(int tokens) {
  // The embed whose rows (scaled, maybe) the first layer adds to: where the
  // tokens are looked up twice (Gemma 4's per-layer table), the other one
  // is the per-layer inputs'.
  const Node* e = sole_user(tokens, "embed");
  const auto readers = open_users(tokens);
  if (!e && readers.size() > 1)
    for (const Node* u : readers) {
      if (u->op != "embed" || u->inputs[1] != tokens) continue;
      int out = u->outputs[0];
      if (const Node* m = sole_user(out, "mul")) out = m->outputs[0];
      if (residual_add(out)) e = u;
    }
  if (!e || e->inputs[1] != tokens) {
    auto u = open_users(tokens);
    if (!u.empty()) refuse("embedding", *u[0], "the tokens are read by " + u[0]->op + ", not one embed", "an embedding table lookup");
    else refuse_graph("nothing reads the tokens", "an embedding of the tokens");
    return -1;
  }
  claim(e);
  int h = e->outputs[0];
  const int64_t D = dim(h, -1);
  auto table = bind("embedding", *e, "table", {e->inputs[0]});
  if (!table) return -1;
  need_buffer("ids", "i32", 1);
  need_buffer("residual", opt.profile.residual, D);
  Unit u = unit("embedding", "embedding");
  u.reads = {Slot{"ids"}};
  u.writes = {Slot{"residual"}};
  u.constants = {*table};
  u.ops = {op_str(*e)};
  // A scale on the rows looked up (Gemma's x sqrt(hidden)), by a number:
  // the unit's `scale`, its output the scaled rows.
  auto next = open_users(h);
  if (next.size() == 1 && next[0]->op == "mul" && next[0]->inputs.size() == 2) {
    const int other = next[0]->inputs[0] == h ? next[0]->inputs[1] : next[0]->inputs[0];
    if (const auto scale = g.number_of(other)) {
      u.attrs = {{"scale", *scale}};
      u.ops.push_back(op_str(*next[0]));
      claim(producer(other));
      claim(next[0]);
      h = next[0]->outputs[0];
    } else {
      refuse("embedding", *next[0], "the embedding is scaled by a value the graph computes", "a scale by a number in the embedding unit");
    }
  } else if (next.size() == 1 && next[0]->op == "div") {
    refuse("embedding", *next[0], "the embedding is divided (div)", "a scale by a number in the embedding unit");
  }
  u.values = {name(h)};
  holds["ids"] = tokens;
  write(u, {tokens}, *e);
  return h;
}

// The final norm, the head, the argmax and the advance.
void BlockReader::head(int r) {
  const std::string block = "head";
  const Node* norm = norm_of(r, block, nullptr);
  if (!norm) return;
  auto w = bind(block, *norm, "weight", {norm->inputs[1]});
  if (!w) return;
  claim(norm);
  write(norm_unit(block, *norm, *w, true), {r}, *norm);
  auto hp = projection(sole_user(norm->outputs[0], "matmul"), block);
  if (!hp) {
    auto u = open_users(norm->outputs[0]);
    refuse(block, u.empty() ? *norm : *u[0], "the final norm does not go to one head projection", "a head matvec");
    return;
  }
  // Final logit softcapping (Gemma 2): cap * tanh(logits / cap), one unit
  // on the logits, by a number.
  // The number `n` (a binary op) takes beside `v`.
  auto number = [&](const Node* n, int v) -> std::optional<double> {
    if (!n || n->inputs.size() != 2) return std::nullopt;
    return g.number_of(n->inputs[0] == v ? n->inputs[1] : n->inputs[0]);
  };
  const Node* dv = sole_user(hp->out, "div");
  const Node* th = dv ? sole_user(dv->outputs[0], "tanh") : nullptr;
  const Node* ml = th ? sole_user(th->outputs[0], "mul") : nullptr;
  const auto cap = number(dv, hp->out), back = number(ml, th ? th->outputs[0] : -1);
  const bool softcap = ml && dv->inputs[0] == hp->out && cap && back && *cap == *back && is_graph_output(ml->outputs[0], "logits");
  if (!softcap && !is_graph_output(hp->out, "logits")) {
    auto u = open_users(hp->out);
    refuse(block, u.empty() ? *hp->matmul : *u[0], "the head's output is not the logits (nor cap * tanh(logits / cap))",
           "the head writing the logits");
    return;
  }
  auto h = matvec(block, "head", {*hp}, "logits");
  if (!h) return;
  h->reads = {Slot{"normed"}};
  h->last_row = true;
  write(*h, {norm->outputs[0]}, *hp->matmul);
  if (softcap) {
    Unit sc = unit("softcap", block);
    sc.reads = {Slot{"logits"}};
    sc.writes = {Slot{"logits"}};
    sc.attrs = {{"cap", *cap}};
    sc.last_row = true;
    sc.values = {name(ml->outputs[0])};
    sc.ops = {op_str(*dv), op_str(*th), op_str(*ml)};
    for (const Node* n : {dv, th, ml}) {
      claim(n);
      for (int in : n->inputs)
        if (g.number_of(in)) claim(producer(in));
    }
    write(sc, {hp->out}, *dv);
  }
  const int logits = softcap ? ml->outputs[0] : hp->out;
  need_buffer("token", "i32", 1);
  Unit am = unit("argmax", block);
  am.reads = {Slot{"logits"}};
  am.writes = {Slot{"token"}};
  am.last_row = true;
  am.values = {"token"};
  am.ops = {"argmax (greedy)"};
  write(am, {logits}, *hp->matmul);
  Unit adv = unit("advance", "advance");
  adv.values = {"position"};
  adv.ops = {"position += rows; token carried"};
  write(adv, {}, *hp->matmul);
}


Lowering lower(const Graph& step, const LowerOptions& opt) {
  BlockReader r(step, opt);
  Program& p = r.p;
  p.family = opt.family.empty() ? step.family : opt.family;
  p.template_file = std::filesystem::path(opt.template_file).filename().string();
  p.graph = step.name;
  p.profile = opt.profile.path.empty() ? "(defaults)" : std::filesystem::path(opt.profile.path).filename().string();
  p.max_context = opt.max_context;
  p.numerics = opt.profile.to_json();
  p.versions = {Version{"decode", 1}, Version{"prompt", std::max<int64_t>(1, opt.chunk)}};
  const int tokens = step.find_input("tokens"), positions = step.find_input("positions");
  if (tokens < 0 || positions < 0 || step.find_value("logits") < 0) {
    r.refuse_graph("not a decoder's step: it takes no tokens and positions or gives no logits (an encoder)",
                   "a causal step graph: tokens and positions in, logits out");
    return Lowering{std::move(p), std::move(r.refusals)};
  }
  if (!step.held_inputs.empty()) {
    // Held inputs the step may run without are an image's features (a
    // vision-language model); the others an encoder's output.
    bool optional = true;
    for (int v : step.held_inputs) optional = optional && step.may_be_absent(v);
    if (optional)
      r.refuse_graph("the step takes image features (a vision-language model), placed at its image tokens",
                     "an image-tower program and a unit placing its rows in the prompt's embeddings");
    else
      r.refuse_graph("the step holds state inputs: an encoder-decoder's decoder, cross-attending to the encoder's output",
                     "an encoder program and cross-attention units");
    return Lowering{std::move(p), std::move(r.refusals)};
  }
  // What the engine has no unit for, wherever it is in the graph.
  for (const Node& n : step.nodes) {
    const std::string block = n.outputs.empty() ? "?" : [&] {
      const std::string& v = r.name(n.outputs[0]);
      return v.rfind("layers.", 0) == 0 ? v.substr(0, v.find('.', 7)) : std::string("graph");
    }();
    // Latent attention (DeepSeek's MLA): the cache holds a compressed
    // latent and the rope key (a cache of keys alone, the values the keys'
    // first features), or every head's keys are made from a normed latent.
    if (n.op == "kv_cache" && (n.inputs.size() < 2 || n.inputs[1] < 0 || r.latent_keys(n.inputs[0]))) {
      const bool absorbed = n.inputs.size() < 2 || n.inputs[1] < 0;
      r.refuse(block + ".attention", n,
               absorbed ? "latent attention (DeepSeek's MLA): the cache holds one compressed latent and rope key per "
                          "position, which every head's keys and values are read from (the up-projections absorbed into "
                          "the query and the output, per head)"
                        : "latent attention (DeepSeek's MLA): every head's keys and values are made from a normed "
                          "compressed latent (a projection of a normed projection)",
               "a latent attention unit: the latent and the rope key cached, per-head up-projections of the query and "
               "the output (a matvec per head)",
               true);
      r.latent_layers.push_back(block);
    }
    if (n.op == "attention" && !n.attrs.value("causal", true))
      r.refuse(block, n, "non-causal attention (an encoder's, or cross-attention)", "a bidirectional attention unit", true);
  }
  int h = r.embedding(tokens);
  if (h >= 0) h = r.per_layer_inputs(tokens, h);
  for (int l = 0; h >= 0; ++l) {
    if (!r.residual_add(h)) break;  // no add: the final norm comes next
    h = r.mixer_block(h, l);
    if (h < 0) break;
    h = r.layer_end(r.ffn_block(h, l), l);
  }
  if (h >= 0) r.head(h);
  // Every op must be in some unit.
  if (r.refusals.empty())
    for (size_t n = 0; n < step.nodes.size(); ++n)
      if (!r.claimed[n]) r.refuse("graph", step.nodes[n], "an op in no block the engine reads", "a unit for " + step.nodes[n].op);
  return Lowering{std::move(p), std::move(r.refusals)};
}

std::string refusal_table(const std::vector<Refusal>& refusals) {
  std::ostringstream s;
  for (const auto& r : refusals)
    s << "  " << r.block << ": " << r.op << " (" << r.at << "): " << r.reason << "; needs " << r.needed << "\n";
  return s.str();
}

}  // namespace arch::npu2
