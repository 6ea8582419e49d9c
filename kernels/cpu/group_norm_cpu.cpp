// The cpu backend's group_norm: the reference's arithmetic group by group
// (kernels/reference/group_norm.h), the groups side by side on the threads:
// a VAE's 512x512 GroupNorms are 33M elements each.
#include <omp.h>

#include <stdexcept>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/group_norm.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Status group_norm_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.empty() || !ctx.inputs[0].data || ctx.inputs[0].dtype != DType::F32 || ctx.inputs[0].shape.empty() ||
      ctx.outputs.size() != 1)
    return reference(ctx);
  const Tensor& X = ctx.inputs[0];
  const int64_t C = X.dim(0), groups = attr_int(ctx.attrs, "groups", 0);
  const float* wb[2] = {nullptr, nullptr};
  for (size_t i = 1; i <= 2 && i < ctx.inputs.size(); ++i) {
    if (!ctx.inputs[i].data) continue;
    if (ctx.inputs[i].dtype != DType::F32 || ctx.inputs[i].numel() != C) return reference(ctx);
    wb[i - 1] = ctx.inputs[i].f32();
  }
  Tensor& Y = ctx.outputs[0];
  if (groups <= 0 || C % groups || Y.dtype != DType::F32 || Y.shape != X.shape) return reference(ctx);
  const float eps = float(attr_float(ctx.attrs, "eps", 1e-5));
  const int64_t per_channel = X.numel() / C;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) group_norm_group(X.f32(), Y.f32(), wb[0], wb[1], C, per_channel, groups, g, eps);
  return {};
}

}  // namespace

void register_cpu_group_norm(OpTable& t) {
  const Kernel* ref = t.kernel("group_norm", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for group_norm");
  t.add_kernel(
      "group_norm", "cpu", [reference = *ref](KernelContext& ctx) { return group_norm_cpu(ctx, reference); }, nullptr,
      nullptr, /*fills=*/true);
}

}  // namespace arch
