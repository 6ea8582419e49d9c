// Helpers for the reference-kernel tests: make tensors, run one op the way
// the engine does (defaults filled from AttrSpec, shape rule, zero-filled
// outputs, kernel), and compare with a naive double-precision result.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace arch::test {

inline Tensor f32(Dims shape, const std::vector<float>& values) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  EXPECT_EQ(size_t(t.numel()), values.size()) << "test tensor of the wrong size";
  // No bytes, no copy: an empty vector's data() may be null (memcpy's UB).
  if (!values.empty() && t.numel() > 0)
    std::memcpy(t.data, values.data(), std::min(values.size(), size_t(t.numel())) * sizeof(float));
  return t;
}

inline Tensor i32(Dims shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::zeros(DType::I32, std::move(shape));
  EXPECT_EQ(size_t(t.numel()), values.size()) << "test tensor of the wrong size";
  if (!values.empty() && t.numel() > 0)
    std::memcpy(t.data, values.data(), std::min(values.size(), size_t(t.numel())) * sizeof(int32_t));
  return t;
}

inline Tensor absent() { return Tensor{}; }

inline std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

inline std::vector<int32_t> ints(const Tensor& t) {
  return std::vector<int32_t>(t.i32(), t.i32() + t.numel());
}

// Deterministic values in [-1, 1) (a 64-bit LCG), different per seed.
inline std::vector<float> random_values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(double(s >> 11) / double(1ull << 53) * 2.0 - 1.0);
  }
  return v;
}

// What the caller does before a shape rule or a kernel: every declared
// attribute present, defaults filled in.
inline Attrs with_defaults(const OpDef& def, Attrs attrs) {
  if (attrs.is_null()) attrs = Attrs::object();
  for (const AttrSpec& s : def.attrs)
    if (!attrs.contains(s.name)) attrs[s.name] = s.default_value;
  return attrs;
}

inline const OpDef& def_of(const std::string& op) {
  const OpDef* d = op_table().find(op);
  if (!d) throw std::runtime_error("no op " + op);
  return *d;
}

// The shape rule on typed shapes (present[i] false for an absent input; a
// variadic op takes all its inputs in `in`).
inline Result<std::vector<TypedShape>> infer(const std::string& op, std::vector<TypedShape> in,
                                             Attrs attrs = Attrs::object(),
                                             std::vector<bool> present = {}) {
  const OpDef& d = def_of(op);
  if (present.empty()) present.assign(in.size(), true);
  std::unique_ptr<bool[]> p(new bool[present.size()]);
  for (size_t i = 0; i < present.size(); ++i) p[i] = present[i];
  return d.shape(in, std::span<const bool>(p.get(), present.size()), with_defaults(d, std::move(attrs)));
}

// One process alone, talking to itself: what it sends it receives
// (zeros when nothing was sent), all_reduce and all_gather its own values.
// The collectives ops' sample calls run on it.
class Loopback : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status all_reduce_sum(float*, int64_t) override { return {}; }
  Status all_gather(const void* mine, const std::vector<int64_t>& bytes, void* all) override {
    std::memcpy(all, mine, size_t(bytes[0]));
    return {};
  }
  Status send(int, const void* data, int64_t bytes) override {
    sent_.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    return {};
  }
  Status recv(int, void* data, int64_t bytes) override {
    std::memset(data, 0, size_t(bytes));
    if (!sent_.empty()) std::memcpy(data, sent_.data(), std::min(sent_.size(), size_t(bytes)));  // nothing sent: zeros
    return {};
  }

 private:
  std::vector<char> sent_;
};
inline Loopback& loopback() {
  static Loopback l;
  return l;
}

