// log_bucket_position(query_positions i32[S], key_positions i32[T]) attrs
// buckets, max_position, span -> i32[S, T]: the row of a relative-embedding
// table of 2 span rows that each (query, key) pair reads, as DeBERTa-v2
// reads it: d = query - key, bucketed when buckets > 0 (|d| up to
// buckets / 2 exact, beyond that log-spaced so that max_position - 1 lands
// on bucket buckets - 1, sign kept), then shifted by span and clamped to
// 0 .. 2 span - 1. The bucket's arithmetic is transformers' in float32
// (ceil of log(|d| / mid) / log((max_position - 1) / mid) * (mid - 1)), so
// bucket edges match exactly.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> log_bucket_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                 const Attrs& attrs) {
  for (size_t i = 0; i < 2; ++i)
    if (in[i].dtype != DType::I32 || in[i].shape.size() != 1)
      return error("log_bucket_position: " + std::string(i ? "key" : "query") + " positions must be i32 [n], got " +
                   std::string(dtype_name(in[i].dtype)) + " " + shape_str(in[i].shape));
  const int64_t buckets = attr_int(attrs, "buckets", 0), max_position = attr_int(attrs, "max_position", 0),
                span = attr_int(attrs, "span", 0);
  if (span < 1) return error("log_bucket_position: span must be at least 1, got " + std::to_string(span));
  if (buckets > 0 && (buckets < 4 || max_position <= buckets / 2 + 1))
    return error("log_bucket_position: buckets " + std::to_string(buckets) + " and max_position " +
                 std::to_string(max_position) + " leave no logarithmic buckets (need buckets >= 4 and max_position above " +
                 std::to_string(buckets / 2 + 1) + ")");
  return one_output(Shape{in[0].shape[0], in[1].shape[0]}, DType::I32);
}

// DeBERTa-v2's bucket of relative position d.
int64_t bucket_of(int64_t d, int64_t buckets, int64_t max_position) {
  const int64_t mid = buckets / 2, a = std::llabs(d);
  if (a <= mid) return d;
  const float ratio = float(a) / float(mid);
  const float base = std::log(float(double(max_position - 1) / double(mid)));
  const float log_pos = std::ceil(std::log(ratio) / base * float(mid - 1)) + float(mid);
  return d < 0 ? -int64_t(log_pos) : int64_t(log_pos);
}

Status log_bucket_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 2; ++i) ARCH_TRY_STATUS(expect_i32(ctx, "log_bucket_position", i));
  const Tensor& Q = ctx.inputs[0];
  const Tensor& K = ctx.inputs[1];
  const int64_t S = Q.numel(), T = K.numel();
  ARCH_TRY_STATUS(expect_output(ctx, "log_bucket_position", 0, Dims{S, T}, DType::I32));
  const int64_t buckets = attr_int(ctx.attrs, "buckets", 0), max_position = attr_int(ctx.attrs, "max_position", 0),
                span = attr_int(ctx.attrs, "span", 0);
  int32_t* out = ctx.outputs[0].i32();
  for (int64_t r = 0; r < S; ++r)
    for (int64_t j = 0; j < T; ++j) {
      const int64_t d = int64_t(Q.i32()[r]) - K.i32()[j];
      const int64_t b = buckets > 0 ? bucket_of(d, buckets, max_position) : d;
      out[r * T + j] = int32_t(std::clamp<int64_t>(b + span, 0, 2 * span - 1));
    }
  return {};
}

}  // namespace

void define_log_bucket_position(OpTable& t) {
  t.define(checked(OpDef{
               .name = "log_bucket_position",
               .inputs = {"query_positions", "key_positions"},
               .attrs = {{"buckets", AttrSpec::Int, 0}, {"max_position", AttrSpec::Int, 0}, {"span", AttrSpec::Int, 0}},
               .shape = log_bucket_shape,
               .tolerance = {0, 0},
               .doc = "log_bucket_position(q i32[S], k i32[T]) -> i32[S, T]: DeBERTa's relative-table row of query - key (log-bucketed when buckets > 0, + span, clamped to 0..2 span - 1)",
           }),
           log_bucket_kernel);
}

}  // namespace arch
