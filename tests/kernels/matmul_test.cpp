#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// a [2, 3] = [[1, 2, 3], [4, 5, 6]]
Tensor a() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(Matmul, TransposeBIsALinearLayer) {
  // b [N=2, K=3]; out = a @ b^T
  Tensor b = f32({2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor out = run1("matmul", {a(), b});
  EXPECT_EQ(out.shape, (Dims{2, 2}));
  // [1-3, 2+2], [4-6, 8+5]
  EXPECT_EQ(values(out), (std::vector<float>{-2, 4, -2, 13}));
}

TEST(Matmul, PlainB) {
  // b [K=3, N=2]; out = a @ b
  Tensor b = f32({3, 2}, {1, 2, 0, 1, -1, 0});
  Tensor out = run1("matmul", {a(), b}, {{"transpose_b", false}});
  EXPECT_EQ(out.shape, (Dims{2, 2}));
  // [1-3, 2+2], [4-6, 8+5]
  EXPECT_EQ(values(out), (std::vector<float>{-2, 4, -2, 13}));
}

TEST(Matmul, LeadingDimsAndRandomValuesMatchDouble) {
  const int64_t B = 2, M = 3, K = 17, N = 5;
  std::vector<float> av = random_values(B * M * K, 1), bv = random_values(N * K, 2);
  Tensor out_t = run1("matmul", {f32({B, M, K}, av), f32({N, K}, bv)});
  ASSERT_EQ(out_t.shape, (Dims{B, M, N}));
  // b as [K, N] for the plain form
  std::vector<float> bt(K * N);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) bt[k * N + n] = bv[n * K + k];
  Tensor out_p = run1("matmul", {f32({B, M, K}, av), f32({K, N}, bt)}, {{"transpose_b", false}});
  std::vector<double> want(B * M * N);
  for (int64_t m = 0; m < B * M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(av[m * K + k]) * bv[n * K + k];
      want[m * N + n] = s;
    }
  expect_close(values(out_t), want, 1e-5, 1e-6);
  expect_close(values(out_p), want, 1e-5, 1e-6);
}

TEST(Matmul, ShapeRule) {
  auto ok = infer("matmul", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {Dim::of(32), Dim::of(64)}}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 32]");
  auto bad = infer("matmul", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {Dim::of(32), Dim::of(48)}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "matmul: a [seq, 64] and b^T [32, 48]: inner dims 64 and 48 differ");
  auto plain = infer("matmul", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {Dim::of(64), Dim::of(8)}}},
                     {{"transpose_b", false}});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(shape_str(plain->at(0).shape), "[seq, 8]");
}

}  // namespace
}  // namespace arch::test

namespace arch::test {
namespace {

TEST(Matmul, AFoldedActivationAppliesToTheSum) {
  // relu(a @ b^T + bias): [1, 2] x [2, 2]^T = [1*1 + 2*0, 1*0 + 2*1] = [1, 2];
  // plus bias [-3, 1] = [-2, 3]; relu -> [0, 3].
  Tensor a = f32({1, 2}, {1, 2}), b = f32({2, 2}, {1, 0, 0, 1}), bias = f32({2}, {-3, 1});
  EXPECT_EQ(values(run1("matmul", {a, b, bias}, {{"transpose_b", true}, {"activation", "relu"}})),
            (std::vector<float>{0, 3}));
  auto bad = infer("matmul", {{DType::F32, {Dim::of(1), Dim::of(2)}}, {DType::F32, {Dim::of(2), Dim::of(2)}}},
                   {{"activation", "sqrtt"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("activation 'sqrtt' is not a unary activation"), std::string::npos);
}

}  // namespace
}  // namespace arch::test
