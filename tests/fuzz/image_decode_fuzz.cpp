// Image decoding (PNG, JPEG, BMP, GIF) from any bytes.
#include "engine/core/limits.h"
#include "importer/image/image.h"

// A smaller image_pixels than the default (179M pixels, gigabytes as
// floats): the same checks, within libFuzzer's 2 GB RSS limit, so that an
// allowed large image is not reported as running out of memory.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)arch::set_limit("image_pixels", int64_t(1) << 22);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)arch::decode_image(data, size, "fuzz-image");
  return 0;
}
