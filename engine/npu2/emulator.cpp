#include "engine/npu2/emulator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace arch::npu2 {

namespace {

DType type_of(const std::string& t) {
  if (t == "bf16") return DType::BF16;
  if (t == "i32") return DType::I32;
  return DType::F32;
}

float round_to(DType t, float f) { return t == DType::BF16 ? bf16_to_f32(f32_to_bf16(f)) : f; }

// Element i of a buffer or cache, as f32.
float get(const Tensor& t, int64_t i) {
  return t.dtype == DType::BF16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[i]) : t.f32()[i];
}
void put(Tensor& t, int64_t i, float f) {
  if (t.dtype == DType::BF16) static_cast<uint16_t*>(t.data)[i] = f32_to_bf16(f);
  else t.f32()[i] = f;
}

// One op's reference kernel on f32 inputs, its outputs shaped `outs`; a
// stateful op's state (a recurrent layer's) kept in `state` across calls.
Result<std::vector<Tensor>> run_reference(const OpTable& ops, const std::string& op, const Attrs& attrs,
                                          std::vector<Tensor> in, const std::vector<Dims>& out_dims,
                                          std::unique_ptr<OpState>& state, const std::string& where,
                                          const std::vector<DType>& out_types = {}) {
  const Kernel* k = ops.kernel(op, "reference");
  if (!k) return error(where + ": no reference kernel for " + op);
  std::vector<Tensor> outs;
  for (size_t i = 0; i < out_dims.size(); ++i)
    outs.push_back(Tensor::zeros(i < out_types.size() ? out_types[i] : DType::F32, out_dims[i]));
  KernelContext ctx{attrs, in, outs, state, 0, where};
  ARCH_TRY_STATUS((*k)(ctx));
  return outs;
}

// One op's reference kernel on f32 inputs; its one output shaped `out`.
Result<Tensor> reference(const OpTable& ops, const std::string& op, const Attrs& attrs, std::vector<Tensor> in,
                         Dims out, const std::string& where) {
  std::unique_ptr<OpState> state;
  ARCH_TRY(auto outs, run_reference(ops, op, attrs, std::move(in), {std::move(out)}, state, where));
  return std::move(outs[0]);
}

Tensor scalar(float v) {
  Tensor t = Tensor::zeros(DType::F32, {});
  t.f32()[0] = v;
  return t;
}

int64_t width_of(const Slot& s, const Tensor& buffer) { return s.end ? s.end - s.begin : buffer.dim(1); }

// x [rows, width] as [rows, heads, head_dim]: an error where the unit's
// attributes do not cut its width so (a program file's, not trusted).
Result<Tensor> as_heads(Tensor x, int64_t rows, int64_t heads, int64_t head_dim, const std::string& where) {
  if (heads < 1 || head_dim < 1 || x.numel() != rows * heads * head_dim)
    return error(where + ": " + std::to_string(heads) + " heads of " + std::to_string(head_dim) + " do not cut rows of " +
                 std::to_string(x.numel() / std::max<int64_t>(1, rows)));
  x.shape = {rows, heads, head_dim};
  return x;
}

}  // namespace

Result<std::unique_ptr<Emulator>> Emulator::load(const Program& p, const Checkpoint& ckpt, const OpTable& ops) {
  auto e = std::unique_ptr<Emulator>(new Emulator());
  e->p_ = p;
  e->ops_ = &ops;
  e->ckpt_ = &ckpt;
  int64_t chunk = 1;
  for (const auto& v : p.versions) chunk = std::max(chunk, v.chunk);
  for (const auto& b : p.buffers) e->buffers_[b.name] = Tensor::zeros(type_of(b.dtype), {chunk, b.width});
  for (const auto& c : p.caches) {
    if (c.layer != int(e->cache_k_.size())) return error("program: caches must be listed by layer from 0");
    e->cache_k_.push_back(Tensor::zeros(type_of(c.dtype), {c.capacity, c.kv_heads, c.head_dim}));
    e->cache_v_.push_back(Tensor::zeros(type_of(c.dtype), {c.capacity, c.kv_heads, c.head_dim}));
  }
  e->states_.resize(p.states.size());
  // Constants: the views' rows, stacked, rounded to their type once.
  std::map<std::string, Tensor> widened;
  for (size_t i = 0; i < p.units.size(); ++i) {
    const Unit& u = p.units[i];
    std::vector<Tensor> bound;
    for (const auto& c : u.constants) {
      int64_t numel = 1;
      for (int64_t d : c.shape) numel *= d;
      Tensor t = Tensor::zeros(DType::F32, c.shape);
      int64_t at = 0;
      for (const auto& v : c.parts) {
        const Tensor* src = ckpt.find(v.tensor);
        const std::string where = "unit " + std::to_string(i) + " (" + u.kind + ", " + u.block + "): " + c.role;
        if (!src) return error(where + ": the checkpoint has no tensor '" + v.tensor + "'");
        // A tensor's rows are the constant's rows: its elements in rows of
        // the constant's width (an [experts, N, K] stack's N rows of each
        // expert; a vector's elements).
        const int64_t row = c.shape.size() >= 2 ? c.shape.back() : 1;
        if (row < 1 || src->numel() % row != 0 || v.end > src->numel() / row)
          return error(where + ": rows [" + std::to_string(v.begin) + ", " + std::to_string(v.end) + ") of '" + v.tensor +
                       "' " + dims_str(src->shape) + " in rows of " + std::to_string(row) + " are past its end");
        auto it = widened.find(v.tensor);
        if (it == widened.end()) it = widened.emplace(v.tensor, to_f32(*src)).first;
        const int64_t n = (v.end - v.begin) * row;
        if (at + n > numel) return error(where + ": its parts hold more than its shape " + dims_str(c.shape));
        std::memcpy(t.f32() + at, it->second.f32() + v.begin * row, size_t(n) * sizeof(float));
        at += n;
      }
      if (at != numel) return error("unit " + std::to_string(i) + " (" + u.kind + "): " + c.role + "'s parts fill " +
                                    std::to_string(at) + " of its " + std::to_string(numel) + " elements");
      const DType ct = type_of(c.dtype);
      const float offset = float(c.offset);
      for (int64_t j = 0; j < numel; ++j) t.f32()[j] = round_to(ct, t.f32()[j]) + offset;
      bound.push_back(std::move(t));
    }
    e->constants_.push_back(std::move(bound));
  }
  return e;
}

