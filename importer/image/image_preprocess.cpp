#include "importer/image/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "importer/image/image_resample.h"

namespace arch {

namespace {

constexpr int kMaxSide = kMaxImageSide;

// transformers' get_resize_output_image_size(image, size, default_to_square=False).
std::pair<int, int> shortest_edge_size(int height, int width, int size) {
  const int64_t short_side = std::min(height, width), long_side = std::max(height, width);
  const int new_long = int(double(int64_t(size) * long_side) / double(short_side));
  return width <= height ? std::pair{new_long, size} : std::pair{size, new_long};
}

}  // namespace

std::string preprocess_problem(const ImagePreprocess& p) {
  auto bad_side = [](int v) { return v < 1 || v > kMaxSide; };
  if (p.do_resize) {
    if (!known_resample_filter(p.resample))
      return "unknown resample filter '" + p.resample + "'";
    if (p.shortest_edge < 0 || p.shortest_edge > kMaxSide)
      return "shortest_edge " + std::to_string(p.shortest_edge) + " is outside 0..16384";
    if (p.shortest_edge == 0 && (bad_side(p.height) || bad_side(p.width)))
      return "resize size " + std::to_string(p.height) + "x" + std::to_string(p.width) + " is outside 1..16384";
    if (p.crop_pct < 0 || !std::isfinite(p.crop_pct)) return "crop_pct must be positive";
    if (p.crop_pct > 0) {
      if (p.shortest_edge == 0) return "crop_pct needs a shortest_edge size";
      const double scaled = p.shortest_edge / p.crop_pct;
      if (p.shortest_edge < 384 && !(scaled >= 1 && scaled <= kMaxSide))
        return "shortest_edge / crop_pct = " + std::to_string(scaled) + " is outside 1..16384";
    }
  }
  if (p.do_center_crop && (bad_side(p.crop_height) || bad_side(p.crop_width)))
    return "crop size " + std::to_string(p.crop_height) + "x" + std::to_string(p.crop_width) + " is outside 1..16384";
  if (p.do_rescale && !(p.rescale_factor > 0 && std::isfinite(p.rescale_factor)))
    return "rescale_factor must be a positive number";
  if (p.do_normalize) {
    if (p.mean.size() != 3 || p.std.size() != 3) return "image_mean and image_std need 3 values each (R, G, B)";
    for (float s : p.std)
      if (s == 0.0f || !std::isfinite(s)) return "image_std must be finite and non-zero";
  }
  return "";
}

Tensor preprocess(const Tensor& rgb, const ImagePreprocess& p) {
  check_image(rgb, "preprocess");
  if (rgb.shape[0] != 3) throw std::invalid_argument("preprocess: expected 3 channels, got " + dims_str(rgb.shape));
  if (std::string problem = preprocess_problem(p); !problem.empty())
    throw std::invalid_argument("preprocess: " + problem);

  Tensor image = rgb;
  if (p.do_resize) {
    const int h = int(image.shape[1]), w = int(image.shape[2]);
    if (p.crop_pct > 0 && p.shortest_edge < 384) {
      // ConvNextImageProcessor.resize: Python's int() truncates.
      const int scaled = int(p.shortest_edge / p.crop_pct);
      auto [rh, rw] = shortest_edge_size(h, w, scaled);
      image = resize_image(image, rh, rw, p.resample);
      image = center_crop_image(image, p.shortest_edge, p.shortest_edge);
    } else if (p.crop_pct > 0) {
      image = resize_image(image, p.shortest_edge, p.shortest_edge, p.resample);
    } else if (p.shortest_edge > 0) {
      auto [rh, rw] = shortest_edge_size(h, w, p.shortest_edge);
      image = resize_image(image, rh, rw, p.resample);
    } else {
      image = resize_image(image, p.height, p.width, p.resample);
    }
  }
  if (p.do_center_crop) image = center_crop_image(image, p.crop_height, p.crop_width);

  // A fresh tensor for the result: `image` may still be the caller's.
  const int64_t plane = image.shape[1] * image.shape[2];
  Tensor out = Tensor::zeros(DType::F32, image.shape);
  const float* src = image.f32();
  float* dst = out.f32();
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < plane; ++i) {
      float v = src[c * plane + i];
      if (p.do_rescale) v = float(double(v) * p.rescale_factor);
      if (p.do_normalize) v = (v - p.mean[c]) / p.std[c];
      dst[c * plane + i] = v;
    }
  }
  return out;
}

}  // namespace arch
