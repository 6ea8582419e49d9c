// The cpu backend's rope and rotary. The frequencies come from the reference's own
// helper (rope_frequencies, every scaling type) and cos / sin from
// rope_cos_sin, so the angles are the reference's to the bit; only the
// rotation is vectorised. cos / sin per position are cached across calls
// (a table per set of frequencies, grown to the largest position seen), as
// evaluating them in double dominates a long prompt's rope otherwise.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/reference/rope.h"
#include "kernels/reference/shape_rules.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rope_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One position's H heads of x [H, D] into y: the first d features rotated
// by c, s (half = d / 2 of each), the rest copied. rotate_half pairs
// (j, j + half); interleaved pairs (2j, 2j + 1), which reads ce / se: c and
// s expanded to d features (ce[2j] = ce[2j+1] = c[j], se[2j] = -s[j],
// se[2j+1] = s[j]) so y = x * ce + swap_pairs(x) * se.
void RotatePosition(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t H, size_t D, size_t d,
                    const float* HWY_RESTRICT c, const float* HWY_RESTRICT s, bool interleaved,
                    const float* HWY_RESTRICT ce, const float* HWY_RESTRICT se) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const size_t half = d / 2;
  for (size_t h = 0; h < H; ++h, x += D, y += D) {
    if (!interleaved) {
      size_t j = 0;
      for (; j + N <= half; j += N) {
        // (y_a, y_b) = (x_a cos - x_b sin, x_b cos + x_a sin)
        const auto xa = hn::LoadU(df, x + j), xb = hn::LoadU(df, x + j + half);
        const auto vc = hn::LoadU(df, c + j), vs = hn::LoadU(df, s + j);
        hn::StoreU(hn::Sub(hn::Mul(xa, vc), hn::Mul(xb, vs)), df, y + j);
        hn::StoreU(hn::Add(hn::Mul(xb, vc), hn::Mul(xa, vs)), df, y + j + half);
      }
      for (; j < half; ++j) {
        y[j] = x[j] * c[j] - x[j + half] * s[j];
        y[j + half] = x[j + half] * c[j] + x[j] * s[j];
      }
    } else {
      size_t i = 0;
#if HWY_TARGET != HWY_SCALAR  // Reverse2 needs pairs of lanes
      for (; i + N <= d; i += N) {
        const auto v = hn::LoadU(df, x + i);
        hn::StoreU(hn::Add(hn::Mul(v, hn::LoadU(df, ce + i)), hn::Mul(hn::Reverse2(df, v), hn::LoadU(df, se + i))),
                   df, y + i);
      }
#endif
      for (; i < d; i += 2) {
        const size_t j = i / 2;
        y[i] = x[i] * c[j] - x[i + 1] * s[j];
        y[i + 1] = x[i + 1] * c[j] + x[i] * s[j];
      }
    }
    if (D > d) std::memcpy(y + d, x + d, (D - d) * sizeof(float));  // past rope_dim: unchanged
  }
}