void Emulator::check_against(const Graph& step, UnitCheck* log, const Tolerance& tol) {
  check_graph_ = &step;
  check_ = log;
  tol_ = tol;
}

void Emulator::seed(int32_t token, int64_t position) {
  token_ = token;
  position_ = position;
  for (auto& s : states_) s.reset();  // a conversation's start: zeros
}

std::span<const float> Emulator::logits() const {
  auto it = buffers_.find("logits");
  if (it == buffers_.end()) return {};
  return {it->second.f32(), size_t(it->second.dim(1))};
}

Result<Tensor> Emulator::read(const Slot& s, int64_t first_row, int64_t rows) const {
  auto it = buffers_.find(s.buffer);
  if (it == buffers_.end()) return error("no buffer '" + s.buffer + "'");
  const Tensor& b = it->second;
  const int64_t W = b.dim(1), w = width_of(s, b), c0 = s.end ? s.begin : 0;
  if (c0 + w > W) return error("buffer '" + s.buffer + "' has " + std::to_string(W) + " columns, not " + std::to_string(c0 + w));
  Tensor t = Tensor::zeros(b.dtype == DType::I32 ? DType::I32 : DType::F32, {rows, w});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < w; ++j) {
      const int64_t i = (first_row + r) * W + c0 + j;
      if (b.dtype == DType::I32) t.i32()[r * w + j] = b.i32()[i];
      else t.f32()[r * w + j] = get(b, i);
    }
  return t;
}

void Emulator::store(const Slot& s, const Tensor& t, int64_t first_row) {
  Tensor& b = buffers_[s.buffer];
  const int64_t W = b.dim(1), w = width_of(s, b), c0 = s.end ? s.begin : 0;
  const int64_t rows = t.numel() / w;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < w; ++j) {
      const int64_t i = (first_row + r) * W + c0 + j;
      if (b.dtype == DType::I32) b.i32()[i] = t.i32()[r * w + j];
      else put(b, i, t.f32()[r * w + j]);
    }
}

