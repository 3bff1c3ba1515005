#include "cuda/imported_device_planes.h"

#include <string>

namespace strata {
namespace {

uint64_t RoundUp(uint64_t bytes, uint64_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

std::string PlaneName(const RankGeometry& g, std::optional<uint32_t> page_plane) {
  return page_plane ? "page plane " + g.page_planes[*page_plane].name : "row plane " + g.row.name;
}

}  // namespace

Result<std::unique_ptr<ImportedDevicePlanes>> ImportedDevicePlanes::Reserve(
    std::shared_ptr<const CudaDriver> driver, const CacheGeometry& geometry,
    std::vector<int> device_ordinals) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  if (device_ordinals.size() != geometry.ranks.size()) {
    return Status::InvalidArgument("imported device planes need one device ordinal per rank");
  }
  if (!driver->has_shareable_handles()) {
    return Status::Unavailable(
        "this CUDA driver cannot import shared device memory (no VMM handle export/import)");
  }
  std::unique_ptr<ImportedDevicePlanes> p(new ImportedDevicePlanes(driver, geometry));
  p->ordinals_ = std::move(device_ordinals);
  for (size_t r = 0; r < geometry.ranks.size(); ++r) {
    const RankGeometry& g = geometry.ranks[r];
    Rank& rank = p->ranks_.emplace_back();
    STRATA_ASSIGN_OR_RETURN(rank.context, PrimaryContext::Retain(driver, p->ordinals_[r]));
    ContextGuard guard(*driver, rank.context->get());
    STRATA_RETURN_IF_ERROR(guard.status());
    STRATA_ASSIGN_OR_RETURN(uint64_t granularity, driver->DeviceGranularity(p->ordinals_[r]));
    auto reserve = [&](uint64_t plane_bytes) -> Result<Range> {
      Range range;
      range.bytes = RoundUp(plane_bytes, granularity);
      STRATA_ASSIGN_OR_RETURN(range.base, driver->ReserveAddress(range.bytes, granularity));
      return range;
    };
    for (const PlaneSpec& plane : g.page_planes) {
      STRATA_ASSIGN_OR_RETURN(Range range, reserve(plane.unit_bytes * g.page_count));
      rank.page_planes.push_back(range);
    }
    STRATA_ASSIGN_OR_RETURN(rank.row, reserve(g.row.unit_bytes * g.row_count));
  }
  return p;
}

ImportedDevicePlanes::~ImportedDevicePlanes() {
  Release();
  for (Rank& rank : ranks_) {
    for (const Range& r : rank.page_planes) (void)driver_->FreeAddress(r.base, r.bytes);
    if (rank.row.base != 0) (void)driver_->FreeAddress(rank.row.base, rank.row.bytes);
  }
}

uint64_t ImportedDevicePlanes::mapped_bytes(uint32_t rank,
                                            std::optional<uint32_t> page_plane) const {
  const Rank& r = ranks_[rank];
  return page_plane ? r.page_planes[*page_plane].bytes : r.row.bytes;
}

RankPlanes ImportedDevicePlanes::planes(uint32_t rank) const {
  RankPlanes p;
  for (const Range& r : ranks_[rank].page_planes) p.page_plane_base.push_back(r.base);
  p.row_base = ranks_[rank].row.base;
  return p;
}

ImportedDevicePlanes::Range& ImportedDevicePlanes::RangeOf(const PlaneFd& fd) {
  Rank& r = ranks_[fd.rank];
  return fd.page_plane ? r.page_planes[*fd.page_plane] : r.row;
}

Status ImportedDevicePlanes::MapOne(uint32_t rank, Range& range, int fd) {
  STRATA_ASSIGN_OR_RETURN(CudaAllocationHandle handle, driver_->ImportFromFd(fd));
  Result<int> device = driver_->AllocationDevice(handle);
  Status s = device.status();
  if (s.ok() && *device != ordinals_[rank]) {
    s = Status::InvalidArgument("it lives on GPU " + std::to_string(*device) +
                                "; this rank serves GPU " + std::to_string(ordinals_[rank]));
  }
  if (s.ok()) s = driver_->MapAllocation(range.base, range.bytes, handle);
  // The mapping holds its own reference: the handle goes either way.
  (void)driver_->ReleaseAllocation(handle);
  if (!s.ok()) return s;
  range.mapped = true;
  return driver_->SetDeviceAccess(range.base, range.bytes, ordinals_[rank]);
}

Status ImportedDevicePlanes::Import(std::span<const PlaneFd> fds) {
  if (imported_) return Status::FailedPrecondition("planes are already imported");
  for (const PlaneFd& fd : fds) {
    if (fd.rank >= ranks_.size()) return Status::InvalidArgument("plane fd of an unknown rank");
    ContextGuard guard(*driver_, ranks_[fd.rank].context->get());
    Status s = guard.status();
    if (s.ok()) s = MapOne(fd.rank, RangeOf(fd), fd.fd);
    if (!s.ok()) {
      imported_ = true;  // so Release unmaps what was mapped
      Release();
      return s.WithContext("rank " + std::to_string(fd.rank) + " " +
                           PlaneName(geometry_.ranks[fd.rank], fd.page_plane));
    }
  }
  imported_ = true;
  return Status::Ok();
}

void ImportedDevicePlanes::Release() {
  if (!imported_) return;
  for (Rank& rank : ranks_) {
    ContextGuard guard(*driver_, rank.context->get());
    auto unmap = [&](Range& r) {
      if (r.mapped) (void)driver_->Unmap(r.base, r.bytes);
      r.mapped = false;
    };
    for (Range& r : rank.page_planes) unmap(r);
    unmap(rank.row);
  }
  imported_ = false;
}

Status ImportedDevicePlanes::Copy(uint32_t rank, TransferDirection direction, uint64_t device,
                                  uint8_t* host, uint64_t bytes) const {
  if (!imported_) return Status::FailedPrecondition("no runtime's planes are imported");
  ContextGuard guard(*driver_, ranks_[rank].context->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_RETURN_IF_ERROR(driver_->CopySync(direction, device, host, bytes));
  // A copy from pageable memory may return before its DMA lands.
  if (direction == TransferDirection::kHostToDevice) return driver_->SynchronizeStream(nullptr);
  return Status::Ok();
}

Status ImportedDevicePlanes::WritePage(uint32_t rank, uint32_t plane, PageId page,
                                       std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, page.value, bytes.size()));
  const uint64_t at = ranks_[rank].page_planes[plane].base + page.value * bytes.size();
  return Copy(rank, TransferDirection::kHostToDevice, at, const_cast<uint8_t*>(bytes.data()),
              bytes.size());
}

Status ImportedDevicePlanes::ReadPage(uint32_t rank, uint32_t plane, PageId page,
                                      std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, page.value, bytes.size()));
  const uint64_t at = ranks_[rank].page_planes[plane].base + page.value * bytes.size();
  return Copy(rank, TransferDirection::kDeviceToHost, at, bytes.data(), bytes.size());
}

Status ImportedDevicePlanes::WriteRow(uint32_t rank, StateSlot slot,
                                      std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  const uint64_t at = ranks_[rank].row.base + slot.value * bytes.size();
  return Copy(rank, TransferDirection::kHostToDevice, at, const_cast<uint8_t*>(bytes.data()),
              bytes.size());
}

Status ImportedDevicePlanes::ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  const uint64_t at = ranks_[rank].row.base + slot.value * bytes.size();
  return Copy(rank, TransferDirection::kDeviceToHost, at, bytes.data(), bytes.size());
}

}  // namespace strata
