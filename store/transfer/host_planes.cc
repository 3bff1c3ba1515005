#include "store/transfer/host_planes.h"

#include <cstring>

namespace strata {

HostPlanes::HostPlanes(const CacheGeometry& geometry) : geometry_(geometry) {
  for (const RankGeometry& g : geometry.ranks) {
    std::vector<std::vector<uint8_t>> planes;
    for (const PlaneSpec& p : g.page_planes) planes.emplace_back(p.unit_bytes * g.page_count);
    page_planes_.push_back(std::move(planes));
    rows_.emplace_back(g.row.unit_bytes * g.row_count);
  }
}

RankPlanes HostPlanes::planes(uint32_t rank) const {
  RankPlanes p;
  for (const auto& plane : page_planes_[rank]) {
    p.page_plane_base.push_back(reinterpret_cast<uint64_t>(plane.data()));
  }
  p.row_base = reinterpret_cast<uint64_t>(rows_[rank].data());
  return p;
}

uint8_t* HostPlanes::page(uint32_t rank, uint32_t plane, PageId page) {
  return page_planes_[rank][plane].data() +
         page.value * geometry_.ranks[rank].page_planes[plane].unit_bytes;
}

uint8_t* HostPlanes::row(uint32_t rank, StateSlot slot) {
  return rows_[rank].data() + slot.value * geometry_.ranks[rank].row.unit_bytes;
}

Status HostPlanes::WritePage(uint32_t rank, uint32_t plane, PageId id,
                             std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, id.value, bytes.size()));
  std::memcpy(page(rank, plane, id), bytes.data(), bytes.size());
  return Status::Ok();
}

Status HostPlanes::ReadPage(uint32_t rank, uint32_t plane, PageId id, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, id.value, bytes.size()));
  std::memcpy(bytes.data(), page(rank, plane, id), bytes.size());
  return Status::Ok();
}

Status HostPlanes::WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  std::memcpy(row(rank, slot), bytes.data(), bytes.size());
  return Status::Ok();
}

Status HostPlanes::ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  std::memcpy(bytes.data(), row(rank, slot), bytes.size());
  return Status::Ok();
}

Result<std::unique_ptr<Transfers>> MakeHostTransfers(HostPlanes& planes,
                                                     ThreadedTransfersOptions options) {
  std::vector<RankPlanes> rank_planes;
  std::vector<std::unique_ptr<CopyEngine>> engines;
  for (uint32_t r = 0; r < planes.geometry().rank_count(); ++r) {
    rank_planes.push_back(planes.planes(r));
    engines.push_back(std::make_unique<HostCopyEngine>());
  }
  STRATA_ASSIGN_OR_RETURN(auto t,
                          ThreadedTransfers::Create(planes.geometry(), std::move(rank_planes),
                                                    std::move(engines), options));
  return std::unique_ptr<Transfers>(std::move(t));
}

}  // namespace strata