// Runs ops like a session does: keeps each op's state between calls.
struct Runner {
  std::unique_ptr<OpState> state;
  int64_t max_context = 0;
  int64_t ctx = -1;  // what a `ctx` dim of an output stands for (< 0: seq)
  std::string where = "layers.0.test";
  std::string backend = "reference";  // whose kernel runs
  KernelOptions options{.collectives = &loopback()};  // as a model is loaded with them (one process: loopback)
  bool poison = false;                // outputs start as all-ones bytes (F32: NaN), not zeros
  const SequenceRows* sequences = nullptr;  // set: the rows are several sequences'

  // Shape rule, then the kernel on zero-filled outputs of the inferred shapes
  // (inputs concrete; `seq` stands for any seq dim the rule returns, `ctx` for
  // the member above). A view op's outputs are not allocated: the kernel sets
  // them. Every output is returned (multi-output ops: in order).
  Result<std::vector<Tensor>> run(const std::string& op, std::vector<Tensor> inputs,
                                  Attrs attrs = Attrs::object(), int64_t seq = 0) {
    const OpDef& d = def_of(op);
    attrs = with_defaults(d, std::move(attrs));
    std::vector<TypedShape> in;
    std::vector<bool> present;
    for (const Tensor& t : inputs) {
      present.push_back(t.data != nullptr);
      in.push_back(TypedShape{t.dtype, t.data ? shape_of(t.shape) : Shape{}});
    }
    ARCH_TRY(std::vector<TypedShape> outs, infer(op, in, attrs, present));
    if (d.value_shape) {  // a data-dependent size: from the inputs' values, as a run does
      ARCH_TRY(outs, d.value_shape(inputs, attrs));
    }
    std::vector<Tensor> outputs;
    for (const TypedShape& o : outs) {
      Dims dims = concretize(o.shape, seq, ctx);
      outputs.push_back(d.view ? Tensor::view(o.dtype, dims, nullptr, nullptr) : Tensor::zeros(o.dtype, dims));
      if (poison && !d.view) std::memset(outputs.back().data, 0xff, outputs.back().nbytes());
    }
    const Kernel* k = op_table().kernel(op, backend);
    if (!k) return error("no kernel for " + op);
    KernelContext kctx{attrs, inputs, outputs, state, max_context, where, &options, sequences};
    ARCH_TRY_STATUS((*k)(kctx));
    if (outputs.size() != size_t(d.num_outputs))
      return error(op + ": " + std::to_string(outputs.size()) + " outputs, the op declares " +
                   std::to_string(d.num_outputs));
    return outputs;
  }
};

// One op, first output, fresh state: the output or a test failure.
inline Tensor run1(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = Attrs::object()) {
  Runner r;
  auto out = r.run(op, std::move(inputs), std::move(attrs));
  if (!out.ok()) {
    ADD_FAILURE() << op << " failed: " << out.error().message;
    return Tensor::zeros(DType::F32, {0});
  }
  return out->at(0);
}

// One op, every output, fresh state: the outputs or a test failure (empty).
inline std::vector<Tensor> run_all(const std::string& op, std::vector<Tensor> inputs,
                                   Attrs attrs = Attrs::object()) {
  Runner r;
  auto out = r.run(op, std::move(inputs), std::move(attrs));
  if (!out.ok()) {
    ADD_FAILURE() << op << " failed: " << out.error().message;
    return {};
  }
  return *out;
}

// The error message of a run that must fail ("" and a test failure if it succeeds).
inline std::string run_error(Runner& r, const std::string& op, std::vector<Tensor> inputs,
                             Attrs attrs = Attrs::object()) {
  auto out = r.run(op, std::move(inputs), std::move(attrs));
  if (out.ok()) {
    ADD_FAILURE() << op << " succeeded where it should fail";
    return "";
  }
  return out.error().message;
}

// |got - want| <= rel * max|want| + abs, elementwise, as an op's tolerance.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel,
                         double abs = 0.0) {
  ASSERT_EQ(got.size(), want.size());
  double mx = 0;
  for (double w : want) mx = std::max(mx, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * mx + abs) << "at element " << i;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace arch::test
