#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// x [2, 3, 4] with x[a, b, c] = 100a + 10b + c.
Tensor x234() {
  std::vector<float> v;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) v.push_back(float(100 * a + 10 * b + c));
  return f32({2, 3, 4}, v);
}

TEST(Reduce, SumAlongEachAxis) {
  Tensor a0 = run1("sum", {x234()}, {{"axis", 0}});
  EXPECT_EQ(a0.shape, (Dims{3, 4}));
  EXPECT_EQ(values(a0), (std::vector<float>{100, 102, 104, 106, 120, 122, 124, 126, 140, 142, 144, 146}));
  Tensor a1 = run1("sum", {x234()}, {{"axis", 1}});
  EXPECT_EQ(a1.shape, (Dims{2, 4}));
  EXPECT_EQ(values(a1), (std::vector<float>{30, 33, 36, 39, 330, 333, 336, 339}));
  Tensor last = run1("sum", {x234()}, {{"axis", -1}});
  EXPECT_EQ(last.shape, (Dims{2, 3}));
  EXPECT_EQ(values(last), (std::vector<float>{6, 46, 86, 406, 446, 486}));
  EXPECT_EQ(values(run1("sum", {x234()}, {{"axis", 2}})), values(last));
}

TEST(Reduce, MeanAndKeepdim) {
  Tensor m = run1("mean", {x234()}, {{"axis", 1}, {"keepdim", true}});
  EXPECT_EQ(m.shape, (Dims{2, 1, 4}));
  EXPECT_EQ(values(m), (std::vector<float>{10, 11, 12, 13, 110, 111, 112, 113}));
  Tensor first = run1("mean", {x234()}, {{"axis", -3}});
  EXPECT_EQ(first.shape, (Dims{3, 4}));
  EXPECT_EQ(first.f32()[0], 50.0f);
  Tensor all = run1("mean", {f32({5}, {1, 2, 3, 4, 6})}, {{"axis", 0}});
  EXPECT_EQ(all.shape, (Dims{}));
  EXPECT_FLOAT_EQ(all.f32()[0], 3.2f);
}

TEST(Reduce, RandomMatchesDouble) {
  std::vector<float> x = random_values(3 * 7 * 5, 90);
  for (const char* op : {"sum", "mean"}) {
    Tensor out = run1(op, {f32({3, 7, 5}, x)}, {{"axis", 1}});
    std::vector<double> want(3 * 5, 0.0);
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 7; ++b)
        for (int c = 0; c < 5; ++c) want[a * 5 + c] += x[(a * 7 + b) * 5 + c];
    if (std::string(op) == "mean")
      for (double& w : want) w /= 7;
    expect_close(values(out), want, 1e-6, 1e-7);
  }
}

TEST(Reduce, AccumulatesInDouble) {
  // In float, 2^24 + 1 + 1 + 1 + 1 stays 2^24; in double it is 2^24 + 4.
  Tensor s = run1("sum", {f32({5}, {16777216.0f, 1, 1, 1, 1})}, {{"axis", 0}});
  EXPECT_EQ(s.f32()[0], 16777220.0f);
}

TEST(Reduce, ShapeRule) {
  auto x = TypedShape{DType::F32, {Dim::seq(), Dim::of(8)}};
  auto pooled = infer("mean", {x}, {{"axis", 0}});
  ASSERT_TRUE(pooled.ok()) << pooled.error().message;
  EXPECT_EQ(shape_str(pooled->at(0).shape), "[8]");
  auto kept = infer("mean", {x}, {{"axis", -2}, {"keepdim", true}});
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ(shape_str(kept->at(0).shape), "[1, 8]");
  auto rows = infer("sum", {x}, {{"axis", 1}});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(shape_str(rows->at(0).shape), "[seq]");

  auto range = infer("sum", {x}, {{"axis", 2}});
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().message, "sum: axis 2 is out of range for 2 dim(s) (-2 .. 1)");
  auto required = infer("mean", {x});
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.error().message, "mean: attribute 'axis' is required");
  EXPECT_FALSE(infer("sum", {{DType::F32, {}}}, {{"axis", 0}}).ok());
}

TEST(Reduce, MeanOverSeqAtRunTime) {
  // Mean pooling over the tokens of a step: [seq, H] -> [H].
  Runner r;
  auto out = r.run("mean", {f32({3, 2}, {1, 10, 2, 20, 6, 60})}, {{"axis", 0}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->at(0).shape, (Dims{2}));
  EXPECT_EQ(values(out->at(0)), (std::vector<float>{3, 30}));
}

}  // namespace
}  // namespace arch::test
