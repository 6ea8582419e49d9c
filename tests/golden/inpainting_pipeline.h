// The sd15_pipeline golden's folder with its UNet made an inpainting one
// (in_channels 9), for tests of what runs on such a UNet: no golden of
// diffusers' own has one.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "importer/checkpoint/checkpoint.h"
#include "tests/engine/runtime/golden_variant.h"

namespace arch::testing {

// The sd15 pipeline folder with its UNet made an inpainting one (in_channels
// 9: conv_in's weights for the latents the golden's, for the mask and the
// masked image's latents `extra`), named StableDiffusionInpaintPipeline as
// such checkpoints are; the other components the golden's own.
struct InpaintingPipeline {
  std::filesystem::path dir;
  std::unique_ptr<GoldenVariant> unet;
  explicit InpaintingPipeline(const std::function<float(int64_t)>& extra) {
    const std::string golden = golden_dir("sd15_pipeline");
    auto ckpt = load_checkpoint(golden + "/unet");
    EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
    const Tensor w4 = to_f32(ckpt->tensors.at("conv_in.weight"));  // [16, 4, 3, 3]
    const int64_t out = w4.dim(0), taps = w4.dim(2) * w4.dim(3);
    Tensor w9 = Tensor::zeros(DType::F32, {out, 9, w4.dim(2), w4.dim(3)});
    for (int64_t o = 0; o < out; ++o)
      for (int64_t c = 0; c < 9; ++c)
        for (int64_t k = 0; k < taps; ++k)
          w9.f32()[(o * 9 + c) * taps + k] = c < 4 ? w4.f32()[(o * 4 + c) * taps + k] : extra((o * 9 + c) * taps + k);
    unet = std::make_unique<GoldenVariant>("sd15_pipeline/unet", "inpainting_unet", nlohmann::json{{"in_channels", 9}},
                                                    std::map<std::string, Tensor>{{"conv_in.weight", w9}});
    dir = std::filesystem::temp_directory_path() / ("inpainting_pipeline_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const char* part : {"scheduler", "text_encoder", "vae"}) std::filesystem::create_symlink(golden + "/" + part, dir / part);
    // As an inpainting checkpoint names its pipeline.
    nlohmann::json index = nlohmann::json::parse(std::ifstream(golden + "/model_index.json"));
    index["_class_name"] = "StableDiffusionInpaintPipeline";
    std::ofstream(dir / "model_index.json") << index.dump(2);
    std::filesystem::create_symlink(unet->dir, dir / "unet");
  }
  ~InpaintingPipeline() { std::filesystem::remove_all(dir); }
};

}  // namespace arch::testing
