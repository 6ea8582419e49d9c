// A tensor held in part (tensor parallelism, engine/distributed): the
// ranges of one axis a process holds, and each op's rule for making a part
// of its outputs from parts of its inputs. The rule belongs to the op's
// definition (OpDef::split) beside its shape rule; the rewrite that splits
// a graph over processes asks it from the graph's end backwards.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct TypedShape;

// Ranges [begin, end) of one axis, in the order they are held (a fused
// q/k/v projection's rows for one process's heads are three ranges); axis
// -1: the whole tensor.
struct Part {
  int axis = -1;
  std::vector<std::pair<int64_t, int64_t>> ranges;

  static Part whole() { return {}; }
  static Part of(int axis, int64_t begin, int64_t end) { return {axis, {{begin, end}}}; }
  bool is_whole() const { return axis < 0; }
  int64_t size() const {
    int64_t n = 0;
    for (const auto& [b, e] : ranges) n += e - b;
    return n;
  }
  bool operator==(const Part& o) const { return axis == o.axis && (axis < 0 || ranges == o.ranges); }
  bool operator!=(const Part& o) const { return !(*this == o); }
};

// "whole", "axis 1 [0, 2)", "axis 0 [0, 32) [64, 80)".
std::string part_str(const Part& p);

// Part p of a stored tensor (as a checkpoint maps it): one range of its
// first axis is a view (only its pages are ever read); anything else a copy
// of just those elements, the source's mapped pages given back after.
// Along a block-quantized row, ranges must fall on whole blocks.
Result<Tensor> tensor_part(const Tensor& t, const Part& p);

// A Part's axis meaning "a partial sum": each process computes the whole
// output's shape from its ranges of the op's contraction (a matmul's K),
// and the sum over processes is the output (row parallelism). A rule that
// can answers with the contraction's length when asked with no ranges.
constexpr int kPartialSum = -2;
// A Part's axis meaning "as it is held, so long as axis ranges[0].first is
// not cut": what a reader of a value's length alone asks (arange).
constexpr int kAnyPart = -3;
// A wanted part meaning "any part you make of it": an output no op reads
// but the graph hands out (a state beside the op's main output, gathered
// from every process), asked of a rule beside a sibling wanted in part.
// The rule says which part it makes in SplitAnswer::outputs.
constexpr int kOpenPart = -4;

// What the split rule is asked: the node's types as instantiated, and the
// part of each output wanted (whole where an output is wanted whole, or not
// at all).
struct SplitQuery {
  std::span<const TypedShape> in;
  std::span<const bool> present;
  std::span<const TypedShape> out;
  const nlohmann::json& attrs;
  std::span<const Part> want;
};

// Its answer: the part of each input it needs, and its attributes for the
// part (a reshape's shape; unchanged elsewhere).
struct SplitAnswer {
  std::vector<Part> inputs;
  nlohmann::json attrs;
  int64_t contraction = 0;  // asked for a partial sum with no ranges: the length to cut
  // The part of each output it makes, where that is not the part wanted
  // (empty: each as wanted): an open output's part, or more than was
  // wanted (whole heads where the part asked would cut one), which its
  // readers then take theirs of by a slice.
  std::vector<Part> outputs = {};
};

// An error says why the op cannot make that part (it mixes what the part
// would cut apart): the rewrite then computes it whole there.
using SplitRule = std::function<Result<SplitAnswer>(const SplitQuery&)>;

}  // namespace arch
