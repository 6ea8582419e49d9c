#include "importer/image/video_write.h"

#include <gif_lib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/core/output_file.h"
#include "importer/image/image_write.h"

namespace arch {

Status check_video(const std::string& path, const Tensor& video) {
  if (video.dtype != DType::F32 || video.shape.size() != 4 || video.shape[0] != 3 || video.shape[1] < 1)
    return error(path + ": a video to write must be F32 [3, F, H, W], got " + dims_str(video.shape));
  return {};
}

namespace {

// A channel's value as a byte, as write_png makes it.
GifByteType byte_of(float x) { return GifByteType(std::lround(std::clamp(x, 0.0f, 1.0f) * 255.0f)); }

}  // namespace

Result<Tensor> video_frame(const Tensor& video, int64_t f) {
  ARCH_TRY_STATUS(check_video("the video", video));
  const int64_t F = video.dim(1), plane = video.dim(2) * video.dim(3);
  if (f < 0 || f >= F) return error("the video has " + std::to_string(F) + " frames, not a frame " + std::to_string(f));
  Tensor out = Tensor::zeros(DType::F32, {3, video.dim(2), video.dim(3)});
  for (int64_t c = 0; c < 3; ++c)
    std::memcpy(out.f32() + c * plane, video.f32() + (c * F + f) * plane, size_t(plane) * sizeof(float));
  return out;
}

Status write_gif(const std::string& path, const Tensor& video, double fps) {
  ARCH_TRY_STATUS(check_video(path, video));
  const int64_t F = video.dim(1), H = video.dim(2), W = video.dim(3), plane = H * W;
  if (H > 65535 || W > 65535) return error(path + ": a GIF's sides are at most 65535 pixels, not " + dims_str(video.shape));
  if (!(fps > 0 && fps <= 100)) return error(path + ": frames a second must be above 0 and at most 100 (GIF counts hundredths), not " + std::to_string(fps));
  ARCH_TRY(OutputFile out, OutputFile::create(path));
  int err = 0;
  auto put = [](GifFileType* g, const GifByteType* data, int n) -> int {
    return int(std::fwrite(data, 1, size_t(n), static_cast<std::FILE*>(g->UserData)));
  };
  GifFileType* gif = EGifOpen(out.stream(), put, &err);
  if (!gif) return error(path + ": cannot start the GIF: " + GifErrorString(err));
  auto fault = [&](const char* what) {
    const std::string why = GifErrorString(gif->Error);
    EGifCloseFile(gif, &err);
    return error(path + ": cannot write the GIF's " + what + ": " + why);
  };
  EGifSetGifVersion(gif, true);
  if (EGifPutScreenDesc(gif, int(W), int(H), 8, 0, nullptr) == GIF_ERROR) return fault("screen");
  // Netscape's extension: loop forever.
  const GifByteType app[] = {'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0'}, loop[] = {1, 0, 0};
  if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR || EGifPutExtensionBlock(gif, sizeof app, app) == GIF_ERROR ||
      EGifPutExtensionBlock(gif, sizeof loop, loop) == GIF_ERROR || EGifPutExtensionTrailer(gif) == GIF_ERROR)
    return fault("loop extension");
  const int delay = std::max(1, int(std::lround(100.0 / fps)));
  const size_t n_pixels = static_cast<size_t>(plane);
  std::vector<GifByteType> r(n_pixels), g(n_pixels), b(n_pixels), index(n_pixels);
  for (int64_t f = 0; f < F; ++f) {
    for (int64_t i = 0; i < plane; ++i) {
      r[size_t(i)] = byte_of(video.f32()[(0 * F + f) * plane + i]);
      g[size_t(i)] = byte_of(video.f32()[(1 * F + f) * plane + i]);
      b[size_t(i)] = byte_of(video.f32()[(2 * F + f) * plane + i]);
    }
    int colours = 256;
    std::unique_ptr<ColorMapObject, void (*)(ColorMapObject*)> map(GifMakeMapObject(256, nullptr), GifFreeMapObject);
    if (!map) return fault("palette");
    if (GifQuantizeBuffer(unsigned(W), unsigned(H), &colours, r.data(), g.data(), b.data(), index.data(), map->Colors) == GIF_ERROR)
      return fault("palette");
    GraphicsControlBlock gcb{};
    gcb.DisposalMode = DISPOSE_DO_NOT;
    gcb.DelayTime = delay;
    gcb.TransparentColor = NO_TRANSPARENT_COLOR;
    GifByteType ext[4];
    const size_t n = EGifGCBToExtension(&gcb, ext);
    if (EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, int(n), ext) == GIF_ERROR) return fault("frame timing");
    if (EGifPutImageDesc(gif, 0, 0, int(W), int(H), false, map.get()) == GIF_ERROR) return fault("frame");
    for (int64_t y = 0; y < H; ++y)
      if (EGifPutLine(gif, index.data() + y * W, int(W)) == GIF_ERROR) return fault("pixels");
  }
  if (EGifCloseFile(gif, &err) == GIF_ERROR) return error(path + ": cannot finish the GIF: " + GifErrorString(err));
  if (std::ferror(out.stream())) return error(path + ": cannot write the GIF");
  return out.commit();
}

std::vector<std::string> frame_paths(const std::string& path, int64_t frames) {
  const std::string stem = path.ends_with(".png") ? path.substr(0, path.size() - 4) : path;
  const int digits = std::max<int>(3, int(std::to_string(std::max<int64_t>(frames - 1, 0)).size()));
  std::vector<std::string> out;
  for (int64_t f = 0; f < frames; ++f) {
    std::string n = std::to_string(f);
    out.push_back(stem + "_" + std::string(size_t(std::max<int>(0, digits - int(n.size()))), '0') + n + ".png");
  }
  return out;
}

Status write_png_frames(const std::string& path, const Tensor& video) {
  ARCH_TRY_STATUS(check_video(path, video));
  const auto paths = frame_paths(path, video.dim(1));
  for (size_t f = 0; f < paths.size(); ++f) {
    ARCH_TRY(Tensor frame, video_frame(video, int64_t(f)));
    ARCH_TRY_STATUS(write_png(paths[f], frame));
  }
  return {};
}

}  // namespace arch
