// HugePageAllocator: a standard allocator for large arrays read at random
// (the prefix index's records and hash heads). Blocks of 2 MiB and more are
// 2 MiB-aligned and advised for transparent huge pages, so a lookup touching a
// few hundred scattered records takes few TLB misses. The advice may be
// ignored (THP off): the memory is then ordinary pages. Throws std::bad_alloc
// like std::allocator.
#pragma once

#include <cstddef>
#include <new>

namespace strata {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Blocks of at least kHugePageBytes; `bytes` need not be a multiple of it.
void* AllocateHugePages(size_t bytes);
void FreeHugePages(void* block) noexcept;

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kHugePageBytes) return static_cast<T*>(AllocateHugePages(bytes));
    return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kHugePageBytes) {
      FreeHugePages(p);
    } else {
      ::operator delete (p, std::align_val_t{alignof(T)});
    }
  }

  template <typename U>
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator<U>&) {
    return true;
  }
};

}  // namespace strata
