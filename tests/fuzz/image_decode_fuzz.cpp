// Image decoding (PNG, JPEG, BMP, GIF) from any bytes.
#include "importer/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)arch::decode_image(data, size, "fuzz-image");
  return 0;
}
