#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Reshape, ShapeRuleWithSeqDims) {
  auto split = infer("reshape", {{DType::F32, {Dim::seq(), Dim::of(8)}}}, {{"shape", {-1, 2, 4}}});
  ASSERT_TRUE(split.ok()) << split.error().message;
  EXPECT_EQ(shape_str(split->at(0).shape), "[seq, 2, 4]");
  auto merge = infer("reshape", {{DType::F32, {Dim::seq(), Dim::of(2), Dim::of(4)}}}, {{"shape", {-1, 8}}});
  ASSERT_TRUE(merge.ok()) << merge.error().message;
  EXPECT_EQ(shape_str(merge->at(0).shape), "[seq, 8]");
  // The dtype passes through (ids may be reshaped too).
  auto ids = infer("reshape", {{DType::I32, {Dim::seq()}}}, {{"shape", {1, -1}}});
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(ids->at(0).dtype, DType::I32);
}

TEST(Reshape, MismatchIsAnError) {
  auto bad = infer("reshape", {{DType::F32, {Dim::seq(), Dim::of(8)}}}, {{"shape", {-1, 3}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "reshape: cannot reshape [seq, 8] to [seq, 3] (element counts differ: 8 * seq vs 3 * seq)");
  auto seqs = infer("reshape", {{DType::F32, {Dim::seq(), Dim::of(8)}}}, {{"shape", {8, 4}}});
  ASSERT_FALSE(seqs.ok());
  EXPECT_NE(seqs.error().message.find("element counts differ"), std::string::npos);
  // 0 keeps x's dim there: [8] as [8, 8] does not fit; past x's rank it is no dim at all
  auto zero = infer("reshape", {{DType::F32, {Dim::of(8)}}}, {{"shape", {0, 8}}});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("element counts differ"), std::string::npos) << zero.error().message;
  auto past = infer("reshape", {{DType::F32, {Dim::of(8)}}}, {{"shape", {8, 0}}});
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("keeps x's dim"), std::string::npos) << past.error().message;
  auto negative = infer("reshape", {{DType::F32, {Dim::of(8)}}}, {{"shape", {-2, 8}}});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message, "reshape: shape entries must be positive, 0 (x's dim), -1 (seq) or a named run-time dim, got -2");
}

TEST(Reshape, KernelIsAViewOfTheSameStorage) {
  EXPECT_TRUE(def_of("reshape").view);
  Tensor x = f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  // As the engine calls it: the output shape already concrete, seq = 3.
  Attrs attrs = {{"shape", {-1, 2, 2}}};
  std::vector<Tensor> outputs = {Tensor::view(DType::F32, {3, 2, 2}, nullptr, nullptr)};
  std::vector<Tensor> inputs = {x};
  std::unique_ptr<OpState> state;
  std::string where = "h.view";
  KernelContext ctx{attrs, inputs, outputs, state, 0, where};
  Status st = (*op_table().kernel("reshape", "reference"))(ctx);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(outputs[0].shape, (Dims{3, 2, 2}));
  EXPECT_EQ(outputs[0].data, x.data);
  EXPECT_EQ(values(outputs[0]), values(x));
}

TEST(Reshape, KernelSolvesSeqWhenNotGivenAndRefusesAMismatch) {
  Runner r;
  auto out = r.run("reshape", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"shape", {6}}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->at(0).shape, (Dims{6}));

  Attrs attrs = {{"shape", {-1, 4}}};
  std::vector<Tensor> inputs = {f32({6, 2}, std::vector<float>(12, 1.0f))};
  std::vector<Tensor> outputs = {Tensor{}};
  std::unique_ptr<OpState> state;
  std::string where = "x";
  KernelContext ctx{attrs, inputs, outputs, state, 0, where};
  const Kernel& k = *op_table().kernel("reshape", "reference");
  ASSERT_TRUE(k(ctx).ok());
  EXPECT_EQ(outputs[0].shape, (Dims{3, 4}));

  Attrs bad = {{"shape", {-1, 5}}};
  outputs = {Tensor{}};
  KernelContext ctx2{bad, inputs, outputs, state, 0, where};
  Status st = k(ctx2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("cannot view [6, 2]"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace arch::test

namespace arch::test {
namespace {

TEST(Reshape, ZeroKeepsTheInputsDim) {
  Tensor out = run1("reshape", {f32({3, 4}, std::vector<float>(12, 1.0f))}, {{"shape", {0, 2, 2}}});
  EXPECT_EQ(out.shape, (Dims{3, 2, 2}));
}

TEST(Flatten, MergesTheTrailingDimsAndReshapeAsUndoesIt) {
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  Tensor x = f32({2, 3, 4}, v);
  Tensor flat = run1("flatten", {x}, {{"axis", 1}});
  EXPECT_EQ(flat.shape, (Dims{2, 12}));
  EXPECT_EQ(values(flat), v);
  Tensor back = run1("reshape_as", {flat, x});
  EXPECT_EQ(back.shape, x.shape);
  EXPECT_EQ(values(back), v);
  Runner r;
  EXPECT_FALSE(r.run("reshape_as", {f32({5}, std::vector<float>(5, 0.0f)), x}).ok());
}

}  // namespace
}  // namespace arch::test
