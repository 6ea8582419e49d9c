// An image processor's settings as transformers' would have them: the
// checkpoint's preprocessor_config.json, or the model type's processor
// defaults.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "importer/image/image_preprocess.h"

namespace arch {

// Settings for the checkpoint in `dir`: dir/preprocessor_config.json when
// present, else defaults for model_config's model_type:
//   vit                      ViTImageProcessor: resize to image_size x image_size
//                            (224 without it), bilinear, mean = std = 0.5
//   clip_vision_model, clip  CLIPImageProcessor: shortest edge image_size,
//                            bicubic, center crop image_size x image_size,
//                            OpenAI CLIP mean/std
//   llava                    CLIPImageProcessor at vision_config's image_size
//   siglip_vision_model,     SiglipImageProcessor: resize to image_size x
//   siglip, gemma3           image_size (vision_config's), bicubic (Gemma 3's
//                            own processor: bilinear), mean = std = 0.5
//   resnet, convnext         ConvNextImageProcessor as microsoft/resnet-50
//                            and facebook/convnext-tiny-224 configure it:
//                            shortest edge 224, crop_pct 0.875, bicubic,
//                            ImageNet mean/std
// and an error for any other model_type.
//
// In preprocessor_config.json missing keys take the defaults of the
// processor class named by image_processor_type (or the older
// feature_extractor_type) - ViT*, CLIP*, ConvNext*, Siglip*, Gemma3* - or, without one, of the
// model_type's class above; for another class, a key without a universal
// default (size, resample, image_mean, image_std when used) must be present.
// A plain number for size means shortest_edge for CLIP-, ConvNext-, BiT- and
// MobileNet-style classes and height = width for the others, as
// transformers' get_size_dict does per class. Errors name the file and the
// key: wrong types, sizes outside 1..16384, an unknown resample code,
// size {longest_edge} (not supported), mean/std not of 1 or 3 numbers, a
// zero std, a crop_pct with a center crop of its own (PoolFormer's scheme,
// not supported).
Result<ImagePreprocess> read_preprocessor_config(const std::string& dir, const nlohmann::json& model_config);

}  // namespace arch
