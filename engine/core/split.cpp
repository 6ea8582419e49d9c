#include "engine/core/split.h"

#include <cstring>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"

namespace arch {

std::string part_str(const Part& p) {
  if (p.is_whole()) return "whole";
  std::string s = "axis " + std::to_string(p.axis);
  for (const auto& [b, e] : p.ranges) s += " [" + std::to_string(b) + ", " + std::to_string(e) + ")";
  return s;
}

namespace {

// Elements [b, e) of one stored row of k values, appended at `out`: the
// bytes of whole blocks (ggml's k-quants: each block holds its own
// scales), or the values and then the scales (Q8_0 and Q4_0 keep a row's
// scales after its values; Q4_0's bytes go in groups of 64 values).
Status row_part(DType dt, const uint8_t* row, int64_t k, int64_t b, int64_t e, uint8_t*& out) {
  if (!is_block_quantized(dt)) {
    const size_t es = dtype_size(dt);
    std::memcpy(out, row + size_t(b) * es, size_t(e - b) * es);
    out += size_t(e - b) * es;
    return {};
  }
  if (size_t bb = kquant_block_bytes(dt)) {
    if (b % 256 || e % 256) return error("its rows are in blocks of 256 values");
    std::memcpy(out, row + size_t(b / 256) * bb, size_t((e - b) / 256) * bb);
    out += size_t((e - b) / 256) * bb;
    return {};
  }
  const int64_t group = dt == DType::Q4_0 ? 64 : kQuantBlock;
  if (b % group || e % group) return error("its rows are in groups of " + std::to_string(group) + " values");
  const size_t per = dt == DType::Q4_0 ? 2 : 1;  // values per byte
  std::memcpy(out, row + size_t(b) / per, size_t(e - b) / per);
  out += size_t(e - b) / per;
  const uint8_t* scales = row + quant_scales_offset(dt, k);
  std::memcpy(out, scales + size_t(b / kQuantBlock) * 2, size_t((e - b) / kQuantBlock) * 2);
  out += size_t((e - b) / kQuantBlock) * 2;
  return {};
}

}  // namespace

Result<Tensor> tensor_part(const Tensor& t, const Part& p) {
  if (p.is_whole()) return t;
  if (t.layout) return error("a tensor in a backend's own layout cannot be cut");
  if (p.axis >= int(t.shape.size())) return error("it has no axis " + std::to_string(p.axis));
  const size_t axis = size_t(p.axis);
  for (const auto& [b, e] : p.ranges)
    if (b < 0 || e > t.shape[axis] || b >= e) return error("range [" + std::to_string(b) + ", " + std::to_string(e) +
                                                           ") of axis " + std::to_string(axis) + " is outside it");
  Dims shape = t.shape;
  shape[axis] = p.size();
  const int64_t k = t.shape.back();
  const auto* src = static_cast<const uint8_t*>(t.data);
  if (axis + 1 < t.shape.size()) {
    // Whole rows: [outer, along, inner] with inner a run of whole rows.
    int64_t outer = 1, inner_rows = 1;
    for (size_t d = 0; d < axis; ++d) outer *= t.shape[d];
    for (size_t d = axis + 1; d + 1 < t.shape.size(); ++d) inner_rows *= t.shape[d];
    const size_t inner = size_t(inner_rows) * row_bytes(t.dtype, k);
    if (outer == 1 && p.ranges.size() == 1) {
      Tensor v = Tensor::view(t.dtype, shape, const_cast<uint8_t*>(src) + size_t(p.ranges[0].first) * inner, t.owner);
      v.mapped = t.mapped;
      return v;
    }
    Tensor out = Tensor::zeros(t.dtype, shape);
    auto* dst = static_cast<uint8_t*>(out.data);
    for (int64_t o = 0; o < outer; ++o)
      for (const auto& [b, e] : p.ranges) {
        std::memcpy(dst, src + size_t(o * t.shape[axis] + b) * inner, size_t(e - b) * inner);
        dst += size_t(e - b) * inner;
      }
    release_pages(t);
    return out;
  }
  Tensor out = Tensor::zeros(t.dtype, shape);
  auto* dst = static_cast<uint8_t*>(out.data);
  const size_t rb = row_bytes(t.dtype, k);
  for (int64_t r = 0; r < t.numel() / k; ++r)
    for (const auto& [b, e] : p.ranges)
      if (Status s = row_part(t.dtype, src + size_t(r) * rb, k, b, e, dst); !s.ok())
        return error("its columns [" + std::to_string(b) + ", " + std::to_string(e) + ") cannot be cut: " +
                     s.error().message + " (a split over fewer processes, or by layers, cuts none)");
  release_pages(t);
  return out;
}

}  // namespace arch
