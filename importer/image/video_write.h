// Writing a video: an F32 [3, F, H, W] tensor in [0, 1] (each value rounded
// as an image's, round(x * 255) held to [0, 1] first) as an animated GIF
// (giflib: each frame its own 256-colour palette by median cut, looping
// forever, 1 / fps seconds a frame, rounded to GIF's hundredths), as WebM
// (VP9 through FFmpeg's libavcodec and libvpx, muxed by libavformat: BT.601
// limited-range 4:2:0, constant quality), or as one PNG per frame.
#pragma once

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

// A video to write is F32 [3, F, H, W] with a frame at least; the fault names `path`.
Status check_video(const std::string& path, const Tensor& video);

// Frame f of a video [3, F, H, W], as an image [3, H, W].
Result<Tensor> video_frame(const Tensor& video, int64_t f);

Status write_gif(const std::string& path, const Tensor& video, double fps);

// WebM: H and W even (4:2:0); `crf` VP9's constant quality, 0 (best) to 63.
Status write_webm(const std::string& path, const Tensor& video, double fps, int crf = 24);

// The names write_png_frames gives: `path` less its ".png", then "_" and
// the frame's number, zero-padded to the count's digits (at least 3), then
// ".png" (out.png: out_000.png, out_001.png, ...).
std::vector<std::string> frame_paths(const std::string& path, int64_t frames);
Status write_png_frames(const std::string& path, const Tensor& video);

}  // namespace arch