// What unit u computes from its inputs `in` (as read) and constants, in
// f32; one tensor per write slot, [rows, width]. Rows are the absolute rows
// first_row.. of the chunk (positions position_ + first_row ..).
Result<std::vector<Tensor>> Emulator::compute(const Unit& u, const std::vector<Tensor>& in,
                                              const std::vector<Tensor>& k, int64_t rows, int64_t first_row,
                                              std::unique_ptr<OpState>* state) const {
  const OpTable& ops = *ops_;
  const std::string where = u.block + " " + u.kind + " (" + u.at + ")";
  auto attr_i = [&](const char* n) { return u.attrs.value(n, int64_t(0)); };
  if (u.kind == "embedding") {
    Tensor ids = Tensor::zeros(DType::I32, {rows});
    std::memcpy(ids.i32(), in[0].i32(), size_t(rows) * 4);
    ARCH_TRY(Tensor out, reference(ops, "embed", Attrs::object(), {k[0], ids}, {rows, k[0].dim(1)}, where));
    if (u.attrs.contains("scale")) {  // the rows scaled, as the graph's mul by its number does (in f32)
      ARCH_TRY(out, reference(ops, "mul", Attrs::object(), {out, scalar(u.attrs["scale"].get<float>())}, out.shape, where));
    }
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "rms_norm") {
    // The weight in the norm, or after it as a product (with numbers after
    // that: Gemma 4's router input), as the graph's ops compute it.
    const bool after = u.attrs.value("weight", std::string()) == "after";
    ARCH_TRY(Tensor out, reference(ops, "rms_norm", {{"eps", u.attrs.value("eps", 1e-6)}}, {in[0], after ? Tensor{} : k[0]},
                                   in[0].shape, where));
    if (after) {
      ARCH_TRY(out, reference(ops, "mul", Attrs::object(), {out, k[0]}, out.shape, where));
    }
    for (const auto& by : u.attrs.value("scales", nlohmann::json::array())) {
      ARCH_TRY(out, reference(ops, "mul", Attrs::object(), {out, scalar(by.get<float>())}, out.shape, where));
    }
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "head_norm") {  // a weight, or none and numbers after it (an l2 norm, scaled)
    ARCH_TRY(Tensor x, as_heads(in[0], rows, attr_i("heads"), attr_i("head_dim"), where));
    ARCH_TRY(Tensor out, reference(ops, "rms_norm", {{"eps", u.attrs.value("eps", 1e-6)}}, {x, k.empty() ? Tensor{} : k[0]},
                                   x.shape, where));
    for (const auto& by : u.attrs.value("scales", nlohmann::json::array())) {
      ARCH_TRY(out, reference(ops, "mul", Attrs::object(), {out, scalar(by.get<float>())}, out.shape, where));
    }
    out.shape = in[0].shape;
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "output_gate") {  // attn * sigmoid(gate)
    ARCH_TRY(Tensor sg, reference(ops, "sigmoid", Attrs::object(), {in[1]}, in[1].shape, where));
    ARCH_TRY(Tensor out, reference(ops, "mul", Attrs::object(), {in[0], sg}, in[0].shape, where));
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "conv") {  // silu(causal_conv1d(x) + bias), its last inputs the state
    if (!state) return error(where + ": a conv unit without its state");
    const int64_t C = in[0].dim(1);
    if (k.empty() || k[0].shape.size() != 2 || k[0].dim(0) != C)
      return error(where + ": its weight is not [" + std::to_string(C) + ", kernel]");
    ARCH_TRY(auto y, run_reference(ops, "causal_conv1d", Attrs::object(), {in[0], k[0]}, {{rows, C}, k[0].shape}, *state, where));
    Tensor out = std::move(y[0]);
    if (k.size() > 1) {
      ARCH_TRY(out, reference(ops, "add", Attrs::object(), {out, k[1]}, out.shape, where));
    }
    ARCH_TRY(out, reference(ops, u.attrs.value("activation", std::string("silu")), Attrs::object(), {out}, out.shape, where));
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "gates") {  // decay = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b)
    if (k.size() != 2 || k[0].numel() != in[0].dim(1) || k[1].numel() != in[0].dim(1))
      return error(where + ": its A_log and dt_bias are not one number a value head");
    ARCH_TRY(Tensor e, reference(ops, "exp", Attrs::object(), {k[0]}, k[0].shape, where));
    ARCH_TRY(Tensor n, reference(ops, "neg", Attrs::object(), {e}, e.shape, where));
    ARCH_TRY(Tensor s, reference(ops, "add", Attrs::object(), {in[0], k[1]}, in[0].shape, where));
    ARCH_TRY(Tensor sp, reference(ops, "softplus", Attrs::object(), {s}, s.shape, where));
    ARCH_TRY(Tensor decay, reference(ops, "mul", Attrs::object(), {n, sp}, sp.shape, where));
    ARCH_TRY(Tensor beta, reference(ops, "sigmoid", Attrs::object(), {in[1]}, in[1].shape, where));
    return std::vector<Tensor>{std::move(decay), std::move(beta)};
  }
  if (u.kind == "delta_rule") {  // one step of each value head's matrix per row
    if (!state) return error(where + ": a delta_rule unit without its state");
    const int64_t H = attr_i("heads"), KH = attr_i("key_heads"), Dk = attr_i("key_dim"), Dv = attr_i("value_dim");
    if (KH < 1 || H % KH != 0) return error(where + ": " + std::to_string(H) + " value heads do not share " + std::to_string(KH) + " key heads");
    ARCH_TRY(Tensor q, as_heads(in[0], rows, KH, Dk, where));
    ARCH_TRY(Tensor kk, as_heads(in[1], rows, KH, Dk, where));
    ARCH_TRY(Tensor v, as_heads(in[2], rows, H, Dv, where));
    if (in[3].numel() != rows * H || in[4].numel() != rows * H) return error(where + ": its gates are not one number a value head");
    Tensor decay = in[3], beta = in[4];
    decay.shape = beta.shape = {rows, H};
    ARCH_TRY(auto y, run_reference(ops, "gated_delta_rule", Attrs::object(), {q, kk, v, decay, beta}, {{rows, H, Dv}, {H, Dk, Dv}},
                                   *state, where));
    y[0].shape = {rows, H * Dv};
    return std::vector<Tensor>{std::move(y[0])};
  }
  if (u.kind == "route") {  // softmax, the top k; their weights (gathered), renormalised, scaled
    const int64_t E = attr_i("experts"), K = attr_i("k");
    if (E < 1 || K < 1 || K > E || in[0].numel() != rows * E)
      return error(where + ": " + std::to_string(K) + " of " + std::to_string(E) + " experts do not fit its router's logits");
    Tensor logits = in[0];
    logits.shape = {rows, E};
    std::unique_ptr<OpState> none;
    ARCH_TRY(Tensor probs, reference(ops, "softmax", Attrs::object(), {logits}, {rows, E}, where));
    ARCH_TRY(auto top, run_reference(ops, "topk", {{"k", K}}, {probs}, {{rows, K}, {rows, K}}, none, where, {DType::F32, DType::I32}));
    Tensor w = std::move(top[0]);
    if (u.attrs.value("weights", std::string("topk")) == "gathered") {
      ARCH_TRY(w, reference(ops, "gather", Attrs::object(), {probs, top[1]}, {rows, K}, where));
    }
    if (u.attrs.value("normalize", false)) {
      ARCH_TRY(Tensor sum, reference(ops, "sum", {{"axis", -1}, {"keepdim", true}}, {w}, {rows, 1}, where));
      ARCH_TRY(w, reference(ops, "div", Attrs::object(), {w, sum}, {rows, K}, where));
    }
    if (u.attrs.contains("scale")) {
      ARCH_TRY(w, reference(ops, "mul", Attrs::object(), {w, scalar(u.attrs["scale"].get<float>())}, {rows, K}, where));
    }
    if (!k.empty()) {  // times each chosen expert's own scale
      if (k[0].numel() != E) return error(where + ": its expert scale is not one number an expert");
      Tensor table = k[0], ids = top[1];
      table.shape = {E, 1};
      w.shape = {rows, K, 1};
      ARCH_TRY(Tensor es, reference(ops, "embed", Attrs::object(), {table, ids}, {rows, K, 1}, where));
      ARCH_TRY(w, reference(ops, "mul", Attrs::object(), {w, es}, {rows, K, 1}, where));
      w.shape = {rows, K};
    }
    return std::vector<Tensor>{std::move(w), std::move(top[1])};
  }
  if (u.kind == "expert_matvec") {  // each write: a section of the stacked experts, the chosen k's rows only
    const int64_t E = attr_i("experts"), K = attr_i("k");
    const Tensor& ids = in[1];
    if (E < 1 || K < 1 || ids.dtype != DType::I32 || ids.numel() != rows * K || k.empty() || k[0].shape.size() != 2)
      return error(where + ": its expert numbers are not " + std::to_string(K) + " a row of " + std::to_string(E) + " experts");
    for (int64_t i = 0; i < ids.numel(); ++i)
      if (ids.i32()[i] < 0 || ids.i32()[i] >= E) return error(where + ": expert " + std::to_string(ids.i32()[i]) + " of " + std::to_string(E));
    Tensor idx = ids;
    idx.shape = {rows, K};
    const int64_t width = k[0].dim(1), sections = int64_t(u.writes.size());
    if (k[0].dim(0) % (E * sections) != 0) return error(where + ": its constant's rows are not " + std::to_string(sections) + " stacks of " + std::to_string(E) + " experts");
    const int64_t R = k[0].dim(0) / (E * sections);
    Tensor x = in[0];
    if (x.numel() == rows * K * width) x.shape = {rows, K, width};  // a row per choice (the down projection)
    else if (x.numel() == rows * width) x.shape = {rows, width};
    else return error(where + ": its input rows are not " + std::to_string(width) + " wide");
    std::vector<Tensor> out;
    for (int64_t sct = 0; sct < sections; ++sct) {
      Tensor w = Tensor::zeros(DType::F32, {E, R, width});
      std::memcpy(w.f32(), k[0].f32() + sct * E * R * width, size_t(E * R * width) * sizeof(float));
      ARCH_TRY(Tensor y, reference(ops, "routed_matmul", Attrs::object(), {x, w, idx}, {rows, K, R}, where));
      y.shape = {rows, K * R};
      out.push_back(std::move(y));
    }
    return out;
  }
  if (u.kind == "combine") {  // sum_j weight_j down_j, plus the shared expert (gated by its sigmoid)
    const int64_t K = attr_i("k");
    if (K < 1 || in[1].numel() != rows * K || in[0].numel() % (rows * K) != 0)
      return error(where + ": its experts' outputs and weights are not " + std::to_string(K) + " a row");
    const int64_t D = in[0].numel() / (rows * K);
    Tensor down = in[0], w = in[1];
    down.shape = {rows, K, D};
    w.shape = {rows, K, 1};
    ARCH_TRY(Tensor m, reference(ops, "mul", Attrs::object(), {down, w}, {rows, K, D}, where));
    ARCH_TRY(Tensor out, reference(ops, "sum", {{"axis", 1}, {"keepdim", false}}, {m}, {rows, D}, where));
    const std::string shared = u.attrs.value("shared", std::string("none"));
    if (shared != "none") {
      if (in.size() < (shared == "gated" ? 4u : 3u)) return error(where + ": its shared expert's inputs are missing");
      Tensor s = in[2];
      if (shared == "gated") {
        ARCH_TRY(Tensor sg, reference(ops, "sigmoid", Attrs::object(), {in[3]}, in[3].shape, where));
        ARCH_TRY(s, reference(ops, "mul", Attrs::object(), {sg, in[2]}, in[2].shape, where));
      }
      ARCH_TRY(out, reference(ops, "add", Attrs::object(), {out, s}, {rows, D}, where));
    }
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "gated_norm") {  // rms_norm(o, w) * silu(z), per head
    ARCH_TRY(Tensor o, as_heads(in[0], rows, attr_i("heads"), attr_i("head_dim"), where));
    ARCH_TRY(Tensor z, as_heads(in[1], rows, attr_i("heads"), attr_i("head_dim"), where));
    ARCH_TRY(Tensor nrm, reference(ops, "rms_norm", {{"eps", u.attrs.value("eps", 1e-6)}}, {o, k[0]}, o.shape, where));
    ARCH_TRY(Tensor act, reference(ops, u.attrs.value("activation", std::string("silu")), Attrs::object(), {z}, z.shape, where));
    ARCH_TRY(Tensor out, reference(ops, "mul", Attrs::object(), {nrm, act}, o.shape, where));
    out.shape = in[0].shape;
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "matvec") {
    const int64_t N = k[0].dim(0);
    std::vector<Tensor> args{in[0], k[0]};
    if (k.size() > 1) args.push_back(k[1]);
    ARCH_TRY(Tensor y, reference(ops, "matmul", {{"transpose_b", true}}, args, {rows, N}, where));
    if (u.attrs.contains("scale")) {  // the output times a number, as the graph's mul after it
      ARCH_TRY(y, reference(ops, "mul", Attrs::object(), {y, scalar(u.attrs["scale"].get<float>())}, y.shape, where));
    }
    std::vector<Tensor> out;
    int64_t col = 0;
    for (const auto& s : u.writes) {
      const int64_t w = s.end ? s.end - s.begin : N;
      if (col + w > N) return error(where + ": its writes take more than the " + std::to_string(N) + " rows of its constant");
      Tensor part = Tensor::zeros(DType::F32, {rows, w});
      for (int64_t r = 0; r < rows; ++r) std::memcpy(part.f32() + r * w, y.f32() + r * N + col, size_t(w) * 4);
      col += w;
      out.push_back(std::move(part));
    }
    return out;
  }
  if (u.kind == "rope") {
    ARCH_TRY(Tensor x, as_heads(in[0], rows, attr_i("heads"), attr_i("head_dim"), where));
    Tensor pos = Tensor::zeros(DType::I32, {rows});
    for (int64_t r = 0; r < rows; ++r) pos.i32()[r] = int32_t(position_ + first_row + r);
    Attrs a = u.attrs;
    a.erase("heads");
    a.erase("head_dim");
    ARCH_TRY(Tensor out, reference(ops, "rope", a, {x, pos}, x.shape, where));
    out.shape = in[0].shape;
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "attention") {
    const int layer = int(attr_i("layer"));
    const int64_t H = attr_i("heads"), KH = attr_i("kv_heads"), D = attr_i("head_dim");
    const int64_t T = position_ + first_row + rows;
    ARCH_TRY(Tensor q, as_heads(in[0], rows, H, D, where));
    // The keys from the first position any of these rows sees (a window's
    // last ones), each from its row of the cache (a window's ring).
    const Cache& c = p_.caches[size_t(layer)];  // a listed one (parse_program)
    if (KH != c.kv_heads || D != c.head_dim)
      return error(where + ": " + std::to_string(KH) + " kv heads of " + std::to_string(D) + " are not its cache's " +
                   std::to_string(c.kv_heads) + " of " + std::to_string(c.head_dim));
    const int64_t lo = c.window > 0 ? std::max<int64_t>(0, position_ + first_row - c.window + 1) : 0;
    if (T - lo > c.capacity)
      return error("positions " + std::to_string(lo) + ".." + std::to_string(T - 1) + " do not fit the layer's cache of " +
                   std::to_string(c.capacity) + " rows");
    Tensor kk = Tensor::zeros(DType::F32, {T - lo, KH, D}), vv = Tensor::zeros(DType::F32, {T - lo, KH, D});
    const int64_t row = KH * D;
    for (int64_t t = lo; t < T; ++t)
      for (int64_t i = 0; i < row; ++i) {
        kk.f32()[(t - lo) * row + i] = get(cache_k_[layer], (t % c.capacity) * row + i);
        vv.f32()[(t - lo) * row + i] = get(cache_v_[layer], (t % c.capacity) * row + i);
      }
    Attrs a = {{"causal", true}, {"scale", u.attrs.value("scale", 1.0)}, {"window", u.attrs.value("window", int64_t(0))},
               {"softcap", u.attrs.value("softcap", 0.0)}};
    ARCH_TRY(Tensor out, reference(ops, "attention", a, {q, kk, vv, Tensor{}}, {rows, H, D}, where));
    out.shape = {rows, H * D};
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "softcap") {  // cap * tanh(x / cap), as the graph's div, tanh and mul compute it
    const Tensor cap = scalar(u.attrs.value("cap", 1.0f));
    ARCH_TRY(Tensor d, reference(ops, "div", Attrs::object(), {in[0], cap}, in[0].shape, where));
    ARCH_TRY(Tensor t, reference(ops, "tanh", Attrs::object(), {d}, in[0].shape, where));
    ARCH_TRY(Tensor out, reference(ops, "mul", Attrs::object(), {t, cap}, in[0].shape, where));
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "add") {  // a + b, the sum times a number where the unit has a scale
    ARCH_TRY(Tensor out, reference(ops, "add", Attrs::object(), {in[0], in[1]}, in[0].shape, where));
    if (u.attrs.contains("scale")) {
      ARCH_TRY(out, reference(ops, "mul", Attrs::object(), {out, scalar(u.attrs["scale"].get<float>())}, out.shape, where));
    }
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "scale") {  // x times a number, or a one-element constant
    const Tensor by = k.empty() ? scalar(u.attrs.value("scale", 1.0f)) : k[0];
    ARCH_TRY(Tensor out, reference(ops, "mul", Attrs::object(), {in[0], by}, in[0].shape, where));
    return std::vector<Tensor>{std::move(out)};
  }
  if (u.kind == "swiglu") {
    ARCH_TRY(Tensor act, reference(ops, u.attrs.value("activation", std::string("silu")), Attrs::object(), {in[0]}, in[0].shape, where));
    ARCH_TRY(Tensor out, reference(ops, "mul", Attrs::object(), {act, in[1]}, in[0].shape, where));
    return std::vector<Tensor>{std::move(out)};
  }
  return error(where + ": the emulator has no unit '" + u.kind + "'");
}

