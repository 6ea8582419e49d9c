#include "tests/kernels/kernel_test_util.h"

#include <cstring>
#include <map>
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
    EXPECT_GE(d->num_outputs, 1) << name;
    for (size_t i = 0; i < d->inputs.size(); ++i)
      if (d->inputs[i].ends_with('*')) {
        EXPECT_EQ(i + 1, d->inputs.size()) << name << ": only the last input may be variadic";
      }
    std::set<std::string> attr_names;
    for (const AttrSpec& a : d->attrs) EXPECT_TRUE(attr_names.insert(a.name).second) << name << "." << a.name;
  }
}

TEST(OpTable, HoldsTheReferenceVocabulary) {
  std::vector<std::string> want = {"embed", "matmul", "add", "sub", "mul", "div", "constant", "silu",
                                   "gelu", "gelu_tanh", "relu", "sigmoid", "tanh", "exp", "sqrt", "neg",
                                   "rms_norm", "layer_norm", "softmax", "rope", "attention", "reshape",
                                   "kv_cache", "topk", "routed_matmul", "sum", "mean", "stack", "concat",
                                   "slice", "select", "quick_gelu", "transpose", "cast", "l2_normalize",
                                   "batch_norm", "conv2d", "max_pool2d", "avg_pool2d", "glu",
                                   "arange", "gather", "one_hot", "relative_position_bucket", "log_bucket_position", "resize", "window_partition", "window_reverse", "shifted_window_mask", "window_coords", "window_relative_index", "pixel_shuffle", "conv1d", "round", "timestep_embedding", "sincos_2d", "group_norm", "upsample_nearest", "patchify", "unpatchify", "patch_ids", "flatten", "reshape_as", "rope_axes_tables", "rotary", "pad", "clamp",
                                   "conv_transpose1d", "leaky_relu", "ceil", "flip", "cumsum", "expand_by_durations",
                                   "rational_quadratic_spline", "normal_noise", "relative_attention",
                                   "softplus", "causal_conv1d", "gated_delta_rule", "all_reduce", "all_gather", "send",
                                   "recv", "place_rows", "token_runs", "conv3d", "time_shuffle", "space_time_to_depth", "depth_to_space_time"};
  for (const std::string& op : want) EXPECT_NE(op_table().find(op), nullptr) << op;
  EXPECT_EQ(op_table().names().size(), want.size()) << "a new op: add it here and to SampleCalls";
}

// One valid call of every op, run the way the engine runs it: the shape rule
// gives num_outputs outputs, and the kernel fills outputs of those shapes
// (a view op sets them itself; `ctx` is the rows a fresh KV cache holds).
struct Sample {
  std::vector<Tensor> inputs;
  Attrs attrs = Attrs::object();
};

