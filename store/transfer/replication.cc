#include "store/transfer/replication.h"

#include <cstring>

namespace strata {

bool PageRanksIdentical(const RecordLayout& layout, const uint8_t* record) {
  const uint64_t share = layout.rank_page_share(0);
  for (uint32_t r = 1; r < layout.rank_count(); ++r) {
    if (layout.rank_page_share(r) != share) return false;
    if (std::memcmp(record, record + layout.plane_offset(r, 0), share) != 0) return false;
  }
  return true;
}

void ReadPieces(const std::vector<HostPiece>& pieces, uint64_t offset, std::span<uint8_t> out) {
  uint64_t start = 0;
  size_t done = 0;
  for (const HostPiece& p : pieces) {
    if (done == out.size()) return;
    const uint64_t end = start + p.bytes;
    if (offset < end) {
      const uint64_t n = std::min<uint64_t>(out.size() - done, end - offset);
      std::memcpy(out.data() + done, p.data + (offset - start), n);
      done += n;
      offset += n;
    }
    start = end;
  }
  STRATA_ASSERT(done == out.size(), "row stream shorter than requested");
}

bool RowRanksIdentical(const RecordLayout& layout, const std::vector<HostPiece>& pieces) {
  if (!layout.rows_can_replicate()) return false;
  std::vector<uint8_t> first(layout.row_bytes(0)), other(layout.row_bytes(0));
  ReadPieces(pieces, layout.row_offset(0), first);
  for (uint32_t r = 1; r < layout.rank_count(); ++r) {
    ReadPieces(pieces, layout.row_offset(r), other);
    if (first != other) return false;
  }
  return true;
}

std::vector<uint8_t*> PackPageShares(const RecordLayout& layout,
                                     const std::vector<uint8_t*>& records) {
  const uint64_t share = layout.replicated_page_record_bytes();
  const uint32_t ranks = layout.rank_count();
  std::vector<uint8_t*> out;
  out.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    uint8_t* dst = records[i / ranks] + (i % ranks) * share;
    // Destinations only reach slots whose own shares already moved.
    if (dst != records[i]) std::memmove(dst, records[i], share);
    out.push_back(dst);
  }
  return out;
}

}  // namespace strata
