#include "kernels/reference/split_rules.h"

#include <algorithm>

#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// The one output's wanted part, or an error naming what is asked of more.
Result<Part> one_part(const SplitQuery& q, const char* op) {
  if (q.want.size() != 1) return error(std::string(op) + ": one output expected");
  if (q.want[0].axis < 0) return error(std::string(op) + ": no partial sum of it is defined");
  return q.want[0];
}

}  // namespace

EmbedRows embed_rows(const Attrs& attrs, int64_t table_rows) {
  EmbedRows r{attr_int(attrs, "first_row", 0), attr_int(attrs, "vocab", 0)};
  if (r.vocab <= 0) r.vocab = table_rows;
  return r;
}

Result<SplitAnswer> split_elementwise(const SplitQuery& q) {
  ARCH_TRY(Part want, one_part(q, "elementwise"));
  const Shape& out = q.out[0].shape;
  SplitAnswer a{{}, q.attrs};
  for (size_t i = 0; i < q.in.size(); ++i) {
    const Shape& s = q.in[i].shape;
    const int at = want.axis - int(out.size() - s.size());
    if (!q.present[i] || at < 0 || (s[size_t(at)].concrete() && s[size_t(at)].n == 1 && out[size_t(want.axis)] != s[size_t(at)]))
      a.inputs.push_back(Part::whole());
    else
      a.inputs.push_back({at, want.ranges});
  }
  return a;
}

Result<SplitAnswer> split_all_but_last(const SplitQuery& q) {
  for (const Part& w : q.want)
    if (w.axis < 0 || w.axis + 1 >= int(q.out[0].shape.size()))
      return error("it mixes its last axis, which the part would cut");
  for (const Part& w : q.want)
    if (w != q.want[0]) return error("its outputs are wanted in different parts");
  SplitAnswer a{{q.want[0]}, q.attrs};
  for (size_t i = 1; i < q.in.size(); ++i) a.inputs.push_back(Part::whole());
  return a;
}

Result<SplitAnswer> split_like_input0(const SplitQuery& q) {
  ARCH_TRY(Part want, one_part(q, "op"));
  if (want.axis + 1 >= int(q.out[0].shape.size())) return error("it mixes its last axis, which the part would cut");
  SplitAnswer a{{want}, q.attrs};
  for (size_t i = 1; i < q.in.size(); ++i) a.inputs.push_back(Part::whole());
  return a;
}

Result<Part> grouped_heads(const Part& heads, int64_t group, const char* op) {
  Part kv{heads.axis, {}};
  std::vector<int64_t> q_heads, kv_heads;
  for (const auto& [b, e] : heads.ranges) {
    for (int64_t h = b; h < e; ++h) q_heads.push_back(h);
    const int64_t kb = b / group, ke = (e + group - 1) / group;
    if (!kv.ranges.empty() && kb < kv.ranges.back().second) {
      if (kb != kv.ranges.back().second - 1) return error(std::string(op) + ": heads out of order");
      kv.ranges.back().second = std::max(kv.ranges.back().second, ke);
    } else {
      kv.ranges.push_back({kb, ke});
    }
  }
  for (const auto& [b, e] : kv.ranges)
    for (int64_t h = b; h < e; ++h) kv_heads.push_back(h);
  if (kv_heads.empty() || q_heads.size() % kv_heads.size())
    return error(std::string(op) + ": " + std::to_string(q_heads.size()) + " heads over " +
                 std::to_string(kv_heads.size()) + " shared heads do not group evenly");
  const size_t local_group = q_heads.size() / kv_heads.size();
  for (size_t i = 0; i < q_heads.size(); ++i)
    if (kv_heads[i / local_group] != q_heads[i] / group)
      return error(std::string(op) + ": the heads held read their shared heads in another pattern");
  return kv;
}

}  // namespace arch