std::map<std::string, Sample> sample_calls() {
  auto x = [](Dims d, uint64_t seed = 1) { return f32(d, random_values(size_t(numel(d)), seed)); };
  std::map<std::string, Sample> s;
  s["embed"] = {{x({5, 4}), i32({3}, {0, 4, 2})}};
  s["matmul"] = {{x({3, 4}), x({2, 4})}};
  for (const char* op : {"add", "sub", "mul", "div"}) s[op] = {{x({3, 4}), x({4}, 2)}};
  s["constant"] = {{}, {{"value", 1.5}}};
  for (const char* op : {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh", "exp", "sqrt", "neg",
                         "softplus"})
    s[op] = {{x({3, 4})}};
  s["glu"] = {{x({3, 8}), x({3, 8}, 2)}, {{"act", "silu"}, {"gate_start", 1}, {"up_start", 4}, {"width", 3}}};
  s["rms_norm"] = {{x({3, 4}), x({4})}, {{"eps", 1e-6}}};
  s["layer_norm"] = {{x({3, 4}), x({4}), x({4})}};
  s["softmax"] = {{x({3, 4})}};
  s["rope"] = {{x({3, 2, 4}), i32({3}, {0, 1, 2})}, {{"theta", 10000.0}}};
  s["attention"] = {{x({3, 4, 8}), x({5, 2, 8}), x({5, 2, 6}), x({4, 3, 5}, 2)}};
  s["arange"] = {{x({3, 4})}, {{"axis", 1}}};
  s["gather"] = {{x({3, 4}), i32({3, 2}, {0, 3, 1, 1, 2, 0})}};
  s["one_hot"] = {{i32({3}, {0, 3, 1})}, {{"depth", 4}}};
  s["resize"] = {{x({2, 4, 4}), x({1, 6, 5})}, {{"mode", "bicubic"}, {"antialias", true}}};
  s["window_partition"] = {{x({16, 3}), x({1, 4, 4})}, {{"window", 2}, {"shift", 1}}};
  s["window_reverse"] = {{x({4, 4, 3}), x({1, 4, 4})}, {{"window", 2}, {"shift", 1}}};
  s["shifted_window_mask"] = {{x({1, 4, 4})}, {{"window", 2}, {"shift", 1}}};
  s["window_coords"] = {{}, {{"window", 3}}};
  s["window_relative_index"] = {{}, {{"window", 3}}};
  s["pixel_shuffle"] = {{x({8, 2, 3})}, {{"factor", 2}}};
  s["time_shuffle"] = {{x({8, 2, 3, 2})}, {{"factor", 2}}};
  s["space_time_to_depth"] = {{x({4, 3, 4, 6})}, {{"factor_t", 2}, {"factor_s", 2}, {"channels", 8}}};
  s["depth_to_space_time"] = {{x({8, 2, 2, 3})}, {{"factor_t", 2}, {"factor_s", 2}, {"channels", 4}}};
  s["log_bucket_position"] = {{i32({2}, {3, 4}), i32({5}, {0, 1, 2, 3, 40})}, {{"buckets", 8}, {"max_position", 32}, {"span", 8}}};
  s["relative_position_bucket"] = {{i32({2}, {3, 4}), i32({5}, {0, 1, 2, 3, 4})}, {{"bidirectional", false}}};
  s["reshape"] = {{x({3, 4})}, {{"shape", {3, 2, 2}}}};
  s["kv_cache"] = {{x({3, 2, 8}), x({3, 2, 6})}};
  s["topk"] = {{x({3, 6})}, {{"k", 2}}};
  s["routed_matmul"] = {{x({3, 4}), x({5, 6, 4}), i32({3, 2}, {0, 4, 1, 1, 3, 2})}};
  s["sum"] = {{x({3, 4})}, {{"axis", 1}}};
  s["mean"] = {{x({3, 4})}, {{"axis", 0}, {"keepdim", true}}};
  s["stack"] = {{x({3, 4}), x({3, 4}), x({3, 4})}, {{"axis", 1}}};
  s["concat"] = {{x({3, 4}), x({3, 1})}, {{"axis", -1}}};
  s["slice"] = {{x({3, 4})}, {{"axis", 1}, {"start", 1}, {"end", -1}}};
  // One process alone (the loopback): its own values.
  s["all_reduce"] = {{x({3, 4})}};
  s["all_gather"] = {{x({3, 4})}, {{"axis", 1}, {"sizes", {4}}}};
  s["send"] = {{x({3, 4})}, {{"to", 0}}};
  s["recv"] = {{i32({3}, {1, 2, 3})}, {{"from", 0}, {"dims", {4}}}};
  s["select"] = {{x({3, 4})}, {{"axis", 0}, {"index", -1}}};
  s["transpose"] = {{x({3, 4, 2})}, {{"perm", {2, 0, 1}}}};
  s["cast"] = {{i32({3}, {0, 1, 2})}, {{"dtype", "f32"}}};
  s["round"] = {{x({3, 4})}, {{"dtype", "bf16"}}};
  s["timestep_embedding"] = {{x({2})}, {{"dim", 8}}};
  s["sincos_2d"] = {{x({8, 2, 3})}};
  s["group_norm"] = {{x({4, 3, 3}), x({4}, 2), x({4}, 3)}, {{"groups", 2}}};
  s["upsample_nearest"] = {{x({2, 3, 3})}};
  s["patchify"] = {{x({2, 4, 6})}};
  s["unpatchify"] = {{x({6, 8}), x({2, 4, 6})}};
  s["patch_ids"] = {{x({2, 4, 6})}};
  s["flatten"] = {{x({2, 4, 6})}};
  s["reshape_as"] = {{x({2, 24}), x({2, 4, 6})}};
  s["rope_axes_tables"] = {{x({5, 3})}, {{"axes_dims", {2, 4, 2}}}};
  s["rotary"] = {{x({5, 2, 8}), x({5, 8}, 2), x({5, 8}, 3)}};
  s["pad"] = {{x({2, 3, 3})}, {{"pads", {0, 1, 0, 1}}}};
  s["clamp"] = {{x({3, 4})}, {{"min", -1.0}, {"max", 1.0}}};
  s["l2_normalize"] = {{x({3, 4})}};
  s["batch_norm"] = {{x({3, 4, 4}), x({3}, 2), x({3}, 3), x({3}, 4), f32({3}, {1, 2, 3})}};
  s["conv2d"] = {{x({4, 6, 5}), x({6, 2, 3, 3}, 2), x({6}, 3)}, {{"stride", 2}, {"padding", 1}, {"groups", 2}}};
  s["conv3d"] = {{x({3, 4, 5, 5}), x({6, 3, 3, 3, 3}, 2), x({6}, 3)},
                 {{"stride", std::vector<int64_t>{1, 2, 2}}, {"padding", std::vector<int64_t>{2, 0, 1, 1, 1, 1}}}};
  s["conv1d"] = {{x({4, 9}), x({6, 2, 3}, 2), x({6}, 3)}, {{"stride", 2}, {"padding", 1}, {"groups", 2}}};
  s["conv_transpose1d"] = {{x({4, 5}), x({4, 3, 4}, 2), x({6}, 3)}, {{"stride", 2}, {"padding", 1}, {"groups", 2}}};
  s["leaky_relu"] = {{x({3, 4})}, {{"slope", 0.1}}};
  s["ceil"] = {{x({3, 4})}};
  s["flip"] = {{x({3, 4})}, {{"axis", 0}}};
  s["cumsum"] = {{x({3, 4})}, {{"axis", 1}}};
  s["expand_by_durations"] = {{x({3, 4}), f32({1, 3}, {2, 0, 3})}};
  s["rational_quadratic_spline"] = {{x({2, 3}), x({2, 3, 5}, 2), x({2, 3, 5}, 3), x({2, 3, 4}, 4)}, {{"inverse", true}}};
  s["normal_noise"] = {{x({3, 4}), f32({}, {0.5f}), i32({}, {7})}, {{"stream", 1}}};
  s["relative_attention"] = {{x({5, 2, 4}), x({5, 2, 4}, 2), x({5, 2, 4}, 3), x({3, 4}, 4), x({3, 4}, 5)}};
  s["causal_conv1d"] = {{x({5, 6}), x({6, 4}, 2)}};
  s["gated_delta_rule"] = {{x({5, 2, 4}), x({5, 2, 4}, 2), x({5, 4, 3}, 3), x({5, 4}, 4), x({5, 4}, 5)}};
  s["place_rows"] = {{x({4, 3}), i32({4}, {1, 9, 9, 2}), x({2, 3}, 2)}, {{"token", 9}}};
  s["token_runs"] = {{i32({5}, {9, 9, 1, 9, 2})}, {{"token", 9}}};
  s["max_pool2d"] = {{x({3, 5, 5})}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}}};
  s["avg_pool2d"] = {{x({3, 5, 5})}, {{"kernel", 2}, {"ceil_mode", true}}};
  return s;
}

