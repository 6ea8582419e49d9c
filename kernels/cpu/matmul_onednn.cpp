// The cpu backend's matmul: oneDNN (2.6's v2 API: desc, then
// primitive_desc(desc, engine)) on float32, one primitive cached per shape
// so a decode step reuses what the prompt built. Checked against the
// reference kernel by the goldens (every one passes on this path).
#include <map>
#include <mutex>
#include <tuple>

#include <dnnl.hpp>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

using dt = dnnl::memory::data_type;

// C [M, N] = A [M, K] @ B, B stored [N, K] (transpose_b) or [K, N].
struct MatmulPrimitive {
  dnnl::memory::desc a, b, c;
  dnnl::matmul prim;
};

struct OneDnn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex lock;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, MatmulPrimitive> primitives;  // (M, K, N, transpose_b)

  MatmulPrimitive& primitive(int64_t M, int64_t K, int64_t N, bool tb) {
    auto key = std::make_tuple(M, K, N, tb);
    auto it = primitives.find(key);
    if (it != primitives.end()) return it->second;
    MatmulPrimitive p;
    p.a = dnnl::memory::desc({M, K}, dt::f32, {K, 1});
    p.b = dnnl::memory::desc({K, N}, dt::f32, tb ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1});
    p.c = dnnl::memory::desc({M, N}, dt::f32, {N, 1});
    p.prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a, p.b, p.c), engine));
    return primitives.emplace(key, std::move(p)).first->second;
  }
};

OneDnn& onednn() {
  static OneDnn d;
  return d;
}

Status matmul_onednn(KernelContext& ctx) {
  const Tensor& A = ctx.inputs[0];
  const Tensor& B = ctx.inputs[1];
  Tensor& C = ctx.outputs[0];
  if (A.dtype != DType::F32 || B.dtype != DType::F32 || B.shape.size() != 2 || A.shape.empty())
    return kernel_error(ctx, "matmul", "the cpu matmul takes F32 a [..., K] and a 2-d F32 b");
  bool tb = attr_bool(ctx.attrs, "transpose_b", true);
  int64_t K = A.dim(-1), M = A.numel() / std::max<int64_t>(K, 1);
  int64_t N = tb ? B.dim(0) : B.dim(1);
  if ((tb ? B.dim(1) : B.dim(0)) != K || C.numel() != M * N)
    return kernel_error(ctx, "matmul", "shapes a " + dims_str(A.shape) + ", b " + dims_str(B.shape) + " disagree");
  if (M == 0 || N == 0) return {};
  OneDnn& d = onednn();
  try {
    std::lock_guard<std::mutex> guard(d.lock);
    MatmulPrimitive& p = d.primitive(M, K, N, tb);
    dnnl::stream stream(d.engine);
    dnnl::memory a(p.a, d.engine, const_cast<void*>(A.data));
    dnnl::memory b(p.b, d.engine, const_cast<void*>(B.data));
    dnnl::memory c(p.c, d.engine, C.data);
    p.prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  } catch (const dnnl::error& e) {
    return kernel_error(ctx, "matmul", std::string("oneDNN: ") + e.what());
  }
  return {};
}

}  // namespace

void register_cpu_kernels(OpTable& t) { t.add_kernel("matmul", "cpu", matmul_onednn); }

}  // namespace arch
