#include "store/transfer/host_planes.h"

#include <cstring>

namespace strata {

HostAddressPlanes::HostAddressPlanes(const CacheGeometry& geometry) : geometry_(geometry) {}

void HostAddressPlanes::SetBases(std::vector<std::vector<uint8_t*>> page_bases,
                                 std::vector<uint8_t*> row_bases) {
  page_bases_ = std::move(page_bases);
  row_bases_ = std::move(row_bases);
}

RankPlanes HostAddressPlanes::planes(uint32_t rank) const {
  RankPlanes p;
  for (uint8_t* base : page_bases_[rank])
    p.page_plane_base.push_back(reinterpret_cast<uint64_t>(base));
  p.row_base = reinterpret_cast<uint64_t>(row_bases_[rank]);
  return p;
}

uint8_t* HostAddressPlanes::page(uint32_t rank, uint32_t plane, PageId page) {
  return page_bases_[rank][plane] +
         page.value * geometry_.ranks[rank].page_planes[plane].unit_bytes;
}

uint8_t* HostAddressPlanes::row(uint32_t rank, StateSlot slot) {
  return row_bases_[rank] + slot.value * geometry_.ranks[rank].row.unit_bytes;
}

Status HostAddressPlanes::WritePage(uint32_t rank, uint32_t plane, PageId id,
                                    std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, id.value, bytes.size()));
  STRATA_RETURN_IF_ERROR(CheckAccessible());
  std::memcpy(page(rank, plane, id), bytes.data(), bytes.size());
  return Status::Ok();
}

Status HostAddressPlanes::ReadPage(uint32_t rank, uint32_t plane, PageId id,
                                   std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, plane, id.value, bytes.size()));
  STRATA_RETURN_IF_ERROR(CheckAccessible());
  std::memcpy(bytes.data(), page(rank, plane, id), bytes.size());
  return Status::Ok();
}

Status HostAddressPlanes::WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  STRATA_RETURN_IF_ERROR(CheckAccessible());
  std::memcpy(row(rank, slot), bytes.data(), bytes.size());
  return Status::Ok();
}

Status HostAddressPlanes::ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(CheckPlaneAccess(geometry_, rank, std::nullopt, slot.value, bytes.size()));
  STRATA_RETURN_IF_ERROR(CheckAccessible());
  std::memcpy(bytes.data(), row(rank, slot), bytes.size());
  return Status::Ok();
}

HostPlanes::HostPlanes(const CacheGeometry& geometry) : HostAddressPlanes(geometry) {
  std::vector<std::vector<uint8_t*>> page_bases;
  std::vector<uint8_t*> row_bases;
  for (const RankGeometry& g : geometry.ranks) {
    std::vector<std::vector<uint8_t>>& planes = page_planes_.emplace_back();
    std::vector<uint8_t*>& bases = page_bases.emplace_back();
    for (const PlaneSpec& p : g.page_planes) {
      bases.push_back(planes.emplace_back(p.unit_bytes * g.page_count).data());
    }
    row_bases.push_back(rows_.emplace_back(g.row.unit_bytes * g.row_count).data());
  }
  SetBases(std::move(page_bases), std::move(row_bases));
}

Result<std::unique_ptr<Transfers>> MakeHostTransfers(HostAddressPlanes& planes,
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
