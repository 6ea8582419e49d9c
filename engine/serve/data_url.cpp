#include "engine/serve/data_url.h"

#include <openssl/evp.h>

namespace arch::serve {

Result<std::string> decode_data_url(std::string_view url, size_t max_bytes) {
  if (url.substr(0, 5) != "data:")
    return error("only data: URLs are taken (data:image/png;base64,...): this server fetches nothing");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return error("a data: URL without a ',' before its data");
  const std::string_view meta = url.substr(5, comma - 5), data = url.substr(comma + 1);
  if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64") return error("a data: URL whose data is not base64 (;base64,)");
  if (data.empty() || data.size() % 4 != 0) return error("the data: URL's base64 is empty or not a whole number of 4-character groups");
  if (data.size() / 4 * 3 > max_bytes + 2)
    return error("the image is past " + std::to_string(max_bytes) + " bytes");
  std::string out(data.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(data.data()),
                                int(data.size()));
  if (n < 0) return error("the data: URL's data is not base64");
  size_t pad = 0;  // EVP_DecodeBlock counts the bytes '=' stands for
  for (size_t k = data.size(); k > 0 && data[k - 1] == '=' && pad < 2; --k) ++pad;
  out.resize(size_t(n) - pad);
  if (out.empty()) return error("the data: URL holds no bytes");
  return out;
}

}  // namespace arch::serve
