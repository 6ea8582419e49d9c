// The unary activations: one input x, one output of x's shape, each a
// float32 function applied elementwise, as torch computes it.
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Status unary_kernel(KernelContext& ctx, const char* op, float (*f)(float)) {
  ARCH_TRY_STATUS(expect_f32(ctx, op, 0));
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_output(ctx, op, 0, X.shape));
  const float* x = X.f32();
  float* y = ctx.outputs[0].f32();
  for (int64_t i = 0; i < X.numel(); ++i) y[i] = f(x[i]);  // y = f(x)
  return {};
}

void define_unary(OpTable& t, const char* name, const char* doc, float (*f)(float)) {
  t.define(checked(OpDef{
               .name = name,
               .inputs = {"x"},
               .attrs = {},
               .shape = same_as_input(name),
               .tolerance = {1e-6, 1e-6},
               .split = split_elementwise,
               .doc = doc,
           }),
           [name, f](KernelContext& ctx) { return unary_kernel(ctx, name, f); });
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

struct Activation {
  const char* name;
  const char* doc;
  float (*f)(float);
};

// Each as torch computes it in float32.
const Activation kActivations[] = {
    {"silu", "silu(x): x * sigmoid(x)", [](float x) { return x / (1.0f + std::exp(-x)); }},
    {"gelu", "gelu(x): 0.5 x (1 + erf(x / sqrt(2))), exact erf form",
     [](float x) { return 0.5f * x * (1.0f + std::erf(x * float(M_SQRT1_2))); }},
    {"gelu_tanh", "gelu_tanh(x): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
     [](float x) {
       const float k = float(M_2_SQRTPI * M_SQRT1_2);  // sqrt(2/pi)
       const float x3 = x * x * x;
       return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x3)));
     }},
    // CLIP's activation (transformers' QuickGELUActivation)
    {"quick_gelu", "quick_gelu(x): x * sigmoid(1.702 x), CLIP's gelu approximation",
     [](float x) { return x * sigmoid(1.702f * x); }},
    {"relu", "relu(x): max(x, 0)", [](float x) { return x > 0.0f ? x : 0.0f; }},
    {"sigmoid", "sigmoid(x): 1 / (1 + exp(-x))", [](float x) { return sigmoid(x); }},
    // torch's softplus (beta 1, threshold 20): x itself past 20.
    {"softplus", "softplus(x): log(1 + exp(x)), x past 20", [](float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }},
    {"tanh", "tanh(x)", [](float x) { return std::tanh(x); }},
    {"exp", "exp(x)", [](float x) { return std::exp(x); }},
    {"sqrt", "sqrt(x)", [](float x) { return std::sqrt(x); }},
    {"neg", "neg(x): -x", [](float x) { return -x; }},
    {"ceil", "ceil(x): the smallest integer >= x (VITS' frames per token)", [](float x) { return std::ceil(x); }},
};

// leaky_relu(x) attr slope: x where x >= 0, else slope x (torch's default
// slope 0.01; HiFi-GAN's 0.1).
Status leaky_relu_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "leaky_relu", 0));
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_output(ctx, "leaky_relu", 0, X.shape));
  const float slope = float(attr_float(ctx.attrs, "slope", 0.01));
  const float* x = X.f32();
  float* y = ctx.outputs[0].f32();
  for (int64_t i = 0; i < X.numel(); ++i) y[i] = x[i] >= 0.0f ? x[i] : x[i] * slope;
  return {};
}

}  // namespace

float (*reference_activation(std::string_view name))(float) {
  for (const Activation& a : kActivations)
    if (name == a.name) return a.f;
  return nullptr;
}

void define_activations(OpTable& t) {
  for (const Activation& a : kActivations) define_unary(t, a.name, a.doc, a.f);
  t.define(checked(OpDef{
               .name = "leaky_relu",
               .inputs = {"x"},
               .attrs = {{"slope", AttrSpec::Float, 0.01}},
               .shape = same_as_input("leaky_relu"),
               .tolerance = {1e-6, 1e-6},
               .doc = "leaky_relu(x) attr slope: x where x >= 0, else slope * x",
           }),
           leaky_relu_kernel);
}

}  // namespace arch