TEST(OpTable, SampleCallsGiveTheDeclaredOutputs) {
  const auto samples = sample_calls();
  for (const std::string& name : op_table().names()) {
    auto it = samples.find(name);
    if (it == samples.end()) {
      ADD_FAILURE() << name << " has no sample call";
      continue;
    }
    const OpDef& d = def_of(name);
    const Sample& sample = it->second;
    std::vector<TypedShape> in;
    for (const Tensor& t : sample.inputs) in.push_back({t.dtype, shape_of(t.shape)});
    auto types = infer(name, in, sample.attrs);
    ASSERT_TRUE(types.ok()) << name << ": " << types.error().message;
    ASSERT_EQ(types->size(), size_t(d.num_outputs)) << name;
    Runner r;
    r.max_context = d.stateful ? 16 : 0;
    r.ctx = sample.inputs.empty() ? -1 : sample.inputs[0].shape.empty() ? -1 : sample.inputs[0].shape[0];
    auto outs = r.run(name, sample.inputs, sample.attrs);
    ASSERT_TRUE(outs.ok()) << name << ": " << outs.error().message;
    ASSERT_EQ(outs->size(), types->size()) << name;
    std::vector<TypedShape> want = *types;
    if (d.value_shape) {  // a size from the inputs' values
      auto v = d.value_shape(sample.inputs, with_defaults(d, sample.attrs));
      ASSERT_TRUE(v.ok()) << name << ": " << v.error().message;
      want = *v;
    }
    for (size_t i = 0; i < outs->size(); ++i) {
      EXPECT_EQ(outs->at(i).dtype, want.at(i).dtype) << name << " output " << i;
      EXPECT_EQ(outs->at(i).shape, concretize(want.at(i).shape, 0, r.ctx)) << name << " output " << i;
      EXPECT_TRUE(outs->at(i).data != nullptr || outs->at(i).numel() == 0) << name << " output " << i;
    }
    EXPECT_EQ(r.state != nullptr, d.stateful) << name << ": state kept iff stateful";
  }
}

