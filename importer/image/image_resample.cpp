#include "importer/image/image_resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace arch {

namespace {

// Pillow's resampling (libImaging/Resample.c), on 8-bit values.

struct Filter {
  double (*fn)(double);
  double support;
};

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * M_PI;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));  // float constants, as PIL has them
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;  // Keys' cubic convolution with a = -0.5
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

double lanczos_filter(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0; }

std::optional<Filter> filter_named(const std::string& name) {
  if (name == "bilinear") return Filter{bilinear_filter, 1.0};
  if (name == "bicubic") return Filter{bicubic_filter, 2.0};
  if (name == "lanczos") return Filter{lanczos_filter, 3.0};
  if (name == "box") return Filter{box_filter, 0.5};
  if (name == "hamming") return Filter{hamming_filter, 1.0};
  return std::nullopt;
}

// Weights are fixed point with 22 fractional bits, so that a sum of 8-bit
// samples times weights fits 32 bits with headroom, and results round the
// way PIL's 8-bit resampling does (we match its numbers, see the tests).
constexpr int kWeightFracBits = 22;

uint8_t fixed_to_u8(int64_t acc) {
  int64_t v = acc >> kWeightFracBits;  // arithmetic shift: floor
  return uint8_t(std::clamp<int64_t>(v, 0, 255));
}

// The input samples each output sample reads: a window [start, start +
// length) and its fixed-point weights.
struct Taps {
  int width = 0;                   // weights stored per output sample
  std::vector<int> start, length;  // by output index
  std::vector<int32_t> weight;     // out_size * width
};

Taps taps_for(int in_size, int out_size, const Filter& filter) {
  // Downscaling widens the filter by the scale (antialiasing); upscaling
  // keeps it as it is.
  const double step = double(in_size) / out_size;
  const double widen = std::max(step, 1.0);
  const double reach = filter.support * widen;
  const double narrow = 1.0 / widen;  // multiplied, not divided: the same rounding as PIL
  Taps t;
  t.width = 2 * int(std::ceil(reach)) + 1;
  t.start.assign(out_size, 0);
  t.length.assign(out_size, 0);
  t.weight.assign(size_t(out_size) * t.width, 0);
  std::vector<double> raw(t.width);
  for (int o = 0; o < out_size; ++o) {
    const double mid = (o + 0.5) * step;  // the output sample's centre, in input coordinates
    // Window ends rounded half up, then truncated toward zero as C casts do.
    const int lo = std::max(0, int(mid - reach + 0.5));
    const int hi = std::min(in_size, int(mid + reach + 0.5));
    double total = 0.0;
    for (int i = lo; i < hi; ++i) total += raw[i - lo] = filter.fn((i - mid + 0.5) * narrow);
    for (int i = lo; i < hi; ++i) {
      const double w = total != 0.0 ? raw[i - lo] / total : raw[i - lo];
      const double scaled = w * double(1 << kWeightFracBits);
      t.weight[size_t(o) * t.width + (i - lo)] = int32_t(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
    }
    t.start[o] = lo;
    t.length[o] = hi - lo;
  }
  return t;
}

// Resamples an 8-bit plane [rows, cols] along one axis to `out_size`.
std::vector<uint8_t> resample_pass(const std::vector<uint8_t>& in, int rows, int cols, int out_size,
                                   bool horizontal, const Filter& filter) {
  const Taps taps = taps_for(horizontal ? cols : rows, out_size, filter);
  const int out_rows = horizontal ? rows : out_size;
  const int out_cols = horizontal ? out_size : cols;
  auto sample = [&](int r, int c) { return int64_t(in[size_t(r) * cols + c]); };
  std::vector<uint8_t> out(size_t(out_rows) * out_cols);
  for (int r = 0; r < out_rows; ++r)
    for (int c = 0; c < out_cols; ++c) {
      const int o = horizontal ? c : r;
      const int32_t* w = &taps.weight[size_t(o) * taps.width];
      int64_t acc = int64_t(1) << (kWeightFracBits - 1);  // rounds the final shift to nearest
      for (int j = 0; j < taps.length[o]; ++j) {
        const int i = taps.start[o] + j;
        acc += (horizontal ? sample(r, i) : sample(i, c)) * w[j];
      }
      out[size_t(r) * out_cols + c] = fixed_to_u8(acc);
    }
  return out;
}

// Pillow's NEAREST resize (an affine scale): source index
// floor((x + 0.5) * in / out), the position stepped by repeated addition.
std::vector<int> nearest_index(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  std::vector<int> index(out_size);
  double pos = scale * 0.5;
  for (int x = 0; x < out_size; ++x) {
    int i = pos < 0.0 ? -1 : int(pos);
    index[x] = std::clamp(i, 0, in_size - 1);
    pos += scale;
  }
  return index;
}

std::vector<uint8_t> to_u8_plane(const float* src, int64_t n) {
  std::vector<uint8_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    float v = src[i];
    // NaN becomes 0; otherwise round half up, clamp to 0..255.
    out[i] = !(v > 0.0f) ? 0 : v >= 255.0f ? 255 : uint8_t(std::floor(v + 0.5f));
  }
  return out;
}

}  // namespace

