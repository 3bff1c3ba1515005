// MemfdRegion: host memory a runtime can share with `strata rank` — a memfd
// of a given size, mapped MAP_SHARED into this process. Strata maps the same
// pages (attach_client.h passes the fd), so what either side writes the
// other reads, with no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "attach/client/unique_fd.h"
#include "store/base/status.h"

namespace strata::attach {

class MemfdRegion {
 public:
  // `bytes` > 0; the memfd is sized to whole pages and zero-filled.
  static Result<std::unique_ptr<MemfdRegion>> Create(const std::string& name, uint64_t bytes);
  ~MemfdRegion();
  MemfdRegion(const MemfdRegion&) = delete;
  MemfdRegion& operator=(const MemfdRegion&) = delete;

  int fd() const { return fd_.get(); }
  uint8_t* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }

 private:
  MemfdRegion(UniqueFd fd, uint8_t* data, uint64_t bytes)
      : fd_(std::move(fd)), data_(data), bytes_(bytes) {}

  UniqueFd fd_;
  uint8_t* data_;
  uint64_t bytes_;
};

}  // namespace strata::attach
