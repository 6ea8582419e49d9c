// The cpu backend's elementwise kernels (activations_hwy.cpp) against the
// reference kernels, within each op's tolerance.
#include <cstring>
#include <limits>

#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

const char* kUnary[] = {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh", "exp"};

// Sizes around the vector widths (4, 8, 16 lanes), and one big enough to
// run in parallel chunks.
const int64_t kSizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 100, 896, 4864, 70001};

TEST(CpuActivations, UnaryMatchReferenceOnRandomInputs) {
  uint64_t seed = 1;
  for (const char* op : kUnary)
    for (int64_t n : kSizes) {
      // exp grows fast: its inputs stay where the output's range is sane
      const float scale = std::string(op) == "exp" ? 10.0f : 8.0f;
      std::vector<float> x = scaled_values(size_t(n), seed++, scale);
      double mx = expect_cpu_matches_reference(op, {f32({n}, x)}, Attrs::object(),
                                               std::string(op) + " n=" + std::to_string(n));
      if (n > 2) {  // one value may be a silu tail near 0
        EXPECT_GT(mx, 0.0) << op;
      }
    }
}

TEST(CpuActivations, LeakyReluMatchesReference) {
  uint64_t seed = 90;
  for (double slope : {0.1, 0.01, -0.5})
    for (int64_t n : kSizes)
      expect_cpu_matches_reference("leaky_relu", {f32({n}, scaled_values(size_t(n), seed++, 8.0f))}, {{"slope", slope}},
                                   "n=" + std::to_string(n));
  // Exactly the reference's arms: -0 stays -0 (x >= 0), NaN takes slope x.
  Tensor x = f32({3}, {-0.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f});
  auto cpu = run_on("cpu", "leaky_relu", {x}, {{"slope", 0.1}});
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(std::signbit((*cpu)[0].f32()[0]));
  EXPECT_TRUE(std::isnan((*cpu)[0].f32()[1]));
  EXPECT_FLOAT_EQ((*cpu)[0].f32()[2], -0.2f);
}

TEST(CpuActivations, UnaryMatchOnMultiDimShapes) {
  for (const char* op : kUnary) {
    expect_cpu_matches_reference(op, {f32({3, 5, 7}, scaled_values(105, 7, 4.0f))}, Attrs::object(), op);
    expect_cpu_matches_reference(op, {f32({64, 896}, scaled_values(64 * 896, 8, 4.0f))}, Attrs::object(), op);
  }
}

// Every element, not just within the tensor's max: a sweep over the range
// where each function changes, each point checked against the reference
// with the op's tolerance taken per element (|ref| + 1 as the scale).
TEST(CpuActivations, SweepIsCloseElementwise) {
  const int64_t n = 24001;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -12.0f + 24.0f * float(i) / float(n - 1);
  for (const char* op : kUnary) {
    auto ref = run_on("reference", op, {f32({n}, x)});
    auto cpu = run_on("cpu", op, {f32({n}, x)});
    ASSERT_TRUE(ref.ok() && cpu.ok()) << op;
    const Tolerance tol = def_of(op).tolerance;
    for (int64_t i = 0; i < n; ++i) {
      const double want = (*ref)[0].f32()[i], got = (*cpu)[0].f32()[i];
      // exp's values span many magnitudes: relative to the value itself
      ASSERT_NEAR(got, want, 2 * tol.rel * (std::fabs(want) + 1) + tol.abs) << op << " at x = " << x[i];
    }
  }
}

