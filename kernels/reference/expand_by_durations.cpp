// expand_by_durations(x [T, ...], durations [T] (any shape of T items))
// attr min_length -> [F, ...]: row t of x repeated durations[t] times, in
// order, F = max(sum(durations), min_length) (rows past the sum are zeros).
// VITS' length regulator: the text-level prior repeated for each frame its
// token lasts (transformers builds the same from a cumsum of the durations
// as a 0/1 alignment matrix and multiplies). F depends on the durations'
// values, so the shape rule says `_` and the call works it out from them
// (value_shape). Durations must be whole numbers >= 0.
#include <cmath>
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// More frames than this is a fault in the durations, not speech: 2^24
// frames is some 70 hours of VITS audio.
constexpr int64_t kMaxFrames = int64_t(1) << 24;

Result<std::vector<TypedShape>> expand_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs&) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("expand_by_durations: x must be [T, ...], got []");
  if (in[1].dtype != DType::F32) return error("expand_by_durations: durations must be f32");
  Shape out = x;
  out[0] = Dim::dyn();  // as many frames as the durations' values add up to
  return one_output(out, in[0].dtype);
}

// Frames in all: sum(durations), at least min_length; or what is wrong.
Result<int64_t> total_frames(const Tensor& x, const Tensor& durations, int64_t min_length) {
  if (!x.data || x.shape.empty()) return error("x must be [T, ...]");
  if (!durations.data || durations.dtype != DType::F32) return error("durations must be f32");
  if (durations.numel() != x.shape[0])
    return error("durations " + dims_str(durations.shape) + " must hold one item per row of x " + dims_str(x.shape));
  int64_t sum = 0;
  for (int64_t t = 0; t < durations.numel(); ++t) {
    const float d = durations.f32()[t];
    if (!(d >= 0) || d != std::floor(d) || d > float(kMaxFrames))
      return error("durations[" + std::to_string(t) + "] is " + std::to_string(d) + ", not a whole number of frames >= 0");
    sum += int64_t(d);
    if (sum > kMaxFrames) return error("the durations add up to more than " + std::to_string(kMaxFrames) + " frames");
  }
  return std::max(sum, min_length);
}

Result<std::vector<TypedShape>> expand_value_shape(std::span<const Tensor> in, const Attrs& attrs) {
  ARCH_TRY(int64_t frames, total_frames(in[0], in[1], attr_int(attrs, "min_length", 0)));
  Dims out = in[0].shape;
  out[0] = frames;
  return one_output(shape_of(out), in[0].dtype);
}

Status expand_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() < 2) return kernel_error(ctx, "expand_by_durations", "x and durations are required");
  const Tensor& X = ctx.inputs[0];
  auto frames = total_frames(X, ctx.inputs[1], attr_int(ctx.attrs, "min_length", 0));
  if (!frames.ok()) return kernel_error(ctx, "expand_by_durations", frames.error().message);
  Dims want = X.shape;
  want[0] = *frames;
  ARCH_TRY_STATUS(expect_output(ctx, "expand_by_durations", 0, want, X.dtype));
  const size_t row = size_t(X.numel() / X.shape[0]) * dtype_size(X.dtype);
  const auto* x = static_cast<const char*>(X.data);
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  int64_t f = 0;
  for (int64_t t = 0; t < X.shape[0]; ++t)
    for (int64_t k = 0; k < int64_t(ctx.inputs[1].f32()[t]); ++k, ++f) std::memcpy(out + size_t(f) * row, x + size_t(t) * row, row);
  std::memset(out + size_t(f) * row, 0, size_t(*frames - f) * row);  // past the sum (min_length)
  return {};
}

}  // namespace

void define_expand_by_durations(OpTable& t) {
  t.define(checked(OpDef{
               .name = "expand_by_durations",
               .inputs = {"x", "durations"},
               .attrs = {{"min_length", AttrSpec::Int, 0}},
               .shape = expand_shape,
               .value_shape = expand_value_shape,
               .tolerance = {0, 0},
               .doc = "expand_by_durations(x [T, ...], durations [T]) -> [_, ...]: row t repeated durations[t] times",
           }),
           expand_kernel);
}

}  // namespace arch
