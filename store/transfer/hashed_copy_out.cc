#include "store/transfer/hashed_copy_out.h"

#include <cstring>

#include "store/record/checksum.h"

namespace strata {

bool CanHashCopyOut(const RecordLayout& layout) {
  if (layout.rank_count() != 1 || layout.row_offset(0) != 0) return false;
  uint64_t at = 0;
  for (uint32_t p = 0; p < layout.plane_count(0); ++p) {
    if (layout.plane_offset(0, p) != at) return false;
    at += AlignUp(layout.plane_bytes(0, p));
  }
  return at == layout.page_record_bytes() &&
         layout.row_segment_bytes() == AlignUp(layout.row_bytes(0));
}

namespace {

// Copies [device, device+bytes) to `host` piece by piece, feeding each piece
// to `sum` right after it landed.
Status CopyAndHash(CopyEngine& engine, uint64_t device, uint8_t* host, uint64_t bytes,
                   Xxh3Stream& sum, HashedCopyOut& out) {
  while (bytes > 0) {
    const uint64_t n = std::min(bytes, kHashPieceBytes);
    const CopyDescriptor d{device, host, n};
    ++out.batches;
    STRATA_RETURN_IF_ERROR(engine.CopyBatch(TransferDirection::kDeviceToHost, {&d, 1}));
    sum.Update({reinterpret_cast<const std::byte*>(host), n});
    out.bytes += n;
    device += n;
    host += n;
    bytes -= n;
  }
  return Status::Ok();
}

// Zeroes `bytes` at `host` and feeds them to `sum`.
void ZeroAndHash(uint8_t* host, uint64_t bytes, Xxh3Stream& sum) {
  std::memset(host, 0, bytes);
  sum.Update({reinterpret_cast<const std::byte*>(host), bytes});
}

Status CopyRow(CopyEngine& engine, const RankGeometry& g, const RankPlanes& planes,
               const TransferJob& job, Xxh3Stream& sum, HashedCopyOut& out) {
  const uint64_t unit = g.row.unit_bytes;
  const uint64_t padded = AlignUp(unit);
  uint64_t device = planes.row_base + job.row_slot->value * unit;
  uint64_t at = 0;  // offset in the row segment
  for (const HostPiece& piece : job.row_pieces) {
    if (at >= padded) break;
    const uint64_t take = std::min(piece.bytes, padded - at);
    const uint64_t copy = at < unit ? std::min(take, unit - at) : 0;
    STRATA_RETURN_IF_ERROR(CopyAndHash(engine, device, piece.data, copy, sum, out));
    device += copy;
    ZeroAndHash(piece.data + copy, take - copy, sum);
    at += take;
  }
  return Status::Ok();
}

}  // namespace

HashedCopyOut CopyOutHashed(CopyEngine& engine, const RankGeometry& g, const RankPlanes& planes,
                            const RecordLayout& layout, const TransferJob& job) {
  HashedCopyOut out;
  Xxh3Stream sum;
  out.page_sums.reserve(job.page_ids.size());
  for (size_t i = 0; i < job.page_ids.size() && out.status.ok(); ++i) {
    sum.Reset();
    for (uint32_t p = 0; p < g.page_planes.size() && out.status.ok(); ++p) {
      const uint64_t unit = g.page_planes[p].unit_bytes;
      uint8_t* host = job.page_records[i] + layout.plane_offset(0, p);
      out.status = CopyAndHash(engine, planes.page_plane_base[p] + job.page_ids[i].value * unit,
                               host, unit, sum, out);
      ZeroAndHash(host + unit, AlignUp(unit) - unit, sum);
    }
    out.page_sums.push_back(sum.Digest());
  }
  if (out.status.ok() && job.row_slot) {
    sum.Reset();
    out.status = CopyRow(engine, g, planes, job, sum, out);
    out.row_sum = sum.Digest();
  }
  if (!out.status.ok()) {
    out.page_sums.clear();
    out.row_sum.reset();
  }
  return out;
}

}  // namespace strata
