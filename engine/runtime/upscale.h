// Super-resolution of a whole image through a model that maps pixel_values
// [C, h, w] in [0, 1] to a `reconstruction` [C, h·s, w·s] (Swin2SR): cut
// into overlapping tiles so that memory stays bounded whatever the image's
// size, each tile mirrored out (reflect) to whole windows as the model pads
// itself, run, cropped back, and the tiles' own parts (the overlap split
// down the middle) put together.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/core/tensor.h"
#include "engine/runtime/model.h"

namespace arch {

struct UpscaleOptions {
  int64_t tile = 256;     // input pixels per tile side (the whole image when it fits)
  int64_t overlap = 16;   // input pixels two neighbouring tiles share
  // After each tile: tiles done, tiles in all.
  std::function<void(int64_t done, int64_t total)> progress;
};

// The model's scale (config upscale) and the multiple its input needs
// (config window, else window_size; 1 where it has neither).
int64_t upscale_factor(const Model& m);
int64_t upscale_multiple(const Model& m);

// rgb: F32 [C, H, W] in [0, 1]. Errors name the fault (no reconstruction
// output, a tile's run, a tile smaller than the overlap).
Result<Tensor> upscale_image(const Model& m, const Tensor& rgb, const UpscaleOptions& opt = {});

}  // namespace arch
