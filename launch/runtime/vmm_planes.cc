#include "launch/runtime/vmm_planes.h"

#include <unistd.h>

#include <string>

namespace strata {

Result<std::unique_ptr<VmmPlanes>> VmmPlanes::Create(const RankGeometry& rank, uint32_t page_tokens,
                                                     int ordinal) {
  std::unique_ptr<VmmPlanes> p(
      new VmmPlanes(CacheGeometry{.page_tokens = page_tokens, .ranks = {rank}}));
  p->ordinal_ = ordinal;
  STRATA_ASSIGN_OR_RETURN(p->driver_, CudaDriver::Load());
  if (!p->driver_->has_shareable_handles()) {
    return Status::FailedPrecondition(
        "the CUDA driver cannot export VMM allocations as file descriptors");
  }
  STRATA_ASSIGN_OR_RETURN(p->context_, PrimaryContext::Retain(p->driver_, ordinal));
  ContextGuard guard(*p->driver_, p->context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(const uint64_t granularity, p->driver_->DeviceGranularity(ordinal));
  for (const PlaneSpec& plane : rank.page_planes) {
    STRATA_RETURN_IF_ERROR(p->Add({.name = plane.name,
                                   .group = AllocationGroup::kKvPages,
                                   .unit_bytes = plane.unit_bytes,
                                   .count = rank.page_count},
                                  granularity));
  }
  STRATA_RETURN_IF_ERROR(p->Add({.name = rank.row.name,
                                 .group = AllocationGroup::kStateRows,
                                 .unit_bytes = rank.row.unit_bytes,
                                 .count = rank.row_count},
                                granularity));
  return p;
}

Status VmmPlanes::Add(SizedAllocation allocation, uint64_t granularity) {
  Plane& plane = planes_.emplace_back();
  plane.allocation = std::move(allocation);
  const uint64_t bytes = plane.allocation.unit_bytes * plane.allocation.count;
  plane.bytes = (bytes + granularity - 1) / granularity * granularity;
  const std::string what = plane.allocation.name + " (" + std::to_string(plane.bytes) + " bytes)";
  STRATA_ASSIGN_OR_RETURN(plane.handle,
                          driver_->CreateShareableDeviceAllocation(ordinal_, plane.bytes));
  STRATA_ASSIGN_OR_RETURN(plane.address, driver_->ReserveAddress(plane.bytes, granularity));
  STRATA_RETURN_IF_ERROR(
      driver_->MapAllocation(plane.address, plane.bytes, plane.handle).WithContext(what));
  plane.mapped = true;
  STRATA_RETURN_IF_ERROR(
      driver_->SetDeviceAccess(plane.address, plane.bytes, ordinal_).WithContext(what));
  STRATA_ASSIGN_OR_RETURN(plane.fd, driver_->ExportToFd(plane.handle));
  return driver_->MemsetD8(plane.address, 0, plane.bytes).WithContext(what);
}

VmmPlanes::~VmmPlanes() {
  if (!driver_ || !context_) return;
  ContextGuard guard(*driver_, context_->get());
  for (const Plane& p : planes_) {
    if (p.mapped) (void)driver_->Unmap(p.address, p.bytes);
    if (p.handle != 0) (void)driver_->ReleaseAllocation(p.handle);
    if (p.address != 0) (void)driver_->FreeAddress(p.address, p.bytes);
    if (p.fd >= 0) ::close(p.fd);
  }
}

std::vector<std::vector<attach::SharedAllocation>> VmmPlanes::Shared() const {
  std::vector<attach::SharedAllocation> rank;
  rank.reserve(planes_.size());
  for (const Plane& p : planes_) rank.push_back({.allocation = p.allocation, .fd = p.fd});
  return {rank};
}

RankPlanes VmmPlanes::planes(uint32_t /*rank*/) const {
  RankPlanes r;
  for (size_t i = 0; i + 1 < planes_.size(); ++i) r.page_plane_base.push_back(planes_[i].address);
  r.row_base = planes_.back().address;
  return r;
}

Status VmmPlanes::Copy(TransferDirection direction, const Plane& plane, uint64_t offset, void* host,
                       uint64_t bytes) const {
  ContextGuard guard(*driver_, context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  return driver_->CopySync(direction, plane.address + offset, host, bytes);
}

Status VmmPlanes::WritePage(uint32_t rank, uint32_t plane, PageId page,
                            std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, page.value, bytes.size()));
  return Copy(TransferDirection::kHostToDevice, planes_[plane], uint64_t{page.value} * bytes.size(),
              const_cast<uint8_t*>(bytes.data()), bytes.size());
}

Status VmmPlanes::ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, page.value, bytes.size()));
  return Copy(TransferDirection::kDeviceToHost, planes_[plane], uint64_t{page.value} * bytes.size(),
              bytes.data(), bytes.size());
}

Status VmmPlanes::WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  return Copy(TransferDirection::kHostToDevice, planes_.back(), uint64_t{slot.value} * bytes.size(),
              const_cast<uint8_t*>(bytes.data()), bytes.size());
}

Status VmmPlanes::ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  return Copy(TransferDirection::kDeviceToHost, planes_.back(), uint64_t{slot.value} * bytes.size(),
              bytes.data(), bytes.size());
}

}  // namespace strata
