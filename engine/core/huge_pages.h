// Big buffers on transparent huge pages. A kernel with THP in "madvise"
// mode (Debian's default) gives a 134 MB activation 4 KiB pages unless
// asked, so its first touch takes 33k page faults, each clearing a page:
// the SD VAE's 512x512 decode spent a third of its time in the kernel that
// way. Asked, it takes 64 faults of 2 MiB. (The weight arena's blocks,
// engine/core/weight_arena.h, are advised the same way.)
#pragma once

#include <cstddef>

namespace arch {

inline constexpr size_t kHugePage = size_t(2) << 20;
// Blocks from this size on are worth huge pages (a 3 MB block takes two,
// 4 MB: whisper-base's cross-attention keys and values, 12 blocks of 3 MB
// read every decode step, on 4 KiB pages decoded 213-228 tok/s against
// 224-239 on 2 MiB ones, alternated on Zen 5).
inline constexpr size_t kHugeBlock = size_t(2) << 20;

// Advise the 2 MiB-aligned part of [p, p + bytes) as huge pages (nothing
// for a small block, or where the system has no THP).
void advise_huge_pages(void* p, size_t bytes);

// `bytes` of uninitialised memory, 64-byte aligned; a big block 2 MiB
// aligned and advised. Freed with std::free.
void* allocate_buffer(size_t bytes);

}  // namespace arch