void check_image(const Tensor& t, const char* what) {
  if (t.dtype != DType::F32 || t.shape.size() != 3 || t.shape[0] < 1 || t.shape[1] < 1 || t.shape[2] < 1)
    throw std::invalid_argument(std::string(what) + ": expected an F32 [C, H, W] image, got shape " +
                                dims_str(t.shape));
}

bool known_resample_filter(const std::string& resample) {
  return resample == "nearest" || filter_named(resample).has_value();
}

Tensor resize_image(const Tensor& image, int height, int width, const std::string& resample) {
  check_image(image, "resize_image");
  if (height < 1 || width < 1) throw std::invalid_argument("resize_image: target size must be positive");
  const std::optional<Filter> filter = filter_named(resample);
  if (!filter && resample != "nearest") throw std::invalid_argument("resize_image: unknown filter '" + resample + "'");
  const int channels = int(image.shape[0]), in_h = int(image.shape[1]), in_w = int(image.shape[2]);
  Tensor out = Tensor::zeros(DType::F32, {channels, height, width});
  std::vector<int> near_x, near_y;
  if (!filter) {
    near_x = nearest_index(in_w, width);
    near_y = nearest_index(in_h, height);
  }
  for (int c = 0; c < channels; ++c) {
    std::vector<uint8_t> plane = to_u8_plane(image.f32() + int64_t(c) * in_h * in_w, int64_t(in_h) * in_w);
    std::vector<uint8_t> result;
    if (!filter) {
      result.resize(size_t(height) * width);
      for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) result[size_t(y) * width + x] = plane[size_t(near_y[y]) * in_w + near_x[x]];
    } else {
      // Pillow skips a pass whose size does not change, and runs the
      // horizontal pass first, rounding to 8 bits in between.
      int cols = in_w;
      if (width != in_w) {
        plane = resample_pass(plane, in_h, in_w, width, /*horizontal=*/true, *filter);
        cols = width;
      }
      if (height != in_h) plane = resample_pass(plane, in_h, cols, height, /*horizontal=*/false, *filter);
      result = std::move(plane);
    }
    float* dst = out.f32() + int64_t(c) * height * width;
    for (size_t i = 0; i < result.size(); ++i) dst[i] = result[i];
  }
  return out;
}

Tensor center_crop_image(const Tensor& image, int height, int width) {
  check_image(image, "center_crop_image");
  if (height < 1 || width < 1) throw std::invalid_argument("center_crop_image: crop size must be positive");
  const int64_t channels = image.shape[0], in_h = image.shape[1], in_w = image.shape[2];
  // Python's (orig - crop) // 2 floors; with padding, output (i, j) is input
  // (i + top, j + left) wherever that lies inside the image, else zero.
  auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  const int64_t top = floor_half(in_h - height), left = floor_half(in_w - width);
  Tensor out = Tensor::zeros(DType::F32, {channels, height, width});
  for (int64_t c = 0; c < channels; ++c) {
    const float* src = image.f32() + c * in_h * in_w;
    float* dst = out.f32() + c * height * width;
    for (int64_t i = 0; i < height; ++i) {
      const int64_t y = i + top;
      if (y < 0 || y >= in_h) continue;
      for (int64_t j = 0; j < width; ++j) {
        const int64_t x = j + left;
        if (x >= 0 && x < in_w) dst[i * width + j] = src[y * in_w + x];
      }
    }
  }
  return out;
}

}  // namespace arch
