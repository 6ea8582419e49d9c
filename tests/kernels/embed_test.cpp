#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// table [4, 3]: row r is (10r, 10r + 1, 10r + 2)
Tensor table() { return f32({4, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}); }

TEST(Embed, GathersRowsForEveryId) {
  Tensor out = run1("embed", {table(), i32({2, 2}, {3, 0, 1, 3})});
  EXPECT_EQ(out.shape, (Dims{2, 2, 3}));
  EXPECT_EQ(values(out), (std::vector<float>{30, 31, 32, 0, 1, 2, 10, 11, 12, 30, 31, 32}));
}

TEST(Embed, ShapeRuleKeepsSeq) {
  auto out = infer("embed", {{DType::F32, {Dim::of(100), Dim::of(64)}}, {DType::I32, {Dim::seq()}}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(shape_str(out->at(0).shape), "[seq, 64]");
}

TEST(Embed, IdOutOfRangeNamesTheValueAndTheId) {
  Runner r;
  r.where = "model.embed";
  std::string msg = run_error(r, "embed", {table(), i32({3}, {0, 4, 1})});
  EXPECT_NE(msg.find("model.embed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("id 4 at row 1 is out of range: the table has 4 rows"), std::string::npos) << msg;
  msg = run_error(r, "embed", {table(), i32({1}, {-1})});
  EXPECT_NE(msg.find("id -1 at row 0 is out of range"), std::string::npos) << msg;
}

TEST(Embed, IdsMustBeInt32) {
  auto out = infer("embed", {{DType::F32, {Dim::of(4), Dim::of(3)}}, {DType::F32, {Dim::seq()}}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "embed: ids must be I32, got F32");
}

}  // namespace
}  // namespace arch::test
