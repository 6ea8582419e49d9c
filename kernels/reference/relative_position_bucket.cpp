// relative_position_bucket(query_positions i32[S], key_positions i32[T])
// -> i32[S, T]: T5's bucket of each relative position d = key - query.
// Bidirectional (an encoder): half the buckets for d > 0, and |d| in each
// half; causal (a decoder): only d <= 0 counts, as -d. Of the n buckets
// (per half), the first n/2 are exact distances; the rest grow
// logarithmically up to max_distance, the last bucket taking everything
// beyond. The arithmetic is transformers' in float32 (log of d / exact over
// log(max_distance / exact), truncated), so bucket edges match exactly.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> bucket_shape(std::span<const TypedShape> in, std::span<const bool>,
                                             const Attrs& attrs) {
  for (size_t i = 0; i < 2; ++i)
    if (in[i].dtype != DType::I32 || in[i].shape.size() != 1)
      return error("relative_position_bucket: " + std::string(i ? "key" : "query") +
                   " positions must be i32 [n], got " + std::string(dtype_name(in[i].dtype)) + " " +
                   shape_str(in[i].shape));
  const int64_t buckets = attr_int(attrs, "num_buckets", 32), dist = attr_int(attrs, "max_distance", 128);
  const bool bi = attr_bool(attrs, "bidirectional", true);
  if (buckets < (bi ? 4 : 2) || dist <= (bi ? buckets / 4 : buckets / 2))
    return error("relative_position_bucket: num_buckets " + std::to_string(buckets) + " and max_distance " +
                 std::to_string(dist) + " leave no logarithmic buckets (need num_buckets >= " +
                 (bi ? "4" : "2") + ", max_distance above the exact range)");
  return one_output(Shape{in[0].shape[0], in[1].shape[0]}, DType::I32);
}

// The bucket of relative position d (key - query).
int32_t bucket_of(int64_t d, int64_t num_buckets, int64_t max_distance, bool bidirectional) {
  int32_t bucket = 0;
  int64_t n = num_buckets;
  if (bidirectional) {
    n /= 2;
    if (d > 0) bucket += int32_t(n);
    d = std::llabs(d);
  } else {
    d = -std::min<int64_t>(d, 0);
  }
  const int64_t exact = n / 2;
  if (d < exact) return bucket + int32_t(d);
  // float32 as transformers computes it: log(d / exact) / log(max / exact) * (n - exact)
  const float ratio = float(d) / float(exact);
  const float scale = float(std::log(double(max_distance) / double(exact)));
  const float large = std::log(ratio) / scale * float(n - exact);
  const int64_t b = std::min<int64_t>(exact + int64_t(large), n - 1);
  return bucket + int32_t(b);
}

Status bucket_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 2; ++i) ARCH_TRY_STATUS(expect_i32(ctx, "relative_position_bucket", i));
  const Tensor& Q = ctx.inputs[0];
  const Tensor& K = ctx.inputs[1];
  const int64_t S = Q.numel(), T = K.numel();
  ARCH_TRY_STATUS(expect_output(ctx, "relative_position_bucket", 0, Dims{S, T}, DType::I32));
  const int64_t buckets = attr_int(ctx.attrs, "num_buckets", 32), dist = attr_int(ctx.attrs, "max_distance", 128);
  const bool bi = attr_bool(ctx.attrs, "bidirectional", true);
  int32_t* out = ctx.outputs[0].i32();
  for (int64_t r = 0; r < S; ++r)
    for (int64_t j = 0; j < T; ++j)
      out[r * T + j] = bucket_of(int64_t(K.i32()[j]) - Q.i32()[r], buckets, dist, bi);
  return {};
}

}  // namespace

void define_relative_position_bucket(OpTable& t) {
  t.define(checked(OpDef{
               .name = "relative_position_bucket",
               .inputs = {"query_positions", "key_positions"},
               .attrs = {{"num_buckets", AttrSpec::Int, 32},
                         {"max_distance", AttrSpec::Int, 128},
                         {"bidirectional", AttrSpec::Bool, true}},
               .shape = bucket_shape,
               .tolerance = {0, 0},
               .doc = "relative_position_bucket(q i32[S], k i32[T]) -> i32[S, T]: T5's bucket of key - query (bidirectional or causal, log-spaced to max_distance)",
           }),
           bucket_kernel);
}

}  // namespace arch
