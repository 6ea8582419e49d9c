// place_rows(x [S, D], tokens i32 [S], rows? [N, D]) attr token -> [S, D]:
// x with each row whose token is `token` replaced by the next row of
// `rows`, in order (a vision-language model's image features put where the
// prompt holds its image tokens: transformers' masked_scatter of
// inputs_embeds). Stateful: the session's first such token takes row 0, and
// a prompt given in chunks, or a chat turn after a rewind, continues where
// its position says. A token with no row left, or with no rows given, is
// an error; rows left over are not.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// How many rows each sequence placed before each position it has seen:
// before[slot][p] for p in 0..its positions (a session's one sequence is
// slot 0; a batched session's regions are `capacity` positions apart).
struct PlacedRows : OpState {
  std::vector<std::vector<int64_t>> before{{0}};
  int64_t capacity = 0;

  std::vector<int64_t>& slot(int64_t s) {
    if (before.size() <= size_t(s)) before.resize(size_t(s) + 1, {0});
    return before[size_t(s)];
  }
  int64_t positions() const { return int64_t(before[0].size()) - 1; }
  bool can_rewind(int64_t n) const override { return n >= 0 && n <= positions(); }
  void rewind(int64_t n) override { before[0].resize(size_t(n) + 1); }
  std::unique_ptr<OpState> clone() const override { return std::make_unique<PlacedRows>(*this); }
  bool copy_rows(int64_t from, int64_t to, int64_t n) override {
    if (capacity <= 0 || from % capacity || to % capacity) return false;
    const auto& src = slot(from / capacity);
    if (int64_t(src.size()) < n + 1) return false;
    std::vector<int64_t> copy(src.begin(), src.begin() + n + 1);
    slot(to / capacity) = std::move(copy);
    return true;
  }
};

Result<std::vector<TypedShape>> place_rows_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                                 const Attrs&) {
  const Shape& x = in[0].shape;
  const Shape& t = in[1].shape;
  if (x.size() != 2 || t.size() != 1 || t[0] != x[0] || in[1].dtype != DType::I32)
    return error("place_rows: x must be [seq, D] and tokens i32 [seq], got " + shape_str(x) + ", " + shape_str(t));
  if (in.size() > 2 && is_present(present, 2)) {
    const Shape& r = in[2].shape;
    if (r.size() != 2 || r[1] != x[1])
      return error("place_rows: rows must be [N, D] for x " + shape_str(x) + ", got " + shape_str(r));
  }
  return one_output(x);
}

Status place_rows_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1)
    return kernel_error(ctx, "place_rows", "takes x, tokens and rows, and makes one output");
  ARCH_TRY_STATUS(expect_f32(ctx, "place_rows", 0));
  const Tensor& X = ctx.inputs[0];
  const Tensor& T = ctx.inputs[1];
  const bool has_rows = ctx.inputs.size() > 2 && ctx.inputs[2].data;
  if (X.shape.size() != 2 || T.dtype != DType::I32 || T.shape != Dims{X.dim(0)})
    return kernel_error(ctx, "place_rows", "bad shapes x " + dims_str(X.shape) + ", tokens " + dims_str(T.shape));
  const int64_t S = X.dim(0), D = X.dim(1);
  if (has_rows) {
    ARCH_TRY_STATUS(expect_f32(ctx, "place_rows", 2));
    if (ctx.inputs[2].shape.size() != 2 || ctx.inputs[2].dim(1) != D)
      return kernel_error(ctx, "place_rows", "rows " + dims_str(ctx.inputs[2].shape) + " are not [N, " + std::to_string(D) + "]");
  }
  ARCH_TRY_STATUS(expect_output(ctx, "place_rows", 0, {S, D}));
  if (!ctx.state) ctx.state = std::make_unique<PlacedRows>();
  auto* placed = dynamic_cast<PlacedRows*>(ctx.state.get());
  if (!placed) return kernel_error(ctx, "place_rows", "its state is of another op");
  // The call's pieces: the batched session's (each slot's rows among the
  // held ones at its region), or every row as slot 0's, where it is.
  std::vector<SequenceRows::Piece> pieces;
  if (ctx.sequences) {
    pieces = ctx.sequences->pieces;
    placed->capacity = ctx.sequences->slot_capacity;
  } else {
    pieces.push_back({0, placed->positions(), 0, S});
  }
  const int32_t token = int32_t(attr_int(ctx.attrs, "token", -1));
  const float* x = X.f32();
  float* y = ctx.outputs[0].f32();
  for (const auto& p : pieces) {
    if (p.row < 0 || p.rows < 0 || p.row + p.rows > S || p.position < 0)
      return kernel_error(ctx, "place_rows", "rows [" + std::to_string(p.row) + ", +" + std::to_string(p.rows) + ") do not fit x " + dims_str(X.shape));
    // Where the slot's rows are: its region of the held rows, or all of them.
    int64_t first = 0, N = has_rows ? ctx.inputs[2].dim(0) : 0;
    if (ctx.sequences && ctx.sequences->over_held) {
      const auto& held = ctx.sequences->held;
      const auto region = size_t(p.slot) < held.size() ? held[size_t(p.slot)] : SequenceRows::Region{};
      first = region.from, N = has_rows ? region.length : 0;
    }
    std::vector<int64_t>& before = placed->slot(p.slot);
    if (int64_t(before.size()) < p.position + 1)
      return kernel_error(ctx, "place_rows", "slot " + std::to_string(p.slot) + " is at position " +
                                                 std::to_string(before.size() - 1) + ", not " + std::to_string(p.position));
    before.resize(size_t(p.position) + 1);  // a rewind: what came after is forgotten
    int64_t next = before.back();
    for (int64_t r = p.row; r < p.row + p.rows; ++r) {
      const float* from = x + r * D;
      if (T.i32()[r] == token) {
        if (next >= N)
          return kernel_error(ctx, "place_rows",
                              N > 0 ? "token " + std::to_string(token) + " number " + std::to_string(next + 1) +
                                          " has no row to take: " + std::to_string(N) + " rows were given"
                                    : "token " + std::to_string(token) + " is in the text, but no rows were given for it (an image token without an image?)");
        from = ctx.inputs[2].f32() + (first + next++) * D;
      }
      std::copy(from, from + D, y + r * D);
      before.push_back(next);
    }
  }
  return {};
}

}  // namespace

void define_place_rows(OpTable& t) {
  t.define(checked(OpDef{
               .name = "place_rows",
               .inputs = {"x", "tokens", "rows?"},
               .attrs = {{"token", AttrSpec::Int, nlohmann::json()}},
               .shape = place_rows_shape,
               .tolerance = {0.0, 0.0},
               .stateful = true,
               .sequences = true,
               .fills = true,
               .doc = "place_rows(x [S, D], tokens i32 [S], rows? [N, D]) -> [S, D]: x with the rows at `token` replaced by rows' next ones, in order from the session's first (an image's features at its image tokens)",
           }),
           place_rows_kernel);
}

}  // namespace arch
