#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Constant, HoldsItsValueAsAScalar) {
  Tensor out = run1("constant", {}, {{"value", 2.5}});
  EXPECT_EQ(out.shape, Dims{});
  EXPECT_EQ(values(out), (std::vector<float>{2.5f}));
}

TEST(Constant, ValueIsRequired) {
  auto out = def_of("constant").shape({}, {}, Attrs::object());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "constant: attribute 'value' is required");
  auto wrong = def_of("constant").shape({}, {}, Attrs{{"value", "two"}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "constant: attribute 'value' must be a float, got \"two\"");
  auto unknown = def_of("constant").shape({}, {}, Attrs{{"value", 1.0}, {"valu", 2.0}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "constant: unknown attribute 'valu' (it takes: value)");
}

}  // namespace
}  // namespace arch::test