// glu with every activation the vector code has, and one it has not (neg:
// the reference kernel), reading a merged [rows, 2 * width] value's halves in place.
TEST(CpuActivations, GluMatchesReference) {
  uint64_t seed = 50;
  for (const char* op : {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh", "neg"})
    for (auto [rows, width] : {std::pair<int64_t, int64_t>{1, 7}, {3, 33}, {64, 4864}}) {
      Tensor x = f32({rows, 2 * width}, scaled_values(size_t(rows * 2 * width), seed++, 6.0f));
      const Attrs attrs = {{"act", op}, {"gate_start", 0}, {"up_start", width}, {"width", width}};
      expect_cpu_matches_reference("glu", {x, x}, attrs, std::string(op) + " width=" + std::to_string(width));
    }
}

// glu is registered as writing every output element (its outputs are not
// zeroed first): NaN left in one, the vector path or the reference one
// (neg), is an element it skipped.
TEST(CpuActivations, GluWritesEveryOutputElement) {
  EXPECT_TRUE(op_table().fills_outputs("glu", "cpu"));
  for (const char* op : {"silu", "neg"}) {
    Tensor x = f32({5, 2 * 37}, scaled_values(5 * 2 * 37, 9, 3.0f));
    std::vector<Tensor> inputs{x, x}, outputs{f32({5, 37}, std::vector<float>(5 * 37, std::nanf("")))};
    std::unique_ptr<OpState> none;
    const Attrs attrs = {{"act", op}, {"gate_start", 0}, {"up_start", 37}, {"width", 37}};
    const std::string where = "test";
    KernelContext ctx{attrs, inputs, outputs, none, 0, where};
    ASSERT_TRUE((*op_table().kernel("glu", "cpu"))(ctx).ok()) << op;
    for (int64_t i = 0; i < outputs[0].numel(); ++i) ASSERT_FALSE(std::isnan(outputs[0].f32()[i])) << op << " " << i;
  }
}

TEST(CpuActivations, ExtremeInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-1e30f, -200.0f, -104.5f, -90.0f, -88.0f, -20.0f, -3.95f, -1.0f, -1e-20f, 0.0f,
                          1e-20f, 1.0f,    3.9f,    20.0f,  88.0f,  88.8f,  95.0f, 200.0f, 1e30f, -inf, inf};
  for (const char* op : {"silu", "sigmoid", "tanh", "gelu", "quick_gelu"}) {
    auto ref = run_on("reference", op, {f32({int64_t(x.size())}, x)});
    auto cpu = run_on("cpu", op, {f32({int64_t(x.size())}, x)});
    ASSERT_TRUE(ref.ok() && cpu.ok()) << op;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = (*ref)[0].f32()[i], got = (*cpu)[0].f32()[i];
      if (std::isnan(want)) continue;  // silu(-inf) = -inf / inf: either way
      if (std::isinf(want)) {
        EXPECT_EQ(got, want) << op << " at x = " << x[i];
        continue;
      }
      EXPECT_NEAR(got, want, 1e-6 * (std::fabs(want) + 1)) << op << " at x = " << x[i];
    }
  }
  // relu bit for bit: NaN and -0 give +0, as the reference's x > 0 ? x : 0
  std::vector<float> r = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.0f, -inf, inf, -1e-38f, 1e-38f, 3.5f};
  auto ref_relu = run_on("reference", "relu", {f32({int64_t(r.size())}, r)});
  auto cpu_relu = run_on("cpu", "relu", {f32({int64_t(r.size())}, r)});
  ASSERT_TRUE(ref_relu.ok() && cpu_relu.ok());
  EXPECT_EQ(std::memcmp((*ref_relu)[0].data, (*cpu_relu)[0].data, r.size() * sizeof(float)), 0);
  // exp: overflow to inf, underflow to 0, NaN kept
  std::vector<float> e = {-200.0f, -104.0f, -87.0f, 0.0f, 88.0f, 88.8f, 200.0f, inf, -inf,
                          std::numeric_limits<float>::quiet_NaN()};
  auto ref = run_on("reference", "exp", {f32({int64_t(e.size())}, e)});
  auto cpu = run_on("cpu", "exp", {f32({int64_t(e.size())}, e)});
  ASSERT_TRUE(ref.ok() && cpu.ok());
  for (size_t i = 0; i < e.size(); ++i) {
    const float want = (*ref)[0].f32()[i], got = (*cpu)[0].f32()[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "exp at " << e[i];
    } else if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(got, want) << "exp at " << e[i];
    } else {
      EXPECT_NEAR(got, want, 1e-6 * want) << "exp at " << e[i];
    }
  }
}

