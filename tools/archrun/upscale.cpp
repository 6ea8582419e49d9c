// archrun upscale: a PNG (or JPEG, BMP, GIF) made larger by a
// super-resolution model (engine/runtime/upscale.h), tile by tile with
// progress on stderr; the output PNG written whole or not at all.
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/core/output_file.h"
#include "engine/runtime/upscale.h"
#include "importer/image/image.h"
#include "importer/image/image_write.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_upscale(const UpscaleArgs& a) {
  if (a.out.empty()) return fail(error("give the PNG to write as -o OUT.png"));
  if (Status st = OutputFile::check(a.out); !st.ok()) return fail(st.error());
  auto rgb = load_image(a.image);
  if (!rgb.ok()) return fail(rgb.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  Tensor pixels = *rgb;
  for (int64_t i = 0; i < pixels.numel(); ++i) pixels.f32()[i] /= 255.0f;  // [0, 1], as the image processor rescales
  UpscaleOptions opt;
  opt.tile = a.tile;
  opt.overlap = a.overlap;
  const auto start = std::chrono::steady_clock::now();
  opt.progress = [&](int64_t done, int64_t total) {
    if (total > 1 && !a.json) std::fprintf(stderr, "\rarchrun upscale: tile %lld/%lld", (long long)done, (long long)total);
    if (total > 1 && !a.json && done == total) std::fprintf(stderr, "\n");
  };
  auto big = upscale_image(**m, pixels, opt);
  if (!big.ok()) return fail(error(a.image + ": " + big.error().message));
  if (Status st = write_png(a.out, *big); !st.ok()) return fail(st.error());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t H = rgb->dim(1), W = rgb->dim(2), oH = big->dim(1), oW = big->dim(2);
  if (a.json) {
    std::printf("%s\n", nlohmann::json{{"input", {{"height", H}, {"width", W}}},
                                       {"output", {{"height", oH}, {"width", oW}, {"path", a.out}}},
                                       {"scale", upscale_factor(**m)}, {"seconds", seconds}}
                            .dump()
                            .c_str());
  } else {
    std::fprintf(stderr, "archrun upscale: %lld x %lld -> %lld x %lld in %.2f s, %s\n", (long long)W, (long long)H,
                 (long long)oW, (long long)oH, seconds, OutputFile::shown(a.out).c_str());
  }
  return 0;
}

}  // namespace arch::cli
