#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Select, ColumnsAndRows) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor col = run1("select", {x}, {{"axis", 1}, {"index", 2}});  // x[:, 2]
  EXPECT_EQ(col.shape, (Dims{2}));
  EXPECT_EQ(values(col), (std::vector<float>{3, 6}));
  Tensor row = run1("select", {x}, {{"axis", 0}, {"index", -1}});  // x[-1]
  EXPECT_EQ(row.shape, (Dims{3}));
  EXPECT_EQ(values(row), (std::vector<float>{4, 5, 6}));
  Tensor first = run1("select", {x}, {{"axis", -1}, {"index", -3}});  // x[..., -3]
  EXPECT_EQ(values(first), (std::vector<float>{1, 4}));
  Tensor scalar = run1("select", {f32({3}, {7, 8, 9})}, {{"axis", 0}, {"index", 1}});
  EXPECT_EQ(scalar.shape, (Dims{}));
  EXPECT_EQ(scalar.f32()[0], 8.0f);
}

TEST(Select, MiddleAxisAndInts) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = float(i);
  Tensor mid = run1("select", {f32({2, 3, 4}, v)}, {{"axis", 1}, {"index", 1}});
  EXPECT_EQ(mid.shape, (Dims{2, 4}));
  EXPECT_EQ(values(mid), (std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19}));
  // topk_idx[:, i]: one expert id per token.
  Tensor ids = run1("select", {i32({3, 2}, {5, 1, 0, 7, 2, 3})}, {{"axis", 1}, {"index", 0}});
  EXPECT_EQ(ids.dtype, DType::I32);
  EXPECT_EQ(ints(ids), (std::vector<int32_t>{5, 0, 2}));
}

TEST(Select, ShapeRule) {
  TypedShape x{DType::F32, {Dim::seq(), Dim::of(2), Dim::of(8)}};
  auto ok = infer("select", {x}, {{"axis", 1}, {"index", 1}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 8]");
  // The last token: a `seq` axis is allowed, its index checked at run time.
  auto token = infer("select", {x}, {{"axis", 0}, {"index", -1}});
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_EQ(shape_str(token->at(0).shape), "[2, 8]");

  auto range = infer("select", {x}, {{"axis", 1}, {"index", 2}});
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().message, "select: index 2 is out of range for a dim of 2 (axis 1 of x [seq, 2, 8])");
  auto negative = infer("select", {x}, {{"axis", 2}, {"index", -9}});
  EXPECT_FALSE(negative.ok());
  auto required = infer("select", {x}, {{"axis", 1}});
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.error().message, "select: attribute 'index' is required");
}

TEST(Select, IndexOutOfRangeAtRunTime) {
  Runner r;
  r.where = "pool";
  std::string msg = run_error(r, "select", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"axis", 0}, {"index", 2}});
  EXPECT_NE(msg.find("index 2 is out of range for a dim of 2"), std::string::npos) << msg;
  // Past the shape rule (a seq axis), the kernel refuses it itself.
  const OpDef& d = def_of("select");
  Attrs attrs = with_defaults(d, {{"axis", 0}, {"index", -4}});
  std::vector<Tensor> inputs = {f32({3, 1}, {1, 2, 3})};
  std::vector<Tensor> outputs = {Tensor::zeros(DType::F32, {1})};
  std::unique_ptr<OpState> state;
  KernelContext ctx{attrs, inputs, outputs, state, 0, r.where};
  Status st = (*op_table().kernel("select", "reference"))(ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "pool: select: index -4 is out of range for a dim of 3 (axis 0 of x [3, 1])");
}

}  // namespace
}  // namespace arch::test
