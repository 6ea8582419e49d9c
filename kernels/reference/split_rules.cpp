#include "kernels/reference/split_rules.h"

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

}  // namespace arch