namespace {

// Tensors of one row width stacked by rows.
Tensor stack(const std::vector<Tensor>& parts) {
  int64_t rows = 0;
  for (const auto& p : parts) rows += p.shape[0];
  Dims shape = parts[0].shape;
  shape[0] = rows;
  Tensor t = Tensor::zeros(DType::F32, shape);
  int64_t at = 0;
  for (const auto& p : parts) std::memcpy(t.f32() + at, p.f32(), p.nbytes()), at += p.numel();
  return t;
}

}  // namespace

Result<std::vector<Tensor>> Emulator::reference_constants(const Unit& u) const {
  // The weights the IR's ops of this unit read, from the graph's own bindings.
  const Graph& g = *check_graph_;
  auto weight_tensor = [&](int v) -> Result<Tensor> {
    const WeightRef* w = g.weight_of(v);
    float offset = 0;
    if (const auto wn = w ? std::nullopt : g.weight_plus_number(v)) {  // a norm's 1 + w, as the graph computes it
      w = g.weight_of(wn->first);
      offset = float(wn->second);
    }
    if (!w) return error("'" + (v >= 0 ? g.values[v].name : std::string("?")) + "' is not a weight");
    const Tensor* t = ckpt_->find(w->tensor);
    if (!t) return error("no tensor '" + w->tensor + "'");
    Tensor f = to_f32(*t);  // a copy of its own
    for (int64_t i = 0; offset != 0 && i < f.numel(); ++i) f.f32()[i] += offset;
    return f;
  };
  auto node_of = [&](const std::string& value) -> const Node* {
    const int v = g.find_value(value);
    return v >= 0 && g.values[v].producer >= 0 ? &g.nodes[g.values[v].producer] : nullptr;
  };
  auto producer = [&](int v) -> const Node* {
    return v >= 0 && g.values[v].producer >= 0 ? &g.nodes[g.values[v].producer] : nullptr;
  };
  std::vector<Tensor> out;
  if (u.kind == "matvec") {
    // Each value: a projection's output, or a view of it through reshapes
    // and slices; its rows of the matrix found by putting the column
    // numbers through those ops' own reference kernels.
    std::vector<Tensor> ws, bs;
    for (const auto& value : u.values) {
      std::vector<const Node*> moves;
      const Node* n = node_of(value);
      if (n && n->op == "mul" && u.attrs.contains("scale")) n = producer(n->inputs[0]);  // the scaled output: the product before
      while (n && (n->op == "reshape" || n->op == "slice")) {
        moves.push_back(n);
        n = producer(n->inputs[0]);
      }
      std::optional<Tensor> bias;
      if (n && n->op == "add") {
        const int other = g.weight_of(n->inputs[1]) ? n->inputs[1] : n->inputs[0];
        ARCH_TRY(Tensor b, weight_tensor(other));
        bias = std::move(b);
        n = producer(other == n->inputs[1] ? n->inputs[0] : n->inputs[1]);
      }
      if (!n || n->op != "matmul") return error("'" + value + "' is not a projection's output or a view of it");
      ARCH_TRY(Tensor w, weight_tensor(n->inputs[1]));
      const int64_t N = w.shape[0], width = w.numel() / std::max<int64_t>(1, N);
      Tensor cols = Tensor::zeros(DType::F32, {1, N});
      for (int64_t i = 0; i < N; ++i) cols.f32()[i] = float(i);
      for (auto it = moves.rbegin(); it != moves.rend(); ++it) {
        Dims shape = {1};
        const Shape& s = g.values[(*it)->outputs[0]].type.shape;
        for (size_t i = 1; i < s.size(); ++i) shape.push_back(s[i].n);
        ARCH_TRY(cols, reference(*ops_, (*it)->op, (*it)->attrs, {cols}, shape, "--check " + value));
      }
      Tensor rows = Tensor::zeros(DType::F32, {cols.numel(), width});
      Tensor brows = Tensor::zeros(DType::F32, {cols.numel()});
      for (int64_t i = 0; i < cols.numel(); ++i) {
        const int64_t r = int64_t(cols.f32()[i]);
        std::memcpy(rows.f32() + i * width, w.f32() + r * width, size_t(width) * sizeof(float));
        if (bias) brows.f32()[i] = bias->f32()[r];
      }
      ws.push_back(std::move(rows));
      if (bias) bs.push_back(std::move(brows));
    }
    out.push_back(stack(ws));
    if (!bs.empty()) out.push_back(stack(bs));
    return out;
  }
  if (u.kind == "head_norm" && u.constants.empty()) return out;  // an l2 norm: no weight
  if (u.kind == "scale") {  // mul(x, w): the one-element weight
    const Node* m = node_of(u.values[0]);
    if (u.constants.empty()) return out;
    if (!m || m->op != "mul") return error("'" + u.values[0] + "' is not a product");
    ARCH_TRY(Tensor w, weight_tensor(g.weight_of(m->inputs[1]) ? m->inputs[1] : m->inputs[0]));
    out.push_back(std::move(w));
    return out;
  }
  if (u.kind == "expert_matvec") {  // each value's routed_matmul: its stacked experts, section after section
    std::vector<Tensor> parts;
    for (const auto& value : u.values) {
      // A slice of the routed matmul's rows (one matrix holding gate and up).
      const Node* rm = node_of(value);
      int64_t first = 0, end = -1;
      if (rm && rm->op == "slice") {
        first = rm->attrs.value("start", int64_t(0)), end = rm->attrs.value("end", int64_t(0));
        rm = producer(rm->inputs[0]);
      }
      if (!rm || rm->op != "routed_matmul") return error("'" + value + "' is not a routed matmul's output");
      std::vector<Tensor> experts;
      if (const Node* st = producer(rm->inputs[1]); st && st->op == "stack") {
        for (int e : st->inputs) {
          ARCH_TRY(Tensor w, weight_tensor(e));
          experts.push_back(std::move(w));
        }
      } else {
        ARCH_TRY(Tensor all, weight_tensor(rm->inputs[1]));  // [experts, N, width]
        if (all.shape.size() != 3) return error("'" + value + "' routes over a weight not [experts, N, width]");
        for (int64_t e = 0; e < all.shape[0]; ++e) {
          Tensor w = Tensor::zeros(DType::F32, {all.shape[1], all.shape[2]});
          std::memcpy(w.f32(), all.f32() + e * w.numel(), w.nbytes());
          experts.push_back(std::move(w));
        }
      }
      for (auto& w : experts) {
        const int64_t width = w.numel() / std::max<int64_t>(1, w.shape[0]);
        const int64_t b = end < 0 ? w.shape[0] : end;
        Tensor part = Tensor::zeros(DType::F32, {b - first, width});
        std::memcpy(part.f32(), w.f32() + first * width, part.nbytes());
        parts.push_back(std::move(part));
      }
    }
    out.push_back(stack(parts));
    return out;
  }
  if (u.kind == "conv") {  // silu(conv(x, reshape(w)) [+ b])
    const Node* n = producer(node_of(u.values[0]) ? node_of(u.values[0])->inputs[0] : -1);
    int bias = -1;
    if (n && n->op == "add") {
      bias = g.weight_of(n->inputs[1]) ? n->inputs[1] : n->inputs[0];
      n = producer(bias == n->inputs[1] ? n->inputs[0] : n->inputs[1]);
    }
    if (!n || n->op != "causal_conv1d") return error("'" + u.values[0] + "' is not a convolution's activation");
    const Node* rs = producer(n->inputs[1]);
    ARCH_TRY(Tensor w, weight_tensor(rs && rs->op == "reshape" ? rs->inputs[0] : n->inputs[1]));
    const Shape& ws = g.values[n->inputs[1]].type.shape;
    w.shape.clear();
    for (const Dim& d : ws) w.shape.push_back(d.n);
    out.push_back(std::move(w));
    if (bias >= 0) {
      ARCH_TRY(Tensor b, weight_tensor(bias));
      out.push_back(std::move(b));
    }
    return out;
  }
  if (u.kind == "gates") {  // mul(neg(exp(A_log)), softplus(add(a, dt_bias)))
    const Node* m = node_of(u.values[0]);
    const Node *ex = nullptr, *shift = nullptr;
    for (int i = 0; m && i < 2; ++i) {
      const Node* p = producer(m->inputs[size_t(i)]);
      if (p && p->op == "neg") ex = producer(p->inputs[0]);
      if (p && p->op == "softplus") shift = producer(p->inputs[0]);
    }
    if (!ex || !shift) return error("'" + u.values[0] + "' is not -exp(A_log) * softplus(a + dt_bias)");
    ARCH_TRY(Tensor a_log, weight_tensor(ex->inputs[0]));
    ARCH_TRY(Tensor dt, weight_tensor(g.weight_of(shift->inputs[1]) ? shift->inputs[1] : shift->inputs[0]));
    out.push_back(std::move(a_log));
    out.push_back(std::move(dt));
    return out;
  }
  if (u.kind == "gated_norm") {  // mul(rms_norm(o, w), silu(z))
    const Node* m = node_of(u.values[0]);
    for (int i = 0; m && i < 2; ++i)
      if (const Node* p = producer(m->inputs[size_t(i)]); p && p->op == "rms_norm") {
        ARCH_TRY(Tensor w, weight_tensor(p->inputs[1]));
        out.push_back(std::move(w));
        return out;
      }
    return error("'" + u.values[0] + "' is not rms_norm(o, w) * silu(z)");
  }
  if (u.kind == "route") {  // the per-expert scale: embed(reshape(w), ids)'s table
    if (u.constants.empty()) return out;
    const Node* m = node_of(u.values[0]);
    for (int i = 0; m && m->op == "mul" && i < 2; ++i)
      if (const Node* em = producer(m->inputs[size_t(i)]); em && em->op == "embed") {
        const Node* rs = producer(em->inputs[0]);
        ARCH_TRY(Tensor w, weight_tensor(rs && rs->op == "reshape" ? rs->inputs[0] : em->inputs[0]));
        out.push_back(std::move(w));
        return out;
      }
    return error("'" + u.values[0] + "' is not the weights times a per-expert scale");
  }
  if (u.kind == "rms_norm" && u.attrs.value("weight", std::string()) == "after") {  // mul(mul(rms_norm(x), w), c...)
    const Node* m = node_of(u.values[0]);
    const size_t numbers = u.attrs.value("scales", nlohmann::json::array()).size();
    for (size_t i = 0; m && i < numbers; ++i) m = producer(m->inputs[0]);
    if (!m || m->op != "mul") return error("'" + u.values[0] + "' is not a norm times a weight");
    ARCH_TRY(Tensor w, weight_tensor(g.weight_of(m->inputs[1]) ? m->inputs[1] : m->inputs[0]));
    out.push_back(std::move(w));
    return out;
  }
  if (u.kind == "rms_norm" || u.kind == "head_norm" || u.kind == "embedding") {
    const Node* n = node_of(u.values[0]);
    if (n && u.kind == "embedding" && n->op == "mul")  // the scaled rows: the lookup before the scale
      for (int in : n->inputs)
        if (in >= 0 && g.values[in].producer >= 0 && g.nodes[g.values[in].producer].op == "embed") n = &g.nodes[g.values[in].producer];
    if (!n) return error("'" + u.values[0] + "' has no op");
    ARCH_TRY(Tensor w, weight_tensor(u.kind == "embedding" ? n->inputs[0] : n->inputs[1]));
    out.push_back(std::move(w));
  }
  return out;
}

