// A layer's attention block: its norm; Q, K and V told apart by where they
// go and merged into one matvec over row ranges of one matrix; the per-head
// q/k norms where there are some; RoPE on q and k; the KV write; the
// attention over the layer's cache; the output projection; the residual
// add. Every check is made before the first of its units is written.
#include "engine/npu2/block_reader.h"

#include <algorithm>

namespace arch::npu2 {

namespace {

// rope_scaling's type ("default" when there is none; "su" is LongRoPE).
std::string scaling_type(const Node& rope) {
  const auto& s = rope.attrs.value("scaling", nlohmann::json());
  for (const char* key : {"rope_type", "type"})
    if (s.is_object() && s.contains(key) && s[key].is_string())
      return s[key].get<std::string>() == "su" ? "longrope" : s[key].get<std::string>();
  return "default";
}

// The sequence length past which a rope's frequencies change (LongRoPE's
// original length, dynamic NTK's maximum), or none.
std::optional<int64_t> rope_switch(const Node& rope) {
  const std::string type = scaling_type(rope);
  const auto& s = rope.attrs.value("scaling", nlohmann::json());
  if (type == "longrope") {
    int64_t original = rope.attrs.value("original_max_position_embeddings", int64_t(0));
    if (original <= 0 && s.contains("original_max_position_embeddings") && s["original_max_position_embeddings"].is_number())
      original = s["original_max_position_embeddings"].get<int64_t>();
    if (original <= 0) original = rope.attrs.value("max_position_embeddings", int64_t(0));
    return original;
  }
  if (type == "dynamic") return rope.attrs.value("max_position_embeddings", int64_t(0));
  return std::nullopt;
}

}  // namespace

// The attention block of layer `l` reading the residual r: the residual
// after it, or -1 (refused).
int BlockReader::attention_block(int r, int l) {
  const std::string block = "layers." + std::to_string(l) + ".attention";
  const Node* add = residual_add(r);
  const Node* norm = open_block(r, block, add);
  if (!norm) return after(add);
  // A latent attention is refused whole, with the graph's scan.
  if (std::find(latent_layers.begin(), latent_layers.end(), "layers." + std::to_string(l)) != latent_layers.end())
    return after(add);
  const int x = norm->outputs[0];
  auto x_users = open_users(x);
  // Q, K and V: views of the norm's projections (three, or one merged
  // matrix, or a query whose heads hold an output gate beside them), told
  // apart by where they go.
  struct Path {
    Part part;
    const Node* qk_norm = nullptr;
    const Node* rope = nullptr;
    int end = -1;  // what reaches the cache or the attention
  };
  std::vector<Path> paths;
  std::optional<Part> gate;  // an output gate: sigmoid(gate) times the attention's heads
  for (const Node* u : x_users) {
    auto pr = projection(u, block);
    if (!pr) {
      if (u->op != "matmul") refuse(block, *u, "the norm's output is read by " + u->op, "q, k and v projections");
      return after(add);
    }
    for (int leaf : leaves_of(pr->out)) {
      auto part = part_of(*pr, leaf, block);
      if (!part) return after(add);
      if (g.values[leaf].type.shape.size() != 3) {
        if (const Node* sg = sole_user(leaf, "sigmoid"); sg && !gate) {
          gate = *part;
          continue;
        }
        refuse(block, *u, "a projection not split into heads", "q, k, v reshaped to [seq, heads, head_dim]");
        return after(add);
      }
      // A head-split value normed twice is K and V at once (Gemma 4's
      // attention_k_eq_v): a path for each norm, one part between them.
      std::vector<const Node*> norms;
      for (const Node* n : open_users(leaf))
        if (n->op == "rms_norm") norms.push_back(n);
      if (norms.size() != 2 || open_users(leaf).size() != 2) norms = {sole_user(leaf, "rms_norm")};
      for (const Node* qn : norms) {
        Path path{*part};
        path.end = leaf;
        if (qn) {
          path.qk_norm = qn;
          path.end = qn->outputs[0];
        }
        if (const Node* rp = sole_user(path.end, "rope")) {
          path.rope = rp;
          path.end = rp->outputs[0];
        }
        paths.push_back(path);
      }
    }
  }
  // The attention the query reaches, and the cache its keys and values
  // come from: this block's own (q, k, v: three paths), or an earlier
  // layer's (KV sharing, Gemma 4's last layers: the query alone).
  const Node* attn = nullptr;
  int q = -1, k = -1, v = -1;
  for (size_t i = 0; i < paths.size(); ++i)
    for (const Node* u : open_users(paths[i].end))
      if (u->op == "attention" && u->inputs[0] == paths[i].end) attn = u, q = int(i);
  const Node* cache = attn ? producer(attn->inputs[1]) : nullptr;
  if (cache && cache->op != "kv_cache") cache = nullptr;
  const auto shared = cache ? cache_of.find(cache) : cache_of.end();
  const bool own = cache && shared == cache_of.end();
  if (own)
    for (size_t i = 0; i < paths.size(); ++i) {
      if (cache->inputs[0] == paths[i].end) k = int(i);
      if (cache->inputs.size() > 1 && cache->inputs[1] == paths[i].end) v = int(i);
    }
  if (!attn || !cache || (own && (paths.size() != 3 || k < 0 || v < 0)) || (!own && paths.size() != 1)) {
    refuse(block, attn ? *attn : x_users.empty() ? *norm : *x_users[0],
           !attn ? "the norm's projections give " + std::to_string(paths.size()) + " head-split values and no attention reads them as its query"
                 : !cache ? "no KV cache: the attention does not keep its keys and values"
                          : "q, k and v do not meet at one cache and one attention",
           "a causal attention over a KV cache");
    return after(add);
  }
  // RoPE on q and k; v as projected, or normed without a weight (Gemma 4).
  const bool v_weightless = own && paths[v].qk_norm && (paths[v].qk_norm->inputs.size() < 2 || paths[v].qk_norm->inputs[1] < 0);
  if (!paths[q].rope || (own && (!paths[k].rope || paths[v].rope || (paths[v].qk_norm && !v_weightless)))) {
    refuse(block, *attn, "RoPE is not on q and k alone", "RoPE on q and k");
    return after(add);
  }
  if (attn->inputs[1] != cache->outputs[0] || attn->inputs[2] != cache->outputs[1]) {
    refuse(block, *attn, "the attention does not read the cache's keys and values", "attention over the KV cache");
    return after(add);
  }
  bool ok = true;
  // A rope whose frequencies follow the sequence's length (LongRoPE past
  // its original length, dynamic NTK past the maximum) changes every cached
  // key's rotation when it switches: within the program's context it must not.
  if (const auto limit = rope_switch(*paths[q].rope); limit && opt.max_context > *limit)
    ok = false, refuse(block, *paths[q].rope,
                       "its rope's frequencies change once the sequence passes " + std::to_string(*limit) +
                           " positions (" + scaling_type(*paths[q].rope) + "), re-roping every cached key; the program's context is " +
                           std::to_string(opt.max_context),
                       "a context of at most " + std::to_string(*limit) + " positions, or a unit re-roping the KV cache");
  if (attn->inputs.size() > 3 && attn->inputs[3] >= 0) ok = false, refuse(block, *attn, "an attention bias", "a bias input to the attention unit");
  if (attn->inputs.size() > 4 && attn->inputs[4] >= 0)
    ok = false, refuse(block, *attn, "attention lifted within groups of rows (an image's tokens)", "a group mask in the attention unit");
  if (!attn->attrs.value("causal", true)) ok = false, refuse(block, *attn, "non-causal attention", "a bidirectional attention unit (an encoder's)");
  // A sliding window and a softcap on the scores are the attention unit's
  // attributes (Gemma 2/3, Mistral).
  const int64_t window = attn->attrs.value("window", int64_t(0));
  const double softcap = attn->attrs.value("softcap", 0.0);
  // The output projection and the residual add.
  const Node* merge = sole_user(attn->outputs[0], "reshape");
  // An output gate (Qwen3-Next's): the merged heads times sigmoid(gate).
  const Node* gate_sigmoid = gate ? sole_user(gate->value, "sigmoid") : nullptr;
  const Node* gate_mul = merge && gate_sigmoid ? sole_user(merge->outputs[0], "mul") : nullptr;
  if (gate && (!gate_mul || !(gate_mul->inputs[0] == gate_sigmoid->outputs[0] || gate_mul->inputs[1] == gate_sigmoid->outputs[0]))) {
    refuse(block, gate_sigmoid ? *gate_sigmoid : *attn, "a sigmoid of a projection that does not gate the attention's heads",
           "an output gate: the merged heads times sigmoid(gate)");
    return after(add);
  }
  const int merged = gate_mul ? gate_mul->outputs[0] : merge ? merge->outputs[0] : -1;
  std::optional<Projection> o = merged >= 0 ? projection(sole_user(merged, "matmul"), block) : std::nullopt;
  if (!o) {
    refuse(block, *attn, "the attention's heads do not go straight to an output projection", "heads merged into one matvec");
    return after(add);
  }
  // A norm on the attention's output before the add (Gemma 2/3).
  auto readers = open_users(o->out);
  const Node* post = readers.size() == 1 && readers[0]->op == "rms_norm" && readers[0]->inputs[0] == o->out ? readers[0] : nullptr;
  if (post) readers = open_users(post->outputs[0]);
  if (!add || readers.size() != 1 || readers[0] != add) {
    refuse(block, readers.empty() ? *o->matmul : *readers[0], "the output projection is not added to the residual", "a residual add");
    return after(add);
  }
  if (!ok) return add->outputs[0];

  // The units, in the engine's order.
  const int64_t H = dim(paths[q].end, 1), Dh = dim(paths[q].end, 2);
  const int layer = own ? int(p.caches.size()) : shared->second;
  const Cache* source = own ? nullptr : &p.caches[size_t(layer)];
  const int64_t KH = own ? dim(paths[k].end, 1) : source->kv_heads, Dv = own ? dim(paths[v].end, 2) : source->head_dim;
  if (!own && (source->head_dim != Dh || (source->window != 0 && source->window != window))) {
    refuse(block, *attn, "it reads an earlier layer's cache of another head size or window", "the cache of a layer of its own shape");
    return after(add);
  }
  // K is V: one part, its weightless norm written to a v buffer before
  // the key's norm runs in place.
  const bool k_is_v = own && paths[k].part.value == paths[v].part.value;
  std::vector<Part> parts = {paths[q].part};
  if (own) parts.push_back(paths[k].part);
  if (own && !k_is_v) parts.push_back(paths[v].part);
  if (gate) parts.push_back(*gate);
  auto qkv = matvec(block, "qkv", parts, "qkv");
  if (!qkv) return -1;
  if (parts.size() == 1) qkv->writes[0] = Slot{"qkv", 0, int64_t(parts[0].columns.size())};  // the query alone: its columns
  const Slot qs = qkv->writes[0];
  const Slot ks = own ? qkv->writes[1] : Slot{}, vs = own ? (k_is_v ? ks : qkv->writes[2]) : Slot{};
  const Slot gs = gate ? qkv->writes.back() : Slot{};
  const Slot v_normed{"v", 0, own ? dim(paths[v].end, 1) * dim(paths[v].end, 2) : 0};
  write(*qkv, {x}, *paths[q].part.proj.matmul);
  std::vector<std::pair<int, Slot>> normed = {{q, qs}};
  if (own && k_is_v) normed.push_back({v, vs}), normed.push_back({k, ks});
  else if (own) normed.push_back({k, ks}), normed.push_back({v, vs});
  for (const auto& [i, s] : normed) {
    const Path& pt = paths[size_t(i)];
    if (!pt.qk_norm) continue;
    Unit u = unit("head_norm", block);
    if (i != v) {
      auto nw = bind(block, *pt.qk_norm, "weight", {pt.qk_norm->inputs[1]});
      if (!nw) return -1;
      u.constants = {*nw};
    }
    claim(pt.qk_norm);
    if (i == v && k_is_v) need_buffer("v", opt.profile.activations, v_normed.end);
    u.reads = {s};
    u.writes = {i == v && k_is_v ? v_normed : s};
    u.attrs = {{"eps", pt.qk_norm->attrs.value("eps", 1e-6)}, {"heads", dim(pt.end, 1)}, {"head_dim", dim(pt.end, 2)}};
    u.values = {name(pt.qk_norm->outputs[0])};
    u.ops = {op_str(*pt.qk_norm)};
    write(u, {pt.part.value}, *pt.qk_norm);
  }
  // Each layer's widths: a buffer's columns from 0 (a layer of Gemma 4 may
  // have wider heads than another).
  const Slot q_rot{"q", 0, H * Dh}, k_rot{"k", 0, KH * Dh}, attn_slot{"attn", 0, H * Dv};
  for (const auto& [i, s] : normed) {
    if (i == v) continue;
    const Path& pt = paths[size_t(i)];
    const int in = pt.qk_norm ? pt.qk_norm->outputs[0] : pt.part.value;
    claim(pt.rope);
    const Slot out = i == q ? q_rot : k_rot;
    need_buffer(out.buffer, opt.profile.activations, out.end);
    Unit u = unit("rope", block);
    u.reads = {s};
    u.writes = {out};
    u.attrs = pt.rope->attrs;
    u.attrs["heads"] = dim(pt.end, 1);
    u.attrs["head_dim"] = dim(pt.end, 2);
    u.values = {name(pt.rope->outputs[0])};
    u.ops = {op_str(*pt.rope)};
    write(u, {in}, *pt.rope);
  }
  if (own) {
    claim(cache);
    cache_of[cache] = layer;
    // A window's layer keeps its last positions only (and a chunk's rows).
    const int64_t ring = window > 0 ? window + std::max<int64_t>(1, opt.chunk) - 1 : opt.max_context;
    p.caches.push_back(Cache{layer, KH, Dh, std::min(opt.max_context, ring), opt.profile.cache,
                             ring < opt.max_context ? window : 0});
    Unit u = unit("kv_write", block);
    u.reads = {k_rot, k_is_v && paths[v].qk_norm ? v_normed : vs};
    u.writes = {Slot{"cache"}};
    u.attrs = {{"layer", layer}, {"kv_heads", KH}, {"head_dim", Dh}};
    u.values = {name(cache->outputs[0]), name(cache->outputs[1])};
    u.ops = {op_str(*cache)};
    write(u, {paths[k].end, paths[v].end}, *cache);
  }
  claim(attn);
  need_buffer("attn", opt.profile.activations, H * Dv);
  {
    Unit u = unit("attention", block);
    u.reads = {q_rot, Slot{"cache"}};
    u.writes = {attn_slot};
    u.attrs = {{"layer", layer}, {"heads", H}, {"kv_heads", KH}, {"head_dim", Dh},
               {"scale", attn->attrs.value("scale", 1.0)}, {"causal", true}, {"window", window}, {"softcap", softcap}};
    u.values = {name(attn->outputs[0])};
    u.ops = {op_str(*attn)};
    write(u, {paths[q].end, -1}, *attn);
  }
  claim(merge);
  if (gate_mul) {
    // The output gate in place on the heads: attn * sigmoid(gate).
    claim(gate_sigmoid);
    claim(gate_mul);
    Unit u = unit("output_gate", block);
    u.reads = {attn_slot, gs};
    u.writes = {attn_slot};
    u.attrs = {{"activation", "sigmoid"}};
    u.values = {name(gate_mul->outputs[0])};
    u.ops = {op_str(*merge), op_str(*gate_sigmoid), op_str(*gate_mul)};
    write(u, {attn->outputs[0], gate->value}, *gate_mul);
  }
  auto out = matvec(block, "o", {*o}, "attn_out");
  if (!out) return -1;
  out->reads = {attn_slot};
  if (!gate_mul) out->ops.insert(out->ops.begin(), op_str(*merge));
  write(*out, {gate_mul ? gate_mul->outputs[0] : attn->outputs[0]}, *o->matmul);
  const int branch = post ? post_norm(block, *post, o->out, "attn_out") : o->out;
  if (branch < 0) return -1;
  return residual_unit(block, *add, r, branch, "attn_out");
}

}  // namespace arch::npu2
