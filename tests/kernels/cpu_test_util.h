// Helpers for the cpu-backend tests: run one op through a chosen backend's
// kernel the way the engine does (defaults, shape rule, zero-filled
// outputs), and check the cpu kernel against the reference kernel within
// the op's tolerance (OpDef::tolerance).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <cmath>
#include <string>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace arch::test {

// A float32 tensor of normal values (convert_to makes weights of it).
inline Tensor normal_f32(Dims shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = dist(rng);
  return t;
}

// a @ b^T by `backend`'s matmul kernel, called directly on an output that
// holds `fill` before it runs (the engine leaves it unzeroed for a kernel
// registered as filling its outputs).
inline Tensor run_matmul(const std::string& backend, const Tensor& a, const Tensor& b, float fill = 0.0f,
                         const KernelOptions& options = {}) {
  Tensor out = Tensor::zeros(DType::F32, {a.dim(0), b.dim(0)});
  std::fill(out.f32(), out.f32() + out.numel(), fill);
  std::vector<Tensor> inputs{a, b}, outputs{out};
  std::unique_ptr<OpState> none;
  Attrs attrs = {{"transpose_b", true}};
  std::string where = "test";
  KernelContext ctx{attrs, inputs, outputs, none, 0, where, &options};
  Status st = (*op_table().kernel("matmul", backend))(ctx);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  return outputs[0];
}

// The largest |v| of n floats.
inline double max_abs(const float* v, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, double(std::abs(v[i])));
  return m;
}
inline double max_abs(const Tensor& t) { return max_abs(t.f32(), size_t(t.numel())); }

// The op's outputs from `backend`'s kernel, or an error (shape rule or kernel).
inline Result<std::vector<Tensor>> run_on(const std::string& backend, const std::string& op,
                                          std::vector<Tensor> inputs, Attrs attrs = Attrs::object()) {
  Runner r;
  r.backend = backend;
  return r.run(op, std::move(inputs), std::move(attrs));
}

// The kernel's error message on hand-made outputs (skipping the shape rule,
// which would refuse first), "" if it succeeds.
inline std::string kernel_message(const std::string& backend, const std::string& op, std::vector<Tensor> inputs,
                                  std::vector<Tensor> outputs, Attrs attrs = Attrs::object()) {
  attrs = with_defaults(def_of(op), std::move(attrs));
  std::unique_ptr<OpState> state;
  std::string where = "layers.0.test";
  KernelContext ctx{attrs, inputs, outputs, state, 0, where};
  Status st = (*op_table().kernel(op, backend))(ctx);
  return st.ok() ? std::string() : st.error().message;
}

// The cpu backend registers its own kernel for op (not the reference fallback).
inline bool has_cpu_kernel(const std::string& op) {
  return op_table().kernel(op, "cpu") != op_table().kernel(op, "reference");
}

// Every element of got within op's tolerance of want: |got - want| <= rel
// * max|want| + abs (NaN only against NaN); the first few misses named.
// Returns max|want| so a caller can assert the case computed something.
inline double expect_within_op_tolerance(const std::string& op, const float* got, const float* want, int64_t n,
                                         const std::string& what) {
  const Tolerance tol = def_of(op).tolerance;
  double mx = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double(std::fabs(want[i])));
  const double bound = tol.rel * mx + tol.abs;
  int reported = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = want[i], g = got[i];
    const bool ok = std::isnan(w) ? std::isnan(g) : (w == g || std::fabs(g - w) <= bound);
    if (!ok && reported++ < 5)
      ADD_FAILURE() << what << ": " << op << " element " << i << ": " << g << ", want " << w << " (bound " << bound
                    << ")";
  }
  return mx;
}

// Runs op on both backends and expects every output element within the
// op's tolerance (expect_within_op_tolerance). Returns max|ref| so a caller
// can assert the case computed something.
inline double expect_cpu_matches_reference(const std::string& op, const std::vector<Tensor>& inputs,
                                           Attrs attrs = Attrs::object(), const std::string& what = "") {
  EXPECT_TRUE(has_cpu_kernel(op)) << op << " has no cpu kernel";
  auto ref = run_on("reference", op, inputs, attrs);
  auto cpu = run_on("cpu", op, inputs, attrs);
  EXPECT_TRUE(ref.ok()) << what << ": " << (ref.ok() ? "" : ref.error().message);
  EXPECT_TRUE(cpu.ok()) << what << ": " << (cpu.ok() ? "" : cpu.error().message);
  if (!ref.ok() || !cpu.ok()) return 0;
  double max_ref = 0;
  for (size_t o = 0; o < ref->size(); ++o) {
    const Tensor& r = (*ref)[o];
    const Tensor& c = (*cpu)[o];
    EXPECT_EQ(r.shape, c.shape) << what;
    EXPECT_EQ(r.dtype, c.dtype) << what;
    if (r.shape != c.shape || r.dtype != DType::F32 || c.dtype != DType::F32) continue;
    max_ref = std::max(max_ref, expect_within_op_tolerance(op, c.f32(), r.f32(), r.numel(),
                                                           what + " output " + std::to_string(o)));
  }
  return max_ref;
}

// Random values in [-scale, scale).
inline std::vector<float> scaled_values(size_t n, uint64_t seed, float scale) {
  std::vector<float> v = random_values(n, seed);
  for (float& x : v) x *= scale;
  return v;
}

}  // namespace arch::test