Status Emulator::run_unit(size_t index, const Unit& u, int64_t rows, bool bounded) {
  const std::string where = "unit " + std::to_string(index) + " (" + u.kind + ", " + u.block + ", " + u.at + ")";
  // A prompt chunk's final norm and head run on its last row alone.
  const int64_t first = u.last_row ? rows - 1 : 0, n = u.last_row ? 1 : rows;
  if (u.kind == "advance") {
    position_ += rows;
    return {};
  }
  if (u.kind == "argmax") {
    ARCH_TRY(Tensor l, read(u.reads[0], 0, 1));
    const float* x = l.f32();
    int64_t best = 0;
    for (int64_t i = 1; i < l.numel(); ++i)
      if (x[i] > x[best]) best = i;
    token_ = int32_t(best);
    buffers_["token"].i32()[0] = token_;
    return {};
  }
  if (u.kind == "kv_write") {
    const int layer = int(u.attrs.value("layer", int64_t(0)));
    ARCH_TRY(Tensor k, read(u.reads[0], 0, rows));
    ARCH_TRY(Tensor v, read(u.reads[1], 0, rows));
    const int64_t row = k.numel() / rows, capacity = cache_k_[layer].dim(0);  // a listed layer (parse_program)
    if (row != cache_k_[layer].dim(1) * cache_k_[layer].dim(2) || v.numel() != k.numel())
      return error(where + ": its keys and values are not rows of the layer's cache " + dims_str(cache_k_[layer].shape));
    // A window's ring takes any position (row p % capacity); another cache ends at the context.
    if (p_.caches[size_t(layer)].window == 0 && position_ + rows > capacity)
      return error(where + ": position " + std::to_string(position_ + rows) + " is past the KV cache's " +
                   std::to_string(capacity) + " rows (the program's max_context)");
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < row; ++i) {
        put(cache_k_[layer], ((position_ + r) % capacity) * row + i, k.f32()[r * row + i]);
        put(cache_v_[layer], ((position_ + r) % capacity) * row + i, v.f32()[r * row + i]);
      }
    return {};
  }
  // The units that compute: inputs read at their rows (the embedding reads
  // the ids, or in a decode step the carried token).
  std::vector<Tensor> in;
  for (const auto& s : u.reads) {
    if (s.buffer == "cache") continue;
    const bool row_zero = (u.kind == "matvec" || u.kind == "argmax" || u.kind == "softcap") && u.last_row;
    ARCH_TRY(Tensor t, read(s, row_zero ? 0 : first, n));
    in.push_back(std::move(t));
  }
  // A recurrent unit's state (parse_program checked its index); --check
  // runs the reference from a copy of the state as it was before.
  std::unique_ptr<OpState>* state = nullptr;
  std::unique_ptr<OpState> before;
  if (u.kind == "conv" || u.kind == "delta_rule") {
    state = &states_[size_t(u.attrs.value("state", int64_t(0)))];
    if (check_ && !bounded && *state) before = (*state)->clone();
  }
  auto out = compute(u, in, constants_[index], n, first, state);
  if (!out.ok()) return error(where + ": " + out.error().message);
  const int64_t store_row = u.last_row ? 0 : first;
  for (size_t i = 0; i < u.writes.size(); ++i) store(u.writes[i], (*out)[i], store_row);
  if (!check_) return {};
  if (bounded) {
    ++check_->skipped;
    ++check_->skipped_why["bounded per call (a prompt chunk's rows)"];
    const std::string line = where + " not checked in the prompt version: bounded per call (rows)";
    if (std::find(check_->skipped_units.begin(), check_->skipped_units.end(), line) == check_->skipped_units.end())
      check_->skipped_units.push_back(line);
    return {};
  }
  // The unit's output as stored, against its ops' f32 reference with the
  // IR's own weights.
  auto ref_k = reference_constants(u);
  if (!ref_k.ok()) return error(where + ": --check: " + ref_k.error().message);
  auto ref = compute(u, in, *ref_k, n, first, state ? &before : nullptr);
  if (!ref.ok()) return error(where + ": --check: " + ref.error().message);
  // One bound for the unit: its largest |reference| over all it writes (a
  // merged matvec's parts are one product; a small part, such as a gate's
  // few columns, is judged at the scale of the whole).
  double maxref = 0;
  for (const Tensor& want : *ref)
    for (int64_t j = 0; j < want.numel(); ++j) maxref = std::max(maxref, double(std::fabs(want.f32()[j])));
  const double bound = tol_.rel * maxref + tol_.abs;
  for (size_t i = 0; i < u.writes.size(); ++i) {
    ARCH_TRY(Tensor got, read(u.writes[i], store_row, n));
    const Tensor& want = (*ref)[i];
    double miss = 0;
    for (int64_t j = 0; j < want.numel(); ++j) miss = std::max(miss, double(std::fabs(got.f32()[j] - want.f32()[j])));
    check_->worst = std::max(check_->worst, bound > 0 ? miss / bound : 0.0);
    if (!(miss <= bound))
      return error("--check: " + where + " misses its reference: '" + u.values[i] + "' off by " + std::to_string(miss) +
                   " where " + std::to_string(bound) + " is allowed (largest |reference| " + std::to_string(maxref) + ")");
  }
  ++check_->checked;
  return {};
}

