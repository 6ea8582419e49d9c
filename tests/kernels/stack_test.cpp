#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Stack, AlongEachAxis) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({2, 3}, {10, 20, 30, 40, 50, 60});
  Tensor s0 = run1("stack", {a, b});  // axis 0 by default
  EXPECT_EQ(s0.shape, (Dims{2, 2, 3}));
  EXPECT_EQ(values(s0), (std::vector<float>{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}));
  Tensor s1 = run1("stack", {a, b}, {{"axis", 1}});
  EXPECT_EQ(s1.shape, (Dims{2, 2, 3}));
  EXPECT_EQ(values(s1), (std::vector<float>{1, 2, 3, 10, 20, 30, 4, 5, 6, 40, 50, 60}));
  Tensor s2 = run1("stack", {a, b}, {{"axis", -1}});
  EXPECT_EQ(s2.shape, (Dims{2, 3, 2}));
  EXPECT_EQ(values(s2), (std::vector<float>{1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60}));
  EXPECT_EQ(values(run1("stack", {a, b}, {{"axis", 2}})), values(s2));
  EXPECT_EQ(values(run1("stack", {a, b}, {{"axis", -3}})), values(s0));
}

TEST(Stack, ManyInputsAndOne) {
  std::vector<Tensor> xs;
  for (int i = 0; i < 5; ++i) xs.push_back(f32({2}, {float(i), float(10 * i)}));
  Tensor s = run1("stack", xs, {{"axis", 1}});
  EXPECT_EQ(s.shape, (Dims{2, 5}));
  EXPECT_EQ(values(s), (std::vector<float>{0, 1, 2, 3, 4, 0, 10, 20, 30, 40}));
  Tensor one = run1("stack", {f32({3}, {7, 8, 9})});
  EXPECT_EQ(one.shape, (Dims{1, 3}));
  EXPECT_EQ(values(one), (std::vector<float>{7, 8, 9}));
}

TEST(Stack, IntsToo) {
  Tensor s = run1("stack", {i32({2}, {1, 2}), i32({2}, {3, 4})}, {{"axis", 1}});
  EXPECT_EQ(s.dtype, DType::I32);
  EXPECT_EQ(ints(s), (std::vector<int32_t>{1, 3, 2, 4}));
}

TEST(Stack, ShapeRule) {
  EXPECT_EQ(def_of("stack").inputs, (std::vector<std::string>{"xs*"}));
  TypedShape x{DType::F32, {Dim::seq(), Dim::of(4)}};
  auto ok = infer("stack", {x, x, x});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[3, seq, 4]");
  auto last = infer("stack", {x, x}, {{"axis", -1}});
  ASSERT_TRUE(last.ok()) << last.error().message;
  EXPECT_EQ(shape_str(last->at(0).shape), "[seq, 4, 2]");

  auto differ = infer("stack", {x, {DType::F32, {Dim::seq(), Dim::of(5)}}});
  ASSERT_FALSE(differ.ok());
  EXPECT_EQ(differ.error().message, "stack: input 1 is F32[seq, 5], input 0 is F32[seq, 4] (all must agree)");
  auto dtype = infer("stack", {x, {DType::I32, {Dim::seq(), Dim::of(4)}}});
  EXPECT_FALSE(dtype.ok());
  auto none = infer("stack", {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "stack: needs at least one input");
  auto range = infer("stack", {x, x}, {{"axis", 3}});
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().message, "stack: axis 3 is out of range for 2 dim(s) (a new axis: -3 .. 2)");
}

TEST(Stack, KernelRefusesMismatchedInputs) {
  const OpDef& d = def_of("stack");
  Attrs attrs = with_defaults(d, Attrs::object());
  std::vector<Tensor> inputs = {f32({2}, {1, 2}), f32({3}, {1, 2, 3})};
  std::vector<Tensor> outputs = {Tensor::zeros(DType::F32, {2, 2})};
  std::unique_ptr<OpState> state;
  std::string where = "s";
  KernelContext ctx{attrs, inputs, outputs, state, 0, where};
  Status st = (*op_table().kernel("stack", "reference"))(ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "s: stack: input 1 is [3], input 0 is [2] (all must agree)");
}

}  // namespace
}  // namespace arch::test
