#include "engine/runtime/upscale.h"

#include <algorithm>

#include "engine/core/limits.h"
#include "engine/runtime/forward.h"

namespace arch {

int64_t upscale_factor(const Model& m) { return m.config_int("upscale", 0); }

int64_t upscale_multiple(const Model& m) {
  return std::max<int64_t>(m.config_int("window", m.config_int("window_size", 1)), 1);
}

namespace {

// Index i of an axis of n, mirrored at both ends as torch's reflect pad is
// (the edge not repeated), repeatedly for pads longer than the axis.
int64_t mirrored(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// rgb[:, y0 : y0 + h, x0 : x0 + w], mirrored out to H x W.
Tensor tile_of(const Tensor& rgb, int64_t y0, int64_t x0, int64_t h, int64_t w, int64_t H, int64_t W) {
  const int64_t C = rgb.dim(0), iH = rgb.dim(1), iW = rgb.dim(2);
  Tensor t = Tensor::zeros(DType::F32, {C, H, W});
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        t.f32()[(c * H + y) * W + x] = rgb.f32()[(c * iH + y0 + mirrored(y, h)) * iW + x0 + mirrored(x, w)];
  return t;
}

// Tile starts along an axis of n: every `step`, the last flush with the end.
std::vector<int64_t> starts(int64_t n, int64_t tile, int64_t step) {
  std::vector<int64_t> s;
  if (n <= tile) return {0};
  for (int64_t at = 0; at + tile < n; at += step) s.push_back(at);
  s.push_back(n - tile);
  return s;
}

}  // namespace

Result<Tensor> upscale_image(const Model& m, const Tensor& rgb, const UpscaleOptions& opt) {
  if (!m.producer_of("reconstruction")) return error("the model makes no reconstruction: it is not a super-resolution model");
  const int64_t s = upscale_factor(m), multiple = upscale_multiple(m);
  if (s < 1) return error("the model's config has no upscale factor (upscale)");
  if (rgb.shape.size() != 3 || rgb.numel() == 0) return error("the image must be [C, H, W], got " + dims_str(rgb.shape));
  if (opt.tile < 2 * opt.overlap + multiple || opt.overlap < 0)
    return error("a tile of " + std::to_string(opt.tile) + " pixels leaves no room beside an overlap of " +
                 std::to_string(opt.overlap) + " (and a window of " + std::to_string(multiple) + ")");
  const int64_t C = rgb.dim(0), H = rgb.dim(1), W = rgb.dim(2);
  // The output is held whole (as floats, then as the PNG's bytes): bounded as
  // an image to decode is, before any tile runs.
  ARCH_TRY_STATUS(check_limit("image_pixels", saturating_product({H, s, W, s}),
                              "an upscaled image of " + std::to_string(H) + "x" + std::to_string(W) + " times " + std::to_string(s),
                              "its pixels"));
  const std::vector<int64_t> ys = starts(H, opt.tile, opt.tile - opt.overlap), xs = starts(W, opt.tile, opt.tile - opt.overlap);
  Tensor out = Tensor::zeros(DType::F32, {C, H * s, W * s});
  const int64_t total = int64_t(ys.size() * xs.size());
  int64_t done = 0;
  for (size_t ty = 0; ty < ys.size(); ++ty)
    for (size_t tx = 0; tx < xs.size(); ++tx) {
      const int64_t y0 = ys[ty], x0 = xs[tx], h = std::min(opt.tile, H - y0), w = std::min(opt.tile, W - x0);
      const int64_t ph = (h + multiple - 1) / multiple * multiple, pw = (w + multiple - 1) / multiple * multiple;
      auto r = forward(m, {{"pixel_values", tile_of(rgb, y0, x0, h, w, ph, pw)}}, {"reconstruction"});
      if (!r.ok()) return error("tile at (" + std::to_string(y0) + ", " + std::to_string(x0) + "): " + r.error().message);
      const Tensor& t = r->at("reconstruction");
      if (t.shape != Dims{C, ph * s, pw * s})
        return error("the reconstruction of a " + std::to_string(ph) + " x " + std::to_string(pw) + " tile is " + dims_str(t.shape) +
                     ", not [" + std::to_string(C) + ", " + std::to_string(ph * s) + ", " + std::to_string(pw * s) + "]");
      // This tile's own part: from the middle of the overlap with the tile before, to the middle of the one after.
      const int64_t own_y0 = ty == 0 ? y0 : (y0 + ys[ty - 1] + opt.tile) / 2, own_y1 = ty + 1 == ys.size() ? H : (ys[ty + 1] + y0 + h) / 2;
      const int64_t own_x0 = tx == 0 ? x0 : (x0 + xs[tx - 1] + opt.tile) / 2, own_x1 = tx + 1 == xs.size() ? W : (xs[tx + 1] + x0 + w) / 2;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = own_y0 * s; y < own_y1 * s; ++y)
          for (int64_t x = own_x0 * s; x < own_x1 * s; ++x)
            out.f32()[(c * H * s + y) * W * s + x] = t.f32()[(c * ph * s + y - y0 * s) * pw * s + x - x0 * s];
      if (opt.progress) opt.progress(++done, total);
    }
  return out;
}

}  // namespace arch