TEST(CpuActivations, GeluHandValues) {
  // gelu(1) = 0.5 (1 + erf(1 / sqrt 2)) = 0.8413447460685429
  auto out = run_on("cpu", "gelu", {f32({3}, {1.0f, -1.0f, 3.0f})});
  ASSERT_TRUE(out.ok());
  EXPECT_NEAR((*out)[0].f32()[0], 0.8413447460685429, 2e-7);
  EXPECT_NEAR((*out)[0].f32()[1], -0.15865525393145707, 2e-7);
  EXPECT_NEAR((*out)[0].f32()[2], 2.9959502750043135, 4e-7);
}

TEST(CpuBinary, SameShapeAndRepeatedOperands) {
  struct Case {
    Dims a, b;
  };
  const Case cases[] = {
      {{7}, {7}},           {{3, 33}, {3, 33}},     {{64, 896}, {64, 896}}, {{300, 300}, {300, 300}},
      {{5, 17}, {17}},      {{17}, {5, 17}},         {{4, 3, 9}, {1, 9}},   {{4, 3, 9}, {3, 9}},
      {{6, 1, 8}, {1, 8}},  {{2, 5}, {1}},           {{1}, {2, 5}},         {{300, 301}, {301}},
      {{9, 4}, {}},         {{70000}, {1}},        {{300, 501}, {501}},   {{400, 400}, {400, 400}}, {{140000}, {1}},
  };
  uint64_t seed = 100;
  for (const char* op : {"add", "mul", "div"})
    for (const Case& c : cases) {
      Tensor a = f32(c.a, scaled_values(size_t(numel(c.a)), seed++, 3.0f));
      Tensor b = f32(c.b, scaled_values(size_t(numel(c.b)), seed++, 3.0f));
      double mx = expect_cpu_matches_reference(op, {a, b}, Attrs::object(),
                                               std::string(op) + " " + dims_str(c.a) + " " + dims_str(c.b));
      EXPECT_GT(mx, 0.0);
    }
}

// Broadcasts the fast path does not take (both operands repeat) and int32
// inputs run the reference kernel: the same answers.
TEST(CpuBinary, OtherCasesFallBackToReference) {
  for (const char* op : {"add", "mul", "div"}) {
    Tensor a = f32({5, 1, 3}, scaled_values(15, 1, 2.0f));
    Tensor b = f32({4, 1}, scaled_values(4, 2, 2.0f));
    expect_cpu_matches_reference(op, {a, b}, Attrs::object(), std::string(op) + " [5,1,3] [4,1]");
    expect_cpu_matches_reference(op, {f32({3, 1}, {1, 2, 3}), f32({1, 4}, {1, 2, 3, 4})}, Attrs::object(), op);
  }
  auto out = run_on("cpu", "add", {i32({3}, {1, 2, 2147483647}), i32({3}, {10, 20, 1})});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ints((*out)[0]), (std::vector<int32_t>{11, 22, -2147483647 - 1}));
}

TEST(CpuElementwise, ErrorsAreTheReferences) {
  // An int32 x to silu, or mismatched binary shapes: the reference's messages.
  std::vector<Tensor> out{Tensor::zeros(DType::F32, {3})};
  std::string ref = kernel_message("reference", "silu", {i32({3}, {1, 2, 3})}, out);
  EXPECT_FALSE(ref.empty());
  EXPECT_EQ(kernel_message("cpu", "silu", {i32({3}, {1, 2, 3})}, out), ref);
  std::vector<Tensor> out2{Tensor::zeros(DType::F32, {3})};
  std::string ref2 = kernel_message("reference", "mul", {f32({3}, {1, 2, 3}), f32({2}, {1, 2})}, out2);
  EXPECT_FALSE(ref2.empty());
  EXPECT_EQ(kernel_message("cpu", "mul", {f32({3}, {1, 2, 3}), f32({2}, {1, 2})}, out2), ref2);
}

}  // namespace
}  // namespace arch::test
