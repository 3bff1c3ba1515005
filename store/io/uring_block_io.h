// The io_uring BlockIo (liburing). liburing.h stays inside uring_block_io.cc.
#pragma once

#include <cstdint>
#include <memory>

#include "store/io/block_io.h"

namespace strata {

// A ring for up to `capacity` outstanding requests, plus an eventfd poll that
// Wake() fires. Destroy it only after every request was reaped.
Result<std::unique_ptr<BlockIo>> OpenUringBlockIo(uint32_t capacity);

}  // namespace strata
