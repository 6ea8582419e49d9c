// Pillow's resampling and transformers' center crop, on [C, H, W] images
// (importer/image/image_preprocess.h says how exactly they match).
#pragma once

#include <string>

#include "engine/core/tensor.h"

namespace arch {

// Pillow's Image.resize of an 8-bit image, one channel plane at a time: F32
// [C, H, W] (values rounded and clamped to 0..255 first) -> F32
// [C, height, width] of integers 0..255. `resample` as in ImagePreprocess.
Tensor resize_image(const Tensor& image, int height, int width, const std::string& resample);

// transformers' center_crop: F32 [C, H, W] -> [C, height, width], the crop
// window at ((H - height) // 2, (W - width) // 2) (floor division), zero
// padding where the window leaves the image.
Tensor center_crop_image(const Tensor& image, int height, int width);

// Whether `resample` names a filter resize_image knows.
bool known_resample_filter(const std::string& resample);

// Throws std::invalid_argument unless `t` is an F32 [C, H, W] image with
// every side at least 1 (`what` names the caller).
void check_image(const Tensor& t, const char* what);

}  // namespace arch
