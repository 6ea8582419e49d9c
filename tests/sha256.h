// SHA-256 of bytes, as hex (OpenSSL's libcrypto): goldens give digests of
// what a reader must produce bit for bit.
#pragma once

#include <openssl/evp.h>

#include <cstdio>
#include <string>

namespace arch::testing {

inline std::string sha256_hex(const void* data, size_t n) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data, n, digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

}  // namespace arch::testing
