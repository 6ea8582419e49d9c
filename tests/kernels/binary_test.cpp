#include "tests/kernels/kernel_test_util.h"

#include <limits>

namespace arch::test {
namespace {

TEST(Binary, SameShape) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {8, 4, 2, 1});
  EXPECT_EQ(values(run1("add", {a, b})), (std::vector<float>{9, 6, 5, 5}));
  EXPECT_EQ(values(run1("sub", {a, b})), (std::vector<float>{-7, -2, 1, 3}));
  EXPECT_EQ(values(run1("mul", {a, b})), (std::vector<float>{8, 8, 6, 4}));
  EXPECT_EQ(values(run1("div", {a, b})), (std::vector<float>{0.125f, 0.5f, 1.5f, 4}));
}

TEST(Binary, BroadcastsARowAcrossRows) {
  // [2, 3] + [3]
  Tensor out = run1("add", {f32({2, 3}, {0, 1, 2, 10, 11, 12}), f32({3}, {100, 200, 300})});
  EXPECT_EQ(out.shape, (Dims{2, 3}));
  EXPECT_EQ(values(out), (std::vector<float>{100, 201, 302, 110, 211, 312}));
}

TEST(Binary, BroadcastsBothSides) {
  // [2, 1] * [1, 3] -> [2, 3]
  Tensor out = run1("mul", {f32({2, 1}, {2, 3}), f32({1, 3}, {1, 10, 100})});
  EXPECT_EQ(out.shape, (Dims{2, 3}));
  EXPECT_EQ(values(out), (std::vector<float>{2, 20, 200, 3, 30, 300}));
  // [3, 1, 2] - [2, 1] -> [3, 2, 2]
  Tensor o3 = run1("sub", {f32({3, 1, 2}, {1, 2, 3, 4, 5, 6}), f32({2, 1}, {1, 10})});
  EXPECT_EQ(o3.shape, (Dims{3, 2, 2}));
  EXPECT_EQ(values(o3), (std::vector<float>{0, 1, -9, -8, 2, 3, -7, -6, 4, 5, -5, -4}));
}

TEST(Binary, ScalarOnEitherSide) {
  Tensor s = f32({}, {2});
  Tensor x = f32({3}, {1, 2, 4});
  Tensor l = run1("div", {s, x});
  EXPECT_EQ(l.shape, (Dims{3}));
  EXPECT_EQ(values(l), (std::vector<float>{2, 1, 0.5f}));
  Tensor r = run1("div", {x, s});
  EXPECT_EQ(values(r), (std::vector<float>{0.5f, 1, 2}));
  Tensor ss = run1("mul", {s, s});
  EXPECT_EQ(ss.shape, Dims{});
  EXPECT_EQ(values(ss), (std::vector<float>{4}));
}

TEST(Binary, SymbolicShapes) {
  auto out = infer("add", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {Dim::of(64)}}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(shape_str(out->at(0).shape), "[seq, 64]");
  auto b1 = infer("mul", {{DType::F32, {Dim::of(1)}}, {DType::F32, {Dim::seq(), Dim::of(1)}}});
  ASSERT_TRUE(b1.ok()) << b1.error().message;
  EXPECT_EQ(shape_str(b1->at(0).shape), "[seq, 1]");
  auto sc = infer("add", {{DType::F32, {}}, {DType::F32, {Dim::seq(), Dim::of(4)}}});
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  EXPECT_EQ(shape_str(sc->at(0).shape), "[seq, 4]");
}

TEST(Binary, ShapeErrors) {
  auto bad = infer("add", {{DType::F32, {Dim::of(2), Dim::of(3)}}, {DType::F32, {Dim::of(4)}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "add: shapes [2, 3] and [4] do not broadcast (dim 1: 3 vs 4)");
  auto seq = infer("mul", {{DType::F32, {Dim::seq(), Dim::of(4)}}, {DType::F32, {Dim::of(3), Dim::of(4)}}});
  ASSERT_FALSE(seq.ok());
  EXPECT_NE(seq.error().message.find("do not broadcast"), std::string::npos);
  // The kernel also refuses run-time shapes that do not broadcast.
  Runner r;
  std::string msg = run_error(r, "add", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
  EXPECT_NE(msg.find("do not broadcast"), std::string::npos) << msg;
}

TEST(Binary, Int32AddAndSub) {
  // Two int32 inputs give int32, broadcasting as floats do: positions + offset, ids - 1
  Tensor pos = i32({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor add = run1("add", {pos, i32({}, {2})});
  EXPECT_EQ(add.dtype, DType::I32);
  EXPECT_EQ(add.shape, (Dims{2, 3}));
  EXPECT_EQ(ints(add), (std::vector<int32_t>{2, 3, 4, 5, 6, 7}));
  Tensor sub = run1("sub", {pos, i32({2, 1}, {1, 10})});
  EXPECT_EQ(sub.dtype, DType::I32);
  EXPECT_EQ(ints(sub), (std::vector<int32_t>{-1, 0, 1, -7, -6, -5}));
  // Exact past 2^24 (where a float would round), wrapping past int32's range as torch does
  Tensor big = run1("add", {i32({2}, {16777217, 2147483647}), i32({2}, {2, 1})});
  EXPECT_EQ(ints(big), (std::vector<int32_t>{16777219, std::numeric_limits<int32_t>::min()}));
  Tensor under = run1("sub", {i32({1}, {std::numeric_limits<int32_t>::min()}), i32({1}, {1})});
  EXPECT_EQ(ints(under), (std::vector<int32_t>{2147483647}));
  auto sym = infer("add", {{DType::I32, {Dim::seq()}}, {DType::I32, {}}});
  ASSERT_TRUE(sym.ok()) << sym.error().message;
  EXPECT_EQ(sym->at(0).dtype, DType::I32);
  EXPECT_EQ(shape_str(sym->at(0).shape), "[seq]");
  // Float inputs still give float
  auto f = infer("sub", {{DType::F32, {Dim::seq()}}, {DType::F32, {}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->at(0).dtype, DType::F32);
}

TEST(Binary, Int32Errors) {
  // One int32 input with a float one (a template literal is a float constant): cast first
  auto mixed = infer("add", {{DType::I32, {Dim::seq()}}, {DType::F32, {}}});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().message, "add: a is I32 and b is F32: int32 only combines with int32 (cast one of them)");
  auto mixed2 = infer("mul", {{DType::F32, {Dim::of(2)}}, {DType::I32, {Dim::of(2)}}});
  ASSERT_FALSE(mixed2.ok());
  EXPECT_EQ(mixed2.error().message, "mul: a is F32 and b is I32: int32 only combines with int32 (cast one of them)");
  for (const char* op : {"mul", "div"}) {
    auto ints = infer(op, {{DType::I32, {Dim::of(2)}}, {DType::I32, {Dim::of(2)}}});
    ASSERT_FALSE(ints.ok()) << op;
    EXPECT_EQ(ints.error().message, std::string(op) + ": int32 inputs are taken only by add and sub (cast them to f32)");
  }
  // The kernel itself refuses a mixed pair (were the shape rule bypassed)
  Attrs attrs = Attrs::object();
  std::vector<Tensor> inputs = {i32({2}, {1, 2}), f32({2}, {1, 2})}, outputs = {Tensor::zeros(DType::I32, {2})};
  std::unique_ptr<OpState> state;
  std::string where = "w";
  KernelContext ctx{attrs, inputs, outputs, state, 0, where};
  Status st = (*op_table().kernel("add", "reference"))(ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "w: add: input 0 must be F32, got I32");
}

}  // namespace
}  // namespace arch::test
