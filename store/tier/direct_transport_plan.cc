#include "store/tier/direct_transport_plan.h"

#include <algorithm>

#include "store/base/assert.h"

namespace strata {

std::vector<DirectIoEntry> PlanDirectWindow(const RecordLayout& layout,
                                            const RecordExtents& extents, const RankPlanes& planes,
                                            const DirectWindow& w) {
  const bool write = w.direction == TransferDirection::kDeviceToHost;
  std::vector<DirectIoEntry> out;
  const uint32_t r = w.rank;
  const bool pages = !(write && w.replicated_pages && r != 0);
  if (pages) {
    const uint32_t share_rank = w.replicated_pages ? 0 : r;
    out.reserve(w.page_ids.size() * layout.plane_count(r) + 1);
    for (size_t i = 0; i < w.page_ids.size(); ++i) {
      const uint64_t page_offset =
          extents.page_offset(w.first_file_page + static_cast<uint32_t>(i));
      for (uint32_t p = 0; p < layout.plane_count(r); ++p) {
        const uint64_t unit = layout.plane_bytes(r, p);
        out.push_back({.device = planes.page_plane_base[p] + uint64_t{w.page_ids[i].value} * unit,
                       .file_offset = page_offset + layout.plane_offset(share_rank, p),
                       .bytes = unit});
      }
    }
  }
  if (w.row_slot && !(write && w.replicated_row && r != 0)) {
    const uint64_t unit = layout.row_bytes(r);
    out.push_back(
        {.device = planes.row_base + uint64_t{w.row_slot->value} * unit,
         .file_offset = extents.row_segment_offset + (w.replicated_row ? 0 : layout.row_offset(r)),
         .bytes = unit});
  }
  return out;
}

std::vector<std::vector<DirectIoEntry>> SplitDirectBatches(std::span<const DirectIoEntry> entries,
                                                           uint32_t max_entries,
                                                           uint64_t max_bytes) {
  STRATA_ASSERT(max_entries > 0 && max_bytes >= kRecordAlign && max_bytes % kRecordAlign == 0,
                "batch bounds must be positive and 4 KiB multiples");
  std::vector<std::vector<DirectIoEntry>> batches;
  uint64_t batch_bytes = 0;
  auto add = [&](const DirectIoEntry& e) {
    if (batches.empty() || batches.back().size() == max_entries ||
        batch_bytes + e.bytes > max_bytes) {
      batches.emplace_back();
      batch_bytes = 0;
    }
    batches.back().push_back(e);
    batch_bytes += e.bytes;
  };
  for (const DirectIoEntry& e : entries) {
    for (uint64_t done = 0; done < e.bytes; done += max_bytes) {
      add({.device = e.device + done,
           .file_offset = e.file_offset + done,
           .bytes = std::min(max_bytes, e.bytes - done)});
    }
  }
  return batches;
}

std::vector<DirectIoShare> SplitAmongWorkers(std::span<const DirectIoEntry> entries,
                                             uint32_t workers) {
  const size_t n = entries.size();
  const size_t parts = std::min<size_t>(std::max<uint32_t>(workers, 1), n);
  std::vector<DirectIoShare> shares;
  shares.reserve(parts);
  uint64_t total = 0;
  for (const DirectIoEntry& e : entries) total += e.bytes;
  size_t next = 0;
  uint64_t done = 0;
  for (size_t w = 0; w < parts; ++w) {
    const size_t last_allowed = n - (parts - w - 1);  // leave one entry per later share
    const uint64_t target = w + 1 == parts ? total : total / parts * (w + 1);
    DirectIoShare share{.first = next, .end = next};
    do {
      done += entries[share.end].bytes;
      ++share.end;
    } while (share.end < last_allowed && done < target);
    if (w + 1 == parts) share.end = n;
    shares.push_back(share);
    next = share.end;
  }
  return shares;
}

}  // namespace strata
