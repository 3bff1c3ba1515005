// Replicated shares (seed 2.5): after copy-out, a record whose ranks hold
// byte-identical pages (or rows) stores one share and restores fan it out.
// Pure functions over host memory laid out by RecordLayout.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "store/record/record_layout.h"
#include "store/transfer/transfers.h"

namespace strata {

// Whether every rank's share of the page record at `record` equals rank 0's
// (padding is zero after copy-out, so whole shares compare).
bool PageRanksIdentical(const RecordLayout& layout, const uint8_t* record);
// Whether every rank's row in the row segment laid over `pieces` equals rank 0's.
bool RowRanksIdentical(const RecordLayout& layout, const std::vector<HostPiece>& pieces);
// Copies bytes [offset, offset + out.size()) of the stream laid over `pieces`.
void ReadPieces(const std::vector<HostPiece>& pieces, uint64_t offset, std::span<uint8_t> out);

// Packs the rank-0 shares of `records` (one page record each, in order) into
// the front of the same memory: share i moves to records[i / R] + (i % R) * S
// for R ranks and share size S. Returns each share's new address; the records
// from index ceil(n / R) on are no longer used.
std::vector<uint8_t*> PackPageShares(const RecordLayout& layout,
                                     const std::vector<uint8_t*>& records);

}  // namespace strata
