#include "coordinator/pool/arena.h"

#include <linux/memfd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>

#include "store/base/assert.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotAlignBytes = 4096;

Result<std::byte*> MapShared(int fd, uint64_t bytes, const std::string& what) {
  void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) return Status::FromErrno(errno, "mapping " + what);
  return static_cast<std::byte*>(at);
}

// A sized memfd of huge pages, or an invalid fd when the kernel has none to give.
wire::UniqueFd TryHugeMemfd(const std::string& name, uint64_t bytes) {
  wire::UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_HUGETLB | MFD_HUGE_2MB));
  if (!fd.valid()) return fd;
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return wire::UniqueFd();
  return fd;
}

}  // namespace

Result<std::unique_ptr<Arena>> Arena::Create(const std::string& name, uint64_t slot_bytes,
                                             uint32_t slot_count, HugePages huge) {
  if (slot_bytes == 0 || slot_bytes % kSlotAlignBytes != 0 || slot_count == 0) {
    return Status::InvalidArgument("arena " + name + ": slots of " + std::to_string(slot_bytes) +
                                   " bytes x " + std::to_string(slot_count));
  }
  const uint64_t bytes = slot_bytes * slot_count;
  if (huge == HugePages::kIfAvailable && slot_bytes % kHugePageBytes == 0) {
    wire::UniqueFd fd = TryHugeMemfd(name, bytes);
    if (fd.valid()) {
      // Huge pages can be promised by ftruncate and still fail to map.
      Result<std::byte*> base = MapShared(fd.get(), bytes, "arena " + name);
      if (base.ok()) {
        return std::unique_ptr<Arena>(
            new Arena(std::move(fd), *base, slot_bytes, slot_count, PageKind::kHuge));
      }
    }
  }
  wire::UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(errno, "memfd_create " + name);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return Status::FromErrno(errno, "sizing arena " + name);
  }
  STRATA_ASSIGN_OR_RETURN(std::byte * base, MapShared(fd.get(), bytes, "arena " + name));
  return std::unique_ptr<Arena>(
      new Arena(std::move(fd), base, slot_bytes, slot_count, PageKind::kOrdinary));
}

Result<std::unique_ptr<Arena>> Arena::Map(wire::UniqueFd fd, uint64_t slot_bytes,
                                          uint32_t slot_count) {
  if (slot_bytes == 0 || slot_count == 0) return Status::InvalidArgument("empty arena geometry");
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(slot_bytes, uint64_t{slot_count}, &bytes) ||
      bytes > (uint64_t{1} << 50)) {
    return Status::InvalidArgument("arena geometry of " + std::to_string(slot_count) +
                                   " slots of " + std::to_string(slot_bytes) + " bytes overflows");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat of the arena fd");
  if (static_cast<uint64_t>(st.st_size) < bytes) {
    return Status::InvalidArgument("arena fd holds " + std::to_string(st.st_size) +
                                   " bytes, geometry says " + std::to_string(bytes));
  }
  STRATA_ASSIGN_OR_RETURN(std::byte * base, MapShared(fd.get(), bytes, "the pool arena"));
  return std::unique_ptr<Arena>(
      new Arena(std::move(fd), base, slot_bytes, slot_count, PageKind::kOrdinary));
}

Arena::~Arena() { ::munmap(base_, bytes()); }

std::span<std::byte> Arena::Slot(SlotId slot) const {
  STRATA_ASSERT(slot.value < slot_count_, "arena slot out of range");
  return {base_ + slot_bytes_ * slot.value, slot_bytes_};
}

}  // namespace strata::pool
