#include "engine/core/tensor.h"

#include "engine/core/fp8.h"
#include "engine/core/huge_pages.h"
#include "engine/core/quant.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace arch {

namespace {

// Registered at startup (a backend's op table), read on every nbytes():
// set once per id, never changed, so readers need no lock.
std::array<WeightLayout, 256> g_layouts;
std::mutex g_layouts_mutex;

}  // namespace

bool register_layout(uint8_t id, const WeightLayout& layout) {
  std::lock_guard<std::mutex> lock(g_layouts_mutex);
  if (id == 0) return false;
  // Registered already: never written again, since nbytes() reads it
  // without the lock.
  if (g_layouts[id].nbytes) return g_layouts[id].name == layout.name;
  g_layouts[id] = layout;
  return true;
}

const WeightLayout* weight_layout(uint8_t id) { return id && g_layouts[id].nbytes ? &g_layouts[id] : nullptr; }

std::string stored_name(const Tensor& t) {
  if (const WeightLayout* l = weight_layout(t.layout)) return l->name;
  return std::string(dtype_name(t.dtype));
}

int64_t numel(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string dims_str(const Dims& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string element_str(const Dims& shape, int64_t flat) {
  Dims at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return dims_str(at);
}

Tensor Tensor::zeros(DType dtype, Dims shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t bytes = std::max<size_t>(t.nbytes(), 1);
  // calloc: a large block comes straight from the system already zero, so
  // pages nobody writes are never made resident (a placeholder a kernel
  // replaces costs no memory); a big one on huge pages (engine/core/huge_pages.h).
  // 64-byte alignment suits every SIMD width the fast kernels use.
  void* raw = std::calloc(bytes + 64, 1);
  if (!raw) throw std::bad_alloc();
  advise_huge_pages(raw, bytes + 64);
  t.data = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + 63) / 64 * 64);
  t.owner = std::shared_ptr<const void>(raw, [](const void* q) { std::free(const_cast<void*>(q)); });
  return t;
}

Tensor Tensor::view(DType dtype, Dims shape, void* data, std::shared_ptr<const void> owner) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = data;
  t.owner = std::move(owner);
  return t;
}

Tensor Tensor::reshaped(Dims new_shape) const {
  Tensor t = *this;
  t.shape = std::move(new_shape);
  return t;
}

void release_pages(const Tensor& t) {
  if (!t.mapped || !t.data) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  uintptr_t begin = (reinterpret_cast<uintptr_t>(t.data) + page - 1) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(t.data) + t.nbytes()) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

size_t row_bytes(DType dtype, int64_t k) {
  return is_block_quantized(dtype) ? quant_row_bytes(dtype, k) : size_t(k) * dtype_size(dtype);
}

size_t Tensor::nbytes() const {
  if (layout) {
    const WeightLayout* l = weight_layout(layout);
    if (!l) throw std::runtime_error("a tensor of an unregistered layout " + std::to_string(int(layout)));
    return l->nbytes(*this);
  }
  if (shape.empty() || !is_block_quantized(dtype)) return size_t(numel()) * dtype_size(dtype);
  return size_t(numel() / shape.back()) * row_bytes(dtype, shape.back());
}

namespace {

void widen_row(DType dtype, const void* row, int64_t k, float* out) {
  if (is_block_quantized(dtype)) return dequantize_row(dtype, static_cast<const uint8_t*>(row), k, out);
  const auto* src16 = static_cast<const uint16_t*>(row);
  switch (dtype) {
    case DType::F32: std::memcpy(out, row, size_t(k) * 4); break;
    case DType::BF16: for (int64_t i = 0; i < k; ++i) out[i] = bf16_to_f32(src16[i]); break;
    case DType::F16: for (int64_t i = 0; i < k; ++i) out[i] = f16_to_f32(src16[i]); break;
    case DType::F8_E4M3: {  // the codes alone: block scales are the importer's (fp8_weights.h)
      const auto* s = static_cast<const uint8_t*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = f8e4m3_to_f32(s[i]);
      break;
    }
    case DType::F8_E5M2: {
      const auto* s = static_cast<const uint8_t*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = f8e5m2_to_f32(s[i]);
      break;
    }
    case DType::F64: {
      const auto* s = static_cast<const double*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = float(s[i]);
      break;
    }
    case DType::I32: {
      const auto* s = static_cast<const int32_t*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = float(s[i]);
      break;
    }
    case DType::I64: {
      const auto* s = static_cast<const int64_t*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = float(s[i]);
      break;
    }
    default: throw std::runtime_error("to_f32: unsupported dtype");
  }
}

}  // namespace

void widen_row(const Tensor& t, int64_t r, float* out) {
  const int64_t k = t.shape.empty() ? 1 : t.shape.back();
  const auto* data = static_cast<const uint8_t*>(t.data);
  if (t.layout) {
    const WeightLayout* l = weight_layout(t.layout);
    if (!l) throw std::runtime_error("a tensor of an unregistered layout " + std::to_string(int(t.layout)));
    return l->widen_row(t, r, out);
  }
  widen_row(t.dtype, data + size_t(r) * row_bytes(t.dtype, k), k, out);
}

Tensor to_f32(const Tensor& t) {
  Tensor out = Tensor::zeros(DType::F32, t.shape);
  const int64_t k = t.shape.empty() ? 1 : t.shape.back();
  for (int64_t r = 0; k > 0 && r < t.numel() / k; ++r) widen_row(t, r, out.f32() + r * k);
  return out;
}

Tensor convert_to(const Tensor& t, DType to) {
  if (t.dtype == to && !t.layout) return t;
  Tensor f = to_f32(t);
  if (to == DType::F32) return f;
  Tensor out = Tensor::zeros(to, t.shape);
  if (is_quantized(to)) {
    const int64_t k = t.shape.back();
    const size_t row_bytes = quant_row_bytes(to, k);
    for (int64_t r = 0; r < t.numel() / k; ++r)
      quantize_row(to, f.f32() + r * k, k, static_cast<uint8_t*>(out.data) + size_t(r) * row_bytes);
    return out;
  }
  if (to != DType::BF16 && to != DType::F16) throw std::runtime_error("convert_to: not a float type");
  auto* d = static_cast<uint16_t*>(out.data);
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = to == DType::BF16 ? f32_to_bf16(f.f32()[i]) : f32_to_f16(f.f32()[i]);
  return out;
}

}  // namespace arch
