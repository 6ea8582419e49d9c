// A tensor: dtype, shape and a pointer into storage that something owns
// (a heap buffer, or a memory-mapped checkpoint kept alive by `owner`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/dtype.h"

namespace arch {

using Dims = std::vector<int64_t>;

int64_t numel(const Dims& shape);
std::string dims_str(const Dims& shape);  // "[12, 64]"
// The row-major element `flat` of `shape` as its index: "[0, 0, 1, 3]".
std::string element_str(const Dims& shape, int64_t flat);

struct Tensor {
  DType dtype = DType::F32;
  Dims shape;
  void* data = nullptr;
  std::shared_ptr<const void> owner;  // keeps `data` alive
  // `data` lies in a read-only file mapping: its pages can be handed back to
  // the system and are read from the file again if touched (release_pages).
  bool mapped = false;
  // 0: rows, as `dtype` stores them. Else a backend's own arrangement of
  // the same values (the cpu kernels' tiles of interleaved rows), which the
  // core knows only through what the backend registered (WeightLayout).
  uint8_t layout = 0;

  int64_t numel() const { return arch::numel(shape); }
  size_t nbytes() const;  // storage, block-quantized rows included
  int64_t dim(int i) const { return shape[i < 0 ? shape.size() + i : i]; }

  float* f32() { return static_cast<float*>(data); }
  const float* f32() const { return static_cast<const float*>(data); }
  int32_t* i32() { return static_cast<int32_t*>(data); }
  const int32_t* i32() const { return static_cast<const int32_t*>(data); }

  // A fresh zero-filled tensor that owns its storage.
  static Tensor zeros(DType dtype, Dims shape);
  // A view of memory owned by someone else.
  static Tensor view(DType dtype, Dims shape, void* data, std::shared_ptr<const void> owner);
  // The same storage under another shape with the same element count.
  Tensor reshaped(Dims new_shape) const;
};

// A backend's arrangement of a stored matrix, as the core needs to know it:
// how many bytes it takes, how to read a row back, how to make it from
// matrices in rows (several of one type and width: their rows one after
// another). A backend registers each of its layouts under an id of its own.
struct WeightLayout {
  std::string name;                                               // "Q8_0x16"
  size_t (*nbytes)(const Tensor& t) = nullptr;
  void (*widen_row)(const Tensor& t, int64_t r, float* out) = nullptr;  // row r as float32
  Tensor (*make)(const std::vector<const Tensor*>& rows) = nullptr;
};
// Fails (false) when `id` is 0 or taken by another layout.
bool register_layout(uint8_t id, const WeightLayout& layout);
const WeightLayout* weight_layout(uint8_t id);  // null for 0 or an id nobody registered
// "Q8_0", or its layout's name ("Q8_0x16").
std::string stored_name(const Tensor& t);

// Drops a mapped tensor's pages from this process's resident memory (they
// come back from the file if read again); does nothing to other tensors.
void release_pages(const Tensor& t);

// A float32 copy of a float tensor stored as F32, F16, BF16 or a
// block-quantized type (the reference path computes in float32 whatever the
// checkpoint stores).
Tensor to_f32(const Tensor& t);
// Bytes a row of k values takes stored as `dtype` (block-quantized rows
// included).
size_t row_bytes(DType dtype, int64_t k);
// Row r (of the last dim) of a float or block-quantized tensor, as float32.
void widen_row(const Tensor& t, int64_t r, float* out);

// A float tensor (F32, F16, BF16 or block-quantized) stored as `to`: F32,
// F16, BF16 (rounded to nearest even) or Q8_0 / Q4_0 (rows quantized; the
// last dim must split into whole blocks, see quantizable). `t` itself when
// it already is.
Tensor convert_to(const Tensor& t, DType to);

}  // namespace arch
