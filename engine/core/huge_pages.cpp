#include "engine/core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace arch {

void advise_huge_pages(void* p, size_t bytes) {
  if (!p || bytes < kHugeBlock) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) / kHugePage * kHugePage;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) / kHugePage * kHugePage;
#ifdef MADV_HUGEPAGE
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
}

void* allocate_buffer(size_t bytes) {
  if (bytes < kHugeBlock) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  advise_huge_pages(p, rounded);
  return p;
}

}  // namespace arch
