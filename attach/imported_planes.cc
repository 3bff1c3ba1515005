#include "attach/imported_planes.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace strata::attach {
namespace {

size_t RoundToPages(uint64_t bytes) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return static_cast<size_t>((bytes + page - 1) / page * page);
}

// An inaccessible, unbacked range at `at` (or anywhere when null).
void* ReserveRange(void* at, size_t bytes) {
  const int fixed = at != nullptr ? MAP_FIXED : 0;
  return ::mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);
}

}  // namespace

Result<std::unique_ptr<ImportedPlanes>> ImportedPlanes::Reserve(const CacheGeometry& geometry) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  std::unique_ptr<ImportedPlanes> p(new ImportedPlanes(geometry));
  std::vector<std::vector<uint8_t*>> page_bases;
  std::vector<uint8_t*> row_bases;
  auto reserve = [](uint64_t bytes) -> Result<Range> {
    const size_t rounded = RoundToPages(bytes);
    void* at = ReserveRange(nullptr, rounded);
    if (at == MAP_FAILED) return Status::FromErrno(errno, "reserving plane address space");
    return Range{static_cast<uint8_t*>(at), rounded};
  };
  for (const RankGeometry& g : geometry.ranks) {
    std::vector<Range>& ranges = p->page_ranges_.emplace_back();
    std::vector<uint8_t*>& bases = page_bases.emplace_back();
    for (const PlaneSpec& plane : g.page_planes) {
      STRATA_ASSIGN_OR_RETURN(Range r, reserve(plane.unit_bytes * g.page_count));
      ranges.push_back(r);
      bases.push_back(r.base);
    }
    STRATA_ASSIGN_OR_RETURN(Range r, reserve(g.row.unit_bytes * g.row_count));
    p->row_ranges_.push_back(r);
    row_bases.push_back(r.base);
  }
  p->SetBases(std::move(page_bases), std::move(row_bases));
  return p;
}

ImportedPlanes::~ImportedPlanes() {
  for (auto& rank : page_ranges_) {
    for (Range& r : rank) ::munmap(r.base, r.bytes);
  }
  for (Range& r : row_ranges_) ::munmap(r.base, r.bytes);
}

ImportedPlanes::Range& ImportedPlanes::RangeOf(const PlaneFd& fd) {
  return fd.page_plane ? page_ranges_[fd.rank][*fd.page_plane] : row_ranges_[fd.rank];
}

Status ImportedPlanes::Import(std::span<const PlaneFd> fds) {
  if (imported_) return Status::FailedPrecondition("planes already imported");
  const CacheGeometry& g = geometry();
  size_t planes = 0;
  for (const RankGeometry& r : g.ranks) planes += r.page_planes.size() + 1;
  if (fds.size() != planes) {
    return Status::InvalidArgument(std::to_string(fds.size()) + " plane fds for " +
                                   std::to_string(planes) + " planes");
  }
  imported_ = true;  // Release below undoes a partial import
  for (const PlaneFd& fd : fds) {
    const RankGeometry& rank = g.ranks[fd.rank];
    const uint64_t bytes = fd.page_plane
                               ? rank.page_planes[*fd.page_plane].unit_bytes * rank.page_count
                               : rank.row.unit_bytes * rank.row_count;
    const std::string name = fd.page_plane ? rank.page_planes[*fd.page_plane].name : rank.row.name;
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) {
      Release();
      return Status::FromErrno(errno, "plane " + name + ": fstat");
    }
    if (static_cast<uint64_t>(st.st_size) < bytes) {
      Release();
      return Status::InvalidArgument("plane " + name + " of rank " + std::to_string(fd.rank) +
                                     ": shared memory of " + std::to_string(st.st_size) +
                                     " bytes, the geometry needs " + std::to_string(bytes));
    }
    Range& range = RangeOf(fd);
    // Only the plane's own bytes are mapped; the rest of the range stays
    // reserved. Populated at attach, so copies never take a page fault per
    // 4 KiB of the runtime's memory (they ran at a seventh of the in-process
    // rate, `strata bench attach`).
    void* at = ::mmap(range.base, RoundToPages(bytes), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd.fd, 0);
    if (at == MAP_FAILED) {
      const int err = errno;
      Release();
      return Status::FromErrno(err, "plane " + name + ": mmap");
    }
  }
  return Status::Ok();
}

void ImportedPlanes::Release() {
  if (!imported_) return;
  for (auto& rank : page_ranges_) {
    for (Range& r : rank) (void)ReserveRange(r.base, r.bytes);
  }
  for (Range& r : row_ranges_) (void)ReserveRange(r.base, r.bytes);
  imported_ = false;
}

Status ImportedPlanes::CheckAccessible() const {
  if (imported_) return Status::Ok();
  return Status::FailedPrecondition("no runtime is attached: its planes are not mapped");
}

}  // namespace strata::attach
