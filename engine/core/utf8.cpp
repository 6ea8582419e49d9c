#include "engine/core/utf8.h"

namespace arch {

size_t valid_utf8_sequence(std::string_view s, size_t i, size_t& good) {
  auto at = [&](size_t k) -> int { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : -1; };
  int b0 = at(0);
  good = 1;
  if (b0 < 0x80) return 1;
  int n, lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < n; ++k) {
    int b = at(k);
    int l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0;
    good = size_t(k) + 1;
  }
  return size_t(n);
}

bool is_valid_utf8(std::string_view s) {
  size_t good;
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = valid_utf8_sequence(s, i, good);
    if (!n) return false;
    i += n;
  }
  return true;
}

}  // namespace arch
