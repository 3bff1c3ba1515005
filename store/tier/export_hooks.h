// The values of the HostStore's export and eviction hooks (seed 2.15,
// "Exports" and "Evictions"; docs/embedding.md section 5): a pooled store asks
// the runtime to pin a GPU checkpoint so another instance can copy it, and the
// runtime tells the store which of its checkpoints it retired.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "store/base/ids.h"
#include "store/base/prefix_key.h"

namespace strata {

// An export, named by the store that requested it; unique within that
// store's lifetime.
using ExportId = StrongId<struct ExportIdTag, uint64_t>;

// Why a runtime did not pin a requested export, in the order it checks.
enum class ExportRefusal : unsigned char {
  kNotFound,           // no checkpoint with that key
  kGenerationChanged,  // the key is held, but by a later checkpoint
  kChainGap,           // nothing to export from the requested page on
  kNoHeadroom,         // pinning it could starve the runtime's next step
};
inline constexpr size_t kExportRefusalCount = 4;
std::string_view ExportRefusalName(ExportRefusal refusal);

// What a pinned export holds: the chain's GPU page ids from the requested
// start page to the endpoint (in chain order) and the endpoint's row. They
// stay pinned (not evicted, not compacted, ids not reused) until the store
// reports kExportEnded for the export.
struct ExportDescription {
  uint64_t start_page = 0;    // chain index of pages[0]
  std::vector<PageId> pages;  // chain pages start_page .. the endpoint's last
  StateSlot row_slot{};
};

// Bytes of one stored page record and of the row segment, in the record
// layout the store writes (RecordLayout::page_record_bytes /
// row_segment_bytes): what an export moves per page and for the row.
struct ExportRecordSizes {
  uint64_t page_record_bytes = 0;
  uint64_t row_segment_bytes = 0;
  bool known() const { return page_record_bytes != 0 && row_segment_bytes != 0; }
};

// The staging an export of `description` needs.
uint64_t ExportBytes(const ExportDescription& description, const ExportRecordSizes& sizes);

// A checkpoint the runtime retired (evicted, or for a compaction the child
// that took its pages), with the generation it was published under.
struct EvictionNotice {
  PrefixKey key;
  uint64_t generation = 0;
};

}  // namespace strata
