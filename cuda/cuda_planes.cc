#include "cuda/cuda_planes.h"

namespace strata {

Result<std::unique_ptr<CudaPlanes>> CudaPlanes::Create(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    std::vector<int> device_ordinals) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  if (device_ordinals.size() != geometry.ranks.size()) {
    return Status::InvalidArgument("device planes need one device ordinal per rank");
  }
  std::unique_ptr<CudaPlanes> p(new CudaPlanes(driver, geometry));
  p->ordinals_ = std::move(device_ordinals);
  for (size_t r = 0; r < geometry.ranks.size(); ++r) {
    const RankGeometry& g = geometry.ranks[r];
    p->ranks_.emplace_back();
    Rank& rank = p->ranks_.back();
    STRATA_ASSIGN_OR_RETURN(rank.context, PrimaryContext::Retain(driver, p->ordinals_[r]));
    ContextGuard guard(*driver, rank.context->get());
    STRATA_RETURN_IF_ERROR(guard.status());
    for (const PlaneSpec& plane : g.page_planes) {
      const uint64_t bytes = plane.unit_bytes * g.page_count;
      Result<uint64_t> a = driver->MemAlloc(bytes);
      if (!a.ok())
        return a.status().WithContext("rank " + std::to_string(r) + " plane " + plane.name);
      rank.page_planes.push_back({*a, bytes});
    }
    const uint64_t row_bytes = g.row.unit_bytes * g.row_count;
    Result<uint64_t> a = driver->MemAlloc(row_bytes);
    if (!a.ok()) return a.status().WithContext("rank " + std::to_string(r) + " rows");
    rank.row = {*a, row_bytes};
  }
  return p;
}

CudaPlanes::~CudaPlanes() {
  for (Rank& rank : ranks_) {
    ContextGuard guard(*driver_, rank.context->get());
    if (!guard.status().ok()) continue;  // the context is gone with its memory
    for (const Allocation& a : rank.page_planes) (void)driver_->MemFree(a.address);
    if (rank.row.address != 0) (void)driver_->MemFree(rank.row.address);
  }
}

RankPlanes CudaPlanes::planes(uint32_t rank) const {
  RankPlanes p;
  for (const Allocation& a : ranks_[rank].page_planes) p.page_plane_base.push_back(a.address);
  p.row_base = ranks_[rank].row.address;
  return p;
}

uint64_t CudaPlanes::page_address(uint32_t rank, uint32_t plane, PageId page) const {
  return ranks_[rank].page_planes[plane].address +
         page.value * geometry_.ranks[rank].page_planes[plane].unit_bytes;
}

uint64_t CudaPlanes::row_address(uint32_t rank, StateSlot slot) const {
  return ranks_[rank].row.address + slot.value * geometry_.ranks[rank].row.unit_bytes;
}

Status CudaPlanes::Write(uint32_t rank, uint64_t device, std::span<const uint8_t> bytes) const {
  ContextGuard guard(*driver_, ranks_[rank].context->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_RETURN_IF_ERROR(driver_->CopySync(TransferDirection::kHostToDevice, device,
                                           const_cast<uint8_t*>(bytes.data()), bytes.size()));
  // A copy from pageable memory may return before its DMA lands; transfer
  // streams do not wait for the legacy stream, so wait here.
  return driver_->SynchronizeStream(nullptr);
}

Status CudaPlanes::Read(uint32_t rank, uint64_t device, std::span<uint8_t> bytes) const {
  ContextGuard guard(*driver_, ranks_[rank].context->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  return driver_->CopySync(TransferDirection::kDeviceToHost, device, bytes.data(), bytes.size());
}

Status CudaPlanes::Fill(uint8_t value) const {
  for (const Rank& rank : ranks_) {
    ContextGuard guard(*driver_, rank.context->get());
    STRATA_RETURN_IF_ERROR(guard.status());
    for (const Allocation& a : rank.page_planes) {
      STRATA_RETURN_IF_ERROR(driver_->MemsetD8(a.address, value, a.bytes));
    }
    STRATA_RETURN_IF_ERROR(driver_->MemsetD8(rank.row.address, value, rank.row.bytes));
  }
  // cuMemsetD8 is asynchronous for device memory: wait before callers read or copy.
  for (const Rank& rank : ranks_) {
    ContextGuard guard(*driver_, rank.context->get());
    STRATA_RETURN_IF_ERROR(guard.status());
    STRATA_RETURN_IF_ERROR(driver_->SynchronizeStream(nullptr));
  }
  return Status::Ok();
}

Status CudaPlanes::WritePage(uint32_t rank, uint32_t plane, PageId page,
                             std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, page.value, bytes.size()));
  return Write(rank, page_address(rank, plane, page), bytes);
}

Status CudaPlanes::ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, page.value, bytes.size()));
  return Read(rank, page_address(rank, plane, page), bytes);
}

Status CudaPlanes::WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  return Write(rank, row_address(rank, slot), bytes);
}

Status CudaPlanes::ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  return Read(rank, row_address(rank, slot), bytes);
}

}  // namespace strata
