#include "store/tier/direct_transport_job.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "store/transfer/transfers.h"

namespace strata {

RecordHeader DirectRecordHeader(const RecordHeaderBasis& basis, const RecordJob& job,
                                uint64_t row_checksum, uint64_t created_unix_ns) {
  RecordHeader h;
  h.pages_replicated = job.replicated_pages;
  h.row_replicated = job.replicated_row;
  h.identity = basis.identity;
  h.fingerprint = basis.fingerprint;
  h.key = job.key;
  h.parent = job.parent;
  h.bucket = job.bucket;
  h.tail_page_count = job.tail_pages;
  h.shape = basis.shape;
  h.row_checksum = row_checksum;
  h.created_unix_ns = created_unix_ns;
  return h;
}

std::vector<std::vector<DirectIoEntry>> PlanDirectJob(
    const RecordLayout& layout, const RecordExtents& extents, std::span<const RankPlanes> planes,
    const RecordJob& job, TransferDirection direction, const DirectBatchBounds& bounds) {
  const uint32_t first_file_page =
      direction == TransferDirection::kDeviceToHost ? 0 : job.first_page;
  const std::span<const PageId> ids(job.page_ids);
  std::vector<std::vector<DirectIoEntry>> batches;
  for (uint32_t rank = 0; rank < planes.size(); ++rank) {
    size_t begin = 0;
    do {
      const size_t end = std::min<size_t>(ids.size(), begin + kMaxWindowPages);
      const bool last = end == ids.size();
      DirectWindow w{.direction = direction,
                     .rank = rank,
                     .page_ids = ids.subspan(begin, end - begin),
                     .first_file_page = first_file_page + static_cast<uint32_t>(begin),
                     .replicated_pages = job.replicated_pages,
                     .row_slot = last ? job.row_slot : std::nullopt,
                     .replicated_row = job.replicated_row};
      const std::vector<DirectIoEntry> entries = PlanDirectWindow(layout, extents, planes[rank], w);
      for (std::vector<DirectIoEntry>& b :
           SplitDirectBatches(entries, bounds.max_entries, bounds.max_bytes)) {
        batches.push_back(std::move(b));
      }
      begin = end;
    } while (begin < ids.size());
  }
  return batches;
}

std::vector<DeviceChecksumRecord> DirectChecksumRecords(const RecordLayout& layout,
                                                        std::span<const RankPlanes> planes,
                                                        std::span<const PageId> page_ids,
                                                        bool replicated_pages,
                                                        std::optional<StateSlot> row_slot,
                                                        bool replicated_row) {
  std::vector<DeviceChecksumRecord> out;
  out.reserve(page_ids.size() + 1);
  const uint32_t page_ranks = replicated_pages ? 1 : static_cast<uint32_t>(planes.size());
  for (const PageId id : page_ids) {
    DeviceChecksumRecord record;
    for (uint32_t r = 0; r < page_ranks; ++r) {
      for (uint32_t p = 0; p < layout.plane_count(r); ++p) {
        const uint64_t unit = layout.plane_bytes(r, p);
        record.pieces.push_back({.device = planes[r].page_plane_base[p] + uint64_t{id.value} * unit,
                                 .data_bytes = unit,
                                 .stored_bytes = AlignUp(unit)});
      }
    }
    out.push_back(std::move(record));
  }
  if (row_slot) {
    DeviceChecksumRecord record;
    const uint32_t row_ranks = replicated_row ? 1 : static_cast<uint32_t>(planes.size());
    for (uint32_t r = 0; r < row_ranks; ++r) {
      const uint64_t unit = layout.row_bytes(r);
      record.pieces.push_back({.device = planes[r].row_base + uint64_t{row_slot->value} * unit,
                               .data_bytes = unit,
                               .stored_bytes = AlignUp(unit)});
    }
    out.push_back(std::move(record));
  }
  return out;
}

void EncodePageChecksums(std::span<const uint64_t> page_sums, std::span<std::byte> out) {
  for (size_t i = 0; i < page_sums.size(); ++i) {
    for (int b = 0; b < 8; ++b) out[8 * i + b] = static_cast<std::byte>(page_sums[i] >> (8 * b));
  }
}

uint64_t StoredPageChecksum(std::span<const std::byte> segment, uint32_t page) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) {
    v |= uint64_t{std::to_integer<uint8_t>(segment[8 * size_t{page} + b])} << (8 * b);
  }
  return v;
}

namespace {

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

std::optional<ChecksumMismatch> CompareDirectChecksums(std::span<const std::byte> segment,
                                                       uint32_t first_page, uint32_t tail_pages,
                                                       std::span<const uint64_t> computed_pages,
                                                       std::optional<uint64_t> computed_row,
                                                       uint64_t stored_row) {
  for (uint32_t i = 0; i < computed_pages.size(); ++i) {
    const uint32_t page = first_page + i;
    const uint64_t stored = StoredPageChecksum(segment, page);
    if (stored != computed_pages[i]) {
      return ChecksumMismatch{
          Status::Corruption("page " + std::to_string(page) + " of " + std::to_string(tail_pages) +
                             " failed its checksum (stored " + Hex(stored) + ", read " +
                             Hex(computed_pages[i]) + ")"),
          page};
    }
  }
  if (computed_row && *computed_row != stored_row) {
    return ChecksumMismatch{
        Status::Corruption("row segment failed its checksum (stored " + Hex(stored_row) +
                           ", read " + Hex(*computed_row) + ")"),
        std::nullopt};
  }
  return std::nullopt;
}

}  // namespace strata