Status Emulator::run(const std::string& version, int64_t rows) {
  const int64_t chunk = p_.chunk_of(version);
  if (chunk <= 0) return error("the program has no '" + version + "' version");
  if (rows < 1 || rows > chunk)
    return error("the " + version + " version runs 1 to " + std::to_string(chunk) + " rows, not " + std::to_string(rows));
  const bool bounded = version != "decode";
  for (size_t i = 0; i < p_.units.size(); ++i) {
    const Unit& u = p_.units[i];
    if (check_ && (u.kind == "kv_write" || u.kind == "advance" || u.kind == "argmax")) {
      ++check_->skipped;
      ++check_->skipped_why["state only (" + u.kind + "): judged by the units that read it"];
    }
    ARCH_TRY_STATUS(run_unit(i, u, rows, bounded));
  }
  return {};
}

Status Emulator::prompt(std::span<const int32_t> ids) {
  Tensor& b = buffers_["ids"];
  if (int64_t(ids.size()) > b.dim(0)) return error("a prompt call takes at most " + std::to_string(b.dim(0)) + " ids");
  std::copy(ids.begin(), ids.end(), b.i32());
  return run("prompt", int64_t(ids.size()));
}

Status Emulator::decode() {
  buffers_["ids"].i32()[0] = token_;  // the carried token
  return run("decode", 1);
}

