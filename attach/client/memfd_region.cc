#include "attach/client/memfd_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace strata::attach {

Result<std::unique_ptr<MemfdRegion>> MemfdRegion::Create(const std::string& name, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("memfd " + name + ": zero bytes");
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t rounded = (bytes + page - 1) / page * page;
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(errno, "memfd_create " + name);
  if (::ftruncate(fd.get(), static_cast<off_t>(rounded)) != 0) {
    return Status::FromErrno(errno, "sizing memfd " + name);
  }
  void* at = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (at == MAP_FAILED) return Status::FromErrno(errno, "mapping memfd " + name);
  return std::unique_ptr<MemfdRegion>(
      new MemfdRegion(std::move(fd), static_cast<uint8_t*>(at), rounded));
}

MemfdRegion::~MemfdRegion() { ::munmap(data_, bytes_); }

}  // namespace strata::attach
