#include "tests/kernels/kernel_test_util.h"

#include <set>

namespace arch::test {
namespace {

TEST(OpTable, EveryOpHasAShapeRuleAKernelAndADoc) {
  const OpTable& t = op_table();
  ASSERT_FALSE(t.names().empty());
  for (const std::string& name : t.names()) {
    const OpDef* d = t.find(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_EQ(d->name, name);
    EXPECT_TRUE(bool(d->shape)) << name << " has no shape rule";
    const Kernel* k = t.kernel(name, "reference");
    ASSERT_NE(k, nullptr) << name << " has no reference kernel";
    EXPECT_TRUE(bool(*k)) << name;
    EXPECT_FALSE(d->doc.empty()) << name << " has no doc";
    EXPECT_EQ(d->doc.find('\n'), std::string::npos) << name << ": the doc is one line";
    EXPECT_GE(d->tolerance.rel, 0) << name;
    EXPECT_GE(d->tolerance.abs, 0) << name;
    EXPECT_EQ(d->num_outputs, 1) << name;
    std::set<std::string> attr_names;
    for (const AttrSpec& a : d->attrs) EXPECT_TRUE(attr_names.insert(a.name).second) << name << "." << a.name;
  }
}

TEST(OpTable, HoldsTheReferenceVocabulary) {
  std::vector<std::string> want = {"embed", "matmul", "add", "sub", "mul", "div", "constant", "silu",
                                   "gelu", "gelu_tanh", "relu", "sigmoid", "tanh", "exp", "sqrt", "neg",
                                   "rms_norm", "layer_norm", "softmax", "rope", "attention", "reshape"};
  for (const std::string& op : want) EXPECT_NE(op_table().find(op), nullptr) << op;
}

TEST(OpTable, MalformedCallsAreErrorsNotCrashes) {
  for (const std::string& name : op_table().names()) {
    const OpDef& d = def_of(name);
    // Shape rules: too few inputs, rank-0 inputs, attributes of the wrong kind.
    if (!d.inputs.empty()) {
      EXPECT_FALSE(d.shape({}, {}, Attrs::object()).ok()) << name;
    }
    std::vector<TypedShape> scalars(d.inputs.size(), TypedShape{DType::F32, {}});
    (void)infer(name, scalars);  // ok or an error: it must return
    Attrs junk = Attrs::object();
    for (const AttrSpec& a : d.attrs) junk[a.name] = Attrs::array({"junk"});
    if (!d.attrs.empty()) {
      EXPECT_FALSE(infer(name, scalars, junk).ok()) << name;
    }
    // Kernels: no inputs and no outputs.
    Attrs attrs = with_defaults(d, Attrs::object());
    std::vector<Tensor> inputs, outputs;
    std::unique_ptr<OpState> state;
    std::string where = "w";
    KernelContext ctx{attrs, inputs, outputs, state, 0, where};
    EXPECT_FALSE((*op_table().kernel(name, "reference"))(ctx).ok()) << name;
  }
}

TEST(OpTable, SharedChecksRefuseWrongInputCountsAndAttrKinds) {
  auto count = infer("softmax", {{DType::F32, {Dim::of(3)}}, {DType::F32, {Dim::of(3)}}});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().message, "softmax: expects 1 input(s) (x), got 2");
  auto missing = infer("matmul", {{DType::F32, {Dim::of(3)}}, {DType::F32, {}}}, Attrs::object(), {true, false});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "matmul: input 'b' is required");
  auto kind = infer("attention",
                    {{DType::F32, {Dim::seq(), Dim::of(2), Dim::of(4)}},
                     {DType::F32, {Dim::seq(), Dim::of(2), Dim::of(4)}},
                     {DType::F32, {Dim::seq(), Dim::of(2), Dim::of(4)}}},
                    {{"causal", "yes"}});
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.error().message, "attention: attribute 'causal' must be a bool, got \"yes\"");
  // An int written as 64.0 in a config is still an int.
  auto rope = infer("rope", {{DType::F32, {Dim::seq(), Dim::of(2), Dim::of(8)}}, {DType::I32, {Dim::seq()}}},
                    {{"theta", 1e4}, {"rope_dim", 4.0}});
  EXPECT_TRUE(rope.ok()) << rope.error().message;
}

}  // namespace
}  // namespace arch::test