Result<std::vector<int32_t>> emulate_greedy(Emulator& e, const std::vector<int32_t>& prompt, int max_new,
                                            const std::vector<int32_t>& stop_ids,
                                            const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) return error("the prompt is empty");
  const int64_t chunk = e.program().chunk_of("prompt");
  if (int64_t(prompt.size()) + max_new > e.program().max_context)
    return error("the prompt (" + std::to_string(prompt.size()) + ") and " + std::to_string(max_new) +
                 " new tokens need more positions than the program's max_context (" + std::to_string(e.program().max_context) + ")");
  e.seed(0, 0);
  for (size_t at = 0; at < prompt.size(); at += size_t(chunk)) {
    const size_t n = std::min(prompt.size() - at, size_t(chunk));
    ARCH_TRY_STATUS(e.prompt(std::span<const int32_t>(prompt).subspan(at, n)));
  }
  std::vector<int32_t> out;
  for (int i = 0; i < max_new; ++i) {
    if (i > 0) ARCH_TRY_STATUS(e.decode());
    const int32_t t = e.token();
    out.push_back(t);
    if (on_token) on_token(t);
    if (std::find(stop_ids.begin(), stop_ids.end(), t) != stop_ids.end()) break;
  }
  return out;
}

}  // namespace arch::npu2
