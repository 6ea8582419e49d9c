// Turning a decoded image (load_image's [3, H, W] floats in 0..255) into a
// vision model's pixel_values, the way transformers' image processors do:
// resize, center crop, rescale, normalize, in that order.
//
// The settings come from the checkpoint's preprocessor_config.json when it
// has one, else from defaults chosen by the model config's model_type
// (importer/image/image_processor_config.h); resizing and cropping are
// importer/image/image_resample.h.
//
// Fidelity: the target is transformers' PIL-based ("slow") image processors.
//   - Resize is Pillow's Image.resize on an 8-bit image, reproduced exactly
//     (Pillow 9.x/10.x libImaging/Resample.c): a separable convolution,
//     horizontal pass first, whose kernel support is widened by the
//     downscale factor (this is the antialiasing), with the weights
//     normalised to sum 1, turned into 22-bit fixed point, and each pass
//     rounded and clamped to 0..255. So the input is rounded to integers and
//     clamped to 0..255 first, and the resized image holds integers, as the
//     PIL image between resize and rescale does in transformers. Checked
//     against Pillow 9.4 on random images: identical bytes for every filter.
//   - Center crop follows transformers.image_transforms.center_crop,
//     including its zero padding when the crop is larger than the image.
//   - Rescale multiplies in double and rounds to float, as numpy does
//     (float64 product cast to float32); normalize is (x - mean) / std in
//     float, as numpy does on float32 arrays.
//   So for an image that PIL decodes to the same pixels (PNG, BMP, GIF; see
//   image.h for JPEG) pixel_values should equal the slow processor's. The
//   torchvision-based "fast" processors resize differently and may differ by
//   a level here and there.
#pragma once

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

// The largest image side a setting may ask for.
constexpr int kMaxImageSide = 16384;

struct ImagePreprocess {
  bool do_resize = true;
  // shortest_edge > 0: scale the shorter side to it, the longer one to
  // int(shortest_edge * long / short) (transformers'
  // get_resize_output_image_size with default_to_square=False); otherwise
  // resize to exactly height x width.
  int shortest_edge = 0;
  int height = 224, width = 224;
  // Pillow's filters: "bilinear" (PIL code 2), "bicubic" (3), "lanczos" (1),
  // "box" (4), "hamming" (5), "nearest" (0).
  std::string resample = "bilinear";
  // ConvNextImageProcessor's resize (needs shortest_edge > 0); 0 = none.
  // With shortest_edge < 384: scale the shorter side to
  // int(shortest_edge / crop_pct), then center crop to
  // shortest_edge x shortest_edge. With shortest_edge >= 384: resize to
  // shortest_edge x shortest_edge, no crop. Only applies when do_resize.
  // (double, as Python computes shortest_edge / crop_pct.)
  double crop_pct = 0;
  bool do_center_crop = false;
  int crop_height = 224, crop_width = 224;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255;  // double, as numpy multiplies in float64
  bool do_normalize = true;
  std::vector<float> mean = {0.5f, 0.5f, 0.5f};  // one per channel
  std::vector<float> std = {0.5f, 0.5f, 0.5f};
};

// A problem with hand-made settings (what read_preprocessor_config checks),
// or "" when they are usable by preprocess().
std::string preprocess_problem(const ImagePreprocess& p);

// F32 [3, H', W'] pixel_values (no batch dimension) from an F32 [3, H, W]
// image with values in 0..255. Preconditions (std::invalid_argument
// otherwise): `rgb` is F32 with shape [3, H, W], H, W >= 1, and
// preprocess_problem(p) is "".
Tensor preprocess(const Tensor& rgb, const ImagePreprocess& p);

}  // namespace arch