// A kernel declared to write every output element (so the interpreter
// leases its outputs unzeroed) gives the same bytes on outputs that start
// as garbage as on zeroed ones.
TEST(OpTable, KernelsThatFillTheirOutputsWriteEveryElement) {
  const auto samples = sample_calls();
  int checked = 0;
  for (const std::string& name : op_table().names())
    for (const char* backend : {"reference", "cpu"}) {
      auto it = samples.find(name);
      if (it == samples.end() || !op_table().fills_outputs(name, backend)) continue;
      const OpDef& d = def_of(name);
      auto run = [&](bool poison) {
        Runner r;
        r.backend = backend;
        r.poison = poison;
        r.max_context = d.stateful ? 16 : 0;
        r.ctx = it->second.inputs.empty() || it->second.inputs[0].shape.empty() ? -1 : it->second.inputs[0].shape[0];
        return r.run(name, it->second.inputs, it->second.attrs);
      };
      auto zeroed = run(false), poisoned = run(true);
      ASSERT_TRUE(zeroed.ok() && poisoned.ok()) << name << " on " << backend;
      for (size_t i = 0; i < zeroed->size(); ++i) {
        const Tensor& a = zeroed->at(i);
        const Tensor& b = poisoned->at(i);
        ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
        EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes()), 0) << name << " on " << backend << ": output " << i
                                                               << " keeps bytes it did not write";
      }
      ++checked;
    }
  EXPECT_GE(checked, 24);  // slice (reference) and the cpu kernels that say so, when this was written
}

TEST(OpTable, VariadicInputs) {
  // "xs*" takes any number of inputs; the shape rule sees them all.
  auto x = TypedShape{DType::F32, {Dim::of(2)}};
  for (size_t n : {1, 2, 7}) {
    auto out = infer("stack", std::vector<TypedShape>(n, x));
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(shape_str(out->at(0).shape), "[" + std::to_string(n) + ", 2]");
  }
  auto absent = infer("stack", {x, x}, Attrs::object(), {true, false});
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().message, "stack: input 'xs[1]' is required");
  // Too many inputs for a fixed op still says how many it takes.
  auto count = infer("softmax", {x, x});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().message, "softmax: expects 1 input(s) (x), got 2");
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
