// normal_noise(like, scale?, seed? i32 [] or [1], recorded?) attr stream
// -> f32 like's shape: scale times standard normal draws, the same for the
// same seed and stream on any machine and thread count (element i's pair of
// uniforms is a hash of seed, stream and i / 2, through Box-Muller), so a
// VITS voice is reproducible from --seed; `stream` keeps two draws of one
// graph apart; scale is one number or one per element. Given `recorded`
// (standard normal draws someone else made: transformers' torch.randn, as
// a golden stores it), those are scaled instead, checked against like's
// shape.
#include <cmath>
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

uint64_t mix(uint64_t z) {  // splitmix64's finaliser
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double uniform(uint64_t bits) { return double((bits >> 11) + 1) * 0x1.0p-53; }  // (0, 1]

Result<std::vector<TypedShape>> noise_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                            const Attrs&) {
  if (in.size() > 1 && is_present(present, 1) && in[1].dtype != DType::F32)
    return error("normal_noise: scale must be f32, got " + std::string(dtype_name(in[1].dtype)));
  if (in.size() > 2 && is_present(present, 2)) {
    if (in[2].dtype != DType::I32 || in[2].shape.size() > 1 || (in[2].shape.size() == 1 && in[2].shape[0] != Dim::of(1)))
      return error("normal_noise: seed must be i32 [] or [1], got " + std::string(dtype_name(in[2].dtype)) + shape_str(in[2].shape));
  }
  if (in.size() > 3 && is_present(present, 3) && in[3].shape.size() != in[0].shape.size())
    return error("normal_noise: recorded " + shape_str(in[3].shape) + " must have like's shape " + shape_str(in[0].shape));
  return one_output(in[0].shape);
}

Status noise_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0].data) return kernel_error(ctx, "normal_noise", "like is required");
  const Tensor& like = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_output(ctx, "normal_noise", 0, like.shape));
  float* out = ctx.outputs[0].f32();
  if (has_input(ctx, 3)) {
    ARCH_TRY_STATUS(expect_f32(ctx, "normal_noise", 3));
    const Tensor& r = ctx.inputs[3];
    if (r.shape != like.shape)
      return kernel_error(ctx, "normal_noise", "recorded noise " + dims_str(r.shape) + " is not the " +
                                                   dims_str(like.shape) + " this call draws");
    std::memcpy(out, r.f32(), size_t(r.numel()) * sizeof(float));
  } else {
    int64_t seed = 0;
    if (has_input(ctx, 2)) {
      ARCH_TRY_STATUS(expect_i32(ctx, "normal_noise", 2));
      seed = ctx.inputs[2].i32()[0];
    }
    const uint64_t key = mix(mix(uint64_t(seed)) ^ (uint64_t(attr_int(ctx.attrs, "stream", 0)) * 0xd1342543de82ef95ull));
    for (int64_t i = 0; i < like.numel(); i += 2) {
      const uint64_t pair = uint64_t(i / 2);
      const double r = std::sqrt(-2 * std::log(uniform(mix(key + 2 * pair)))), a = 2 * M_PI * uniform(mix(key + 2 * pair + 1));
      out[i] = float(r * std::cos(a));
      if (i + 1 < like.numel()) out[i + 1] = float(r * std::sin(a));
    }
  }
  const float* scale = nullptr;
  int64_t scales = 0;
  if (has_input(ctx, 1)) {
    scale = ctx.inputs[1].f32(), scales = ctx.inputs[1].numel();
    if (scales != 1 && scales != like.numel())
      return kernel_error(ctx, "normal_noise", "scale " + dims_str(ctx.inputs[1].shape) + " is neither one number nor one per element of " +
                                                   dims_str(like.shape));
  }
  if (scale)
    for (int64_t i = 0; i < like.numel(); ++i) out[i] *= scale[scales == 1 ? 0 : i];
  return {};
}

}  // namespace

void define_normal_noise(OpTable& t) {
  t.define(checked(OpDef{
               .name = "normal_noise",
               .inputs = {"like", "scale?", "seed?", "recorded?"},
               .attrs = {{"stream", AttrSpec::Int, 0}},
               .shape = noise_shape,
               .tolerance = {0, 0},
               .doc = "normal_noise(like, scale?, seed?, recorded?) -> f32 like's shape: scale x seeded standard normal "
                      "draws (or x the recorded ones)",
           }),
           noise_kernel);
}

}  // namespace arch
