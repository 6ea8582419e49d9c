#include "importer/image/image_write.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/core/output_file.h"

#include <stb/stb_image_write.h>  // its implementation is in Debian's libstb

namespace arch {

Status write_png(const std::string& path, const Tensor& image) {
  if (image.dtype != DType::F32 || image.shape.size() != 3 || image.shape[0] != 3)
    return error(path + ": an image to write must be F32 [3, H, W], got " + dims_str(image.shape));
  const int64_t H = image.shape[1], W = image.shape[2];
  if (H < 1 || W < 1 || H > 65535 || W > 65535) return error(path + ": an image of " + dims_str(image.shape) + " cannot be written");
  std::vector<unsigned char> rgb(size_t(H * W * 3));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < H * W; ++i) {
      const float x = std::clamp(image.f32()[c * H * W + i], 0.0f, 1.0f);
      rgb[size_t(i * 3 + c)] = (unsigned char)std::lround(x * 255.0f);
    }
  // Whole or absent (engine/core/output_file.h): stb writes into the unnamed file.
  ARCH_TRY(OutputFile out, OutputFile::create(path));
  auto put = [](void* stream, void* data, int size) { std::fwrite(data, 1, size_t(size), static_cast<std::FILE*>(stream)); };
  if (!stbi_write_png_to_func(put, out.stream(), int(W), int(H), 3, rgb.data(), int(W * 3)) || std::ferror(out.stream()))
    return error(path + ": cannot write the PNG");
  return out.commit();
}

}  // namespace arch