// The rotary op's H heads of one row x [H, D]: interleaved pairs by the
// row's own cos and sin per feature (c, and se = sin with its even
// features negated): y = x c + swap_pairs(x) se; the tail as the reference
// words it, from s.
void RotaryRow(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t H, size_t D, const float* HWY_RESTRICT c,
               const float* HWY_RESTRICT s, const float* HWY_RESTRICT se) {
  for (size_t h = 0; h < H; ++h, x += D, y += D) {
    size_t i = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::ScalableTag<float> df;
    const size_t N = hn::Lanes(df);
    for (; i + N <= D; i += N) {
      const auto v = hn::LoadU(df, x + i);
      hn::StoreU(hn::Add(hn::Mul(v, hn::LoadU(df, c + i)), hn::Mul(hn::Reverse2(df, v), hn::LoadU(df, se + i))), df, y + i);
    }
#endif
    for (; i < D; i += 2) {
      y[i] = x[i] * c[i] + (-x[i + 1]) * s[i];
      y[i + 1] = x[i + 1] * c[i + 1] + x[i] * s[i + 1];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(RotatePosition);
HWY_EXPORT(RotaryRow);

namespace {

// cos / sin of positions [0, positions) for one set of frequencies, half
// values per position each. Immutable once built: a call holds its
// shared_ptr while another call may swap in a longer table.
struct CosSinTable {
  std::vector<float> inv_freq;
  float attention_factor = 1.0f;
  int64_t positions = 0;
  std::vector<float> cos, sin;  // [positions, half]
};

// Positions beyond this are computed per call rather than cached (a table
// costs 4 * rope_dim bytes per position).
constexpr int64_t kMaxCachedPositions = 1 << 16;
// Distinct frequency sets kept ("dynamic" scaling makes a new one per
// length past max_position_embeddings); the oldest is dropped beyond this.
constexpr size_t kMaxTables = 8;

bool same_freqs(const CosSinTable& t, const RopeFrequencies& f) {
  return t.inv_freq.size() == f.inv_freq.size() &&
         std::memcmp(&t.attention_factor, &f.attention_factor, sizeof(float)) == 0 &&
         std::memcmp(t.inv_freq.data(), f.inv_freq.data(), f.inv_freq.size() * sizeof(float)) == 0;
}

void fill_cos_sin(const RopeFrequencies& f, int32_t pos, float* c, float* s) {
  for (size_t j = 0; j < f.inv_freq.size(); ++j) rope_cos_sin(pos, f.inv_freq[j], &c[j], &s[j], f.attention_factor);
}

// The table for f covering at least [0, want) (want <= kMaxCachedPositions),
// built or grown (doubling) under the lock, for a call rotating `rows`
// positions. Frequencies not seen before whose table would cost far more
// than the call itself (a decode step at a late position; "dynamic"
// scaling, whose frequencies change with every length) give null, the
// caller computing its own positions: only a stub is kept, which the next
// call with the same frequencies fills.
std::shared_ptr<const CosSinTable> cos_sin_table(const RopeFrequencies& f, int64_t want, int64_t rows) {
  static std::mutex lock;
  static std::vector<std::shared_ptr<const CosSinTable>> tables;  // most recently used last
  std::lock_guard<std::mutex> guard(lock);
  auto it = std::find_if(tables.begin(), tables.end(), [&](auto& t) { return same_freqs(*t, f); });
  std::shared_ptr<const CosSinTable> found;
  if (it != tables.end()) {
    found = *it;
    tables.erase(it);
  }
  if (!found && want > 4 * rows + 64) {
    auto stub = std::make_shared<CosSinTable>();
    stub->inv_freq = f.inv_freq;
    stub->attention_factor = f.attention_factor;
    tables.push_back(std::move(stub));
    if (tables.size() > kMaxTables) tables.erase(tables.begin());
    return nullptr;
  }
  if (!found || found->positions < want) {
    auto grown = std::make_shared<CosSinTable>();
    grown->inv_freq = f.inv_freq;
    grown->attention_factor = f.attention_factor;
    const int64_t half = int64_t(f.inv_freq.size());
    const int64_t have = found ? found->positions : 0;
    grown->positions = std::min(kMaxCachedPositions, std::max({want, 2 * have, int64_t(64)}));
    grown->cos.resize(size_t(grown->positions * half));
    grown->sin.resize(size_t(grown->positions * half));
    if (found) {
      std::copy(found->cos.begin(), found->cos.end(), grown->cos.begin());
      std::copy(found->sin.begin(), found->sin.end(), grown->sin.begin());
    }
    float* c = grown->cos.data();
    float* s = grown->sin.data();
#pragma omp parallel for schedule(static) if ((grown->positions - have) * half >= 4096)
    for (int64_t p = have; p < grown->positions; ++p) fill_cos_sin(f, int32_t(p), c + p * half, s + p * half);
    found = std::move(grown);
  }
  tables.push_back(found);
  if (tables.size() > kMaxTables) tables.erase(tables.begin());
  return found;
}

Status rope_cpu(KernelContext& ctx, const Kernel& reference) {
  // The fast case: F32 x [S, H, D], I32 positions [S], an F32 output like x,
  // a valid rope_dim and rope_scaling. Anything else is the reference's (and
  // its error messages).
  if (ctx.inputs.size() != 2 || ctx.outputs.size() != 1) return reference(ctx);
  const Tensor& X = ctx.inputs[0];
  const Tensor& P = ctx.inputs[1];
  if (!X.data || !P.data || X.dtype != DType::F32 || P.dtype != DType::I32 || X.shape.size() != 3 ||
      P.shape.size() != 1 || P.dim(0) != X.dim(0) || ctx.outputs[0].dtype != DType::F32 ||
      ctx.outputs[0].shape != X.shape)
    return reference(ctx);
  const int64_t S = X.dim(0), H = X.dim(1), D = X.dim(2);
  const int64_t rope_dim = attr_int(ctx.attrs, "rope_dim", 0);
  const int64_t d = rope_dim == 0 ? D : rope_dim;
  if (d <= 0 || d % 2 != 0 || d > D) return reference(ctx);
  const int64_t half = d / 2;
  if (S == 0 || H == 0) return {};
  const double theta = attr_float(ctx.attrs, "theta", 10000.0);
  const int64_t max_pos = attr_int(ctx.attrs, "max_position_embeddings", 0);
  const int64_t original_max_pos = attr_int(ctx.attrs, "original_max_position_embeddings", 0);
  const Attrs& scaling = attr_json(ctx.attrs, "scaling");
  const bool interleaved = attr_bool(ctx.attrs, "interleaved", false);
  const int32_t* pos = P.i32();
  const float* x = X.f32();
  float* y = ctx.outputs[0].f32();
  // Rows [first, end) rotated by the frequencies of their sequence, whose
  // length so far is max(position) + 1 as the reference takes it ("dynamic"
  // and "longrope" scaling read it).
  auto rotate = [&](int64_t first, int64_t end) -> bool {
    int64_t seq_len = 0, min_pos = 0;
    for (int64_t t = first; t < end; ++t) {
      seq_len = std::max(seq_len, int64_t(pos[t]) + 1);
      min_pos = std::min(min_pos, int64_t(pos[t]));
    }
    // The frequencies, kept from this thread's last call when they would
    // come out the same: every layer of every step asks for the same ones,
    // and working them out allocated.
    struct LastFrequencies {
      double theta = 0;
      int64_t d = 0, max_pos = 0, original_max_pos = 0, key = 0;
      Attrs scaling;
      std::optional<RopeFrequencies> freqs;
    };
    thread_local LastFrequencies last;
    const int64_t key = rope_frequencies_key(scaling, max_pos, original_max_pos, seq_len);
    if (!last.freqs || last.theta != theta || last.d != d || last.max_pos != max_pos ||
        last.original_max_pos != original_max_pos || last.key != key || last.scaling != scaling) {
      auto computed = rope_frequencies(theta, d, scaling, max_pos, seq_len, original_max_pos);
      if (!computed.ok()) return false;
      last = LastFrequencies{theta, d, max_pos, original_max_pos, key, scaling, std::move(*computed)};
    }
    const RopeFrequencies* freqs = &*last.freqs;
    std::shared_ptr<const CosSinTable> table;
    if (min_pos >= 0) table = cos_sin_table(*freqs, std::min(seq_len, kMaxCachedPositions), end - first);
    // Per thread: cos / sin of an uncached position, and the interleaved
    // expansion (kept: not allocated per call).
    auto position = [&](int64_t i) {
      const int64_t t = first + i;
      thread_local std::vector<float> cs, expanded;
      if (cs.size() < size_t(2 * half)) cs.resize(size_t(2 * half));
      if (expanded.size() < size_t(2 * d)) expanded.resize(size_t(2 * d));
      const float *c, *s;
      if (table && pos[t] < table->positions) {
        c = table->cos.data() + pos[t] * half;
        s = table->sin.data() + pos[t] * half;
      } else {
        fill_cos_sin(*freqs, pos[t], cs.data(), cs.data() + half);
        c = cs.data();
        s = cs.data() + half;
      }
      float* ce = expanded.data();
      float* se = expanded.data() + d;
      if (interleaved)
        for (int64_t j = 0; j < half; ++j) {
          ce[2 * j] = ce[2 * j + 1] = c[j];
          se[2 * j] = -s[j];
          se[2 * j + 1] = s[j];
        }
      HWY_DYNAMIC_DISPATCH(RotatePosition)(x + t * H * D, y + t * H * D, size_t(H), size_t(D), size_t(d), c, s,
                                           interleaved, ce, se);
    };
    const int64_t rows = end - first;
    parallel_for(rows, rows * H * D >= (1 << 17), position);  // below, one thread beats waking the pool
    return true;
  };
  // Several sequences' rows whose frequencies follow each one's length:
  // piece by piece; otherwise all rows at once.
  if (ctx.sequences && rope_frequencies_read_seq_len(scaling)) {
    for (const auto& piece : ctx.sequences->pieces)
      if (piece.row < 0 || piece.row + piece.rows > S || !rotate(piece.row, piece.row + piece.rows))
        return reference(ctx);
    return {};
  }
  return rotate(0, S) ? Status{} : reference(ctx);
}

}  // namespace

// rotary (cos and sin given per row and feature: Flux's and Wan's axes'
// tables): rows on the threads, each vectorised; what the reference would
// refuse goes to it.
Status rotary_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() != 3 || ctx.outputs.size() != 1) return reference(ctx);
  const Tensor &X = ctx.inputs[0], &C = ctx.inputs[1], &S = ctx.inputs[2];
  for (const Tensor* t : {&X, &C, &S})
    if (!t->data || t->dtype != DType::F32) return reference(ctx);
  if (X.shape.size() != 3 || X.dim(2) % 2) return reference(ctx);
  const int64_t n = X.dim(0), H = X.dim(1), D = X.dim(2);
  if (C.numel() != n * D || S.numel() != n * D || ctx.outputs[0].shape != X.shape || ctx.outputs[0].dtype != DType::F32)
    return reference(ctx);
  const float *x = X.f32(), *c = C.f32(), *s = S.f32();
  float* y = ctx.outputs[0].f32();
  parallel_for(n, n * H * D >= (1 << 17), [&](int64_t r) {
    thread_local std::vector<float> se;
    se.resize(size_t(D));
    for (int64_t k = 0; k < D; ++k) se[size_t(k)] = k % 2 ? s[r * D + k] : -s[r * D + k];
    HWY_DYNAMIC_DISPATCH(RotaryRow)(x + r * H * D, y + r * H * D, size_t(H), size_t(D), c + r * D, s + r * D, se.data());
  });
  return {};
}

void register_cpu_rope(OpTable& t) {
  const Kernel* ref = t.kernel("rope", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for rope");
  t.add_kernel("rope", "cpu", [reference = *ref](KernelContext& ctx) { return rope_cpu(ctx, reference); });
  const Kernel* rot = t.kernel("rotary", "reference");
  if (!rot) throw std::logic_error("cpu kernels: no reference kernel for rotary");
  t.add_kernel("rotary", "cpu", [reference = *rot](KernelContext& ctx) { return rotary_cpu(ctx, reference); }, nullptr, nullptr,
               /*fills=*/true);
}

}  // namespace arch
#endif  // HWY_ONCE
