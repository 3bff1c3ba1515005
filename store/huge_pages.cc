#include "store/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

#include "store/record_layout.h"

namespace strata {

void* AllocateHugePages(size_t bytes) {
  const size_t rounded = AlignUp(bytes, kHugePageBytes);
  void* block = std::aligned_alloc(kHugePageBytes, rounded);
  if (block == nullptr) throw std::bad_alloc();
  // Advice only: without THP the block keeps ordinary pages.
  (void)madvise(block, rounded, MADV_HUGEPAGE);
  return block;
}

void FreeHugePages(void* block) noexcept { std::free(block); }

}  // namespace strata
