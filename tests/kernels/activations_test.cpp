#include "tests/kernels/kernel_test_util.h"

#include <functional>

namespace arch::test {
namespace {

const std::vector<float> kPoints = {-6.0f, -2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f};

// Run `op` on kPoints and compare with `f` evaluated in double.
void check(const std::string& op, const std::function<double(double)>& f,
           const std::vector<float>& xs = kPoints) {
  Tensor out = run1(op, {f32({int64_t(xs.size())}, xs)});
  ASSERT_EQ(out.shape, (Dims{int64_t(xs.size())}));
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = f(xs[i]);
    EXPECT_NEAR(out.f32()[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << op << "(" << xs[i] << ")";
  }
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(Activations, KnownValuesAtOne) {
  Tensor x = f32({1}, {1.0f});
  EXPECT_NEAR(run1("silu", {x}).f32()[0], 0.7310586, 1e-6);
  EXPECT_NEAR(run1("gelu", {x}).f32()[0], 0.8413447, 1e-6);
  EXPECT_NEAR(run1("gelu_tanh", {x}).f32()[0], 0.8411920, 1e-6);
  EXPECT_NEAR(run1("sigmoid", {x}).f32()[0], 0.7310586, 1e-6);
  EXPECT_NEAR(run1("tanh", {x}).f32()[0], 0.7615942, 1e-6);
}

TEST(Activations, MatchDoubleFormulas) {
  check("silu", [](double x) { return x * sigmoid(x); });
  check("gelu", [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
  check("gelu_tanh", [](double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  });
  check("relu", [](double x) { return x > 0 ? x : 0.0; });
  check("sigmoid", sigmoid);
  check("tanh", [](double x) { return std::tanh(x); });
  check("exp", [](double x) { return std::exp(x); });
  check("neg", [](double x) { return -x; });
  check("sqrt", [](double x) { return std::sqrt(x); }, {0.0f, 0.25f, 2.0f, 9.0f});
}

TEST(Activations, KeepShape) {
  Tensor out = run1("relu", {f32({2, 1, 2}, {-1, 2, -3, 4})});
  EXPECT_EQ(out.shape, (Dims{2, 1, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{0, 2, 0, 4}));
  auto s = infer("silu", {{DType::F32, {Dim::seq(), Dim::of(128)}}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(shape_str(s->at(0).shape), "[seq, 128]");
}

TEST(Activations, ExtremesStayFinite) {
  Tensor out = run1("silu", {f32({2}, {-100.0f, 100.0f})});
  EXPECT_EQ(out.f32()[0], -0.0f);
  EXPECT_EQ(out.f32()[1], 100.0f);
  Tensor sg = run1("sigmoid", {f32({2}, {-200.0f, 200.0f})});
  EXPECT_EQ(sg.f32()[0], 0.0f);
  EXPECT_EQ(sg.f32()[1], 1.0f);
}

TEST(Activations, QuickGelu) {
  // quick_gelu(x) = x * sigmoid(1.702 x): 1 -> 0.8457958, -1 -> -0.1542042, 2 -> 1.9356586
  Tensor out = run1("quick_gelu", {f32({3}, {1.0f, -1.0f, 2.0f})});
  EXPECT_NEAR(out.f32()[0], 0.8457958, 1e-6);
  EXPECT_NEAR(out.f32()[1], -0.1542042, 1e-6);
  EXPECT_NEAR(out.f32()[2], 1.9356586, 1e-6);
  check("quick_gelu", [](double x) { return x * sigmoid(1.702 * x); });
  // Far out it is relu: 0 (a signed zero) below, x above.
  Tensor ext = run1("quick_gelu", {f32({2}, {-100.0f, 100.0f})});
  EXPECT_EQ(ext.f32()[0], 0.0f);
  EXPECT_EQ(ext.f32()[1], 100.0f);
  auto s = infer("quick_gelu", {{DType::F32, {Dim::seq(), Dim::of(768)}}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(shape_str(s->at(0).shape), "[seq, 768]");
}

TEST(Activations, LeakyReluAndCeil) {
  Tensor x = f32({3}, {-2.0f, 0.0f, 3.0f});
  EXPECT_EQ(values(run1("leaky_relu", {x}, {{"slope", 0.1}})), (std::vector<float>{-0.2f, 0.0f, 3.0f}));
  EXPECT_EQ(values(run1("leaky_relu", {x})), (std::vector<float>{-0.02f, 0.0f, 3.0f}));  // torch's default 0.01
  EXPECT_EQ(values(run1("ceil", {f32({4}, {-1.5f, 0.2f, 2.0f, 2.5f})})), (std::vector<float>{-1, 1, 2, 3}));
}

}  // namespace
}  // namespace arch::test
