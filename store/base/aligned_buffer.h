// AlignedBuffer: a zero-filled heap buffer whose address and size are
// multiples of 4 KiB, as O_DIRECT I/O requires. Move-only; frees on
// destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "store/base/assert.h"
#include "store/record/record_layout.h"

namespace strata {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Rounds `bytes` up to 4 KiB. Aborts when memory is exhausted.
  explicit AlignedBuffer(uint64_t bytes) : size_(AlignUp(bytes)) {
    if (size_ == 0) return;
    void* p = std::aligned_alloc(kRecordAlign, size_);
    STRATA_ASSERT(p != nullptr, "out of memory for an aligned buffer");
    std::memset(p, 0, size_);
    data_.reset(static_cast<std::byte*>(p));
  }

  std::byte* data() const { return data_.get(); }
  uint64_t size() const { return size_; }
  std::span<std::byte> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  uint64_t size_ = 0;
};

}  // namespace strata
