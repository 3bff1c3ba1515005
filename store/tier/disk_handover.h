// What a disk tier's handover (DiskFiles::SetEvictionSink, seed 2.15) reads
// back before it unlinks an evicted record: the record and the ancestors the
// tier still holds, each into host memory of its own, so the EvictionSink
// receives them in their stored layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "store/base/prefix_key.h"
#include "store/tier/record_handover.h"

namespace strata {

// Page-aligned host memory of a fixed size (direct reads need the alignment).
class AlignedBytes {
 public:
  static constexpr size_t kAlign = 4096;
  explicit AlignedBytes(uint64_t bytes);
  std::byte* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
};

// One record of a handover: its metadata, where its bytes land, and (for an
// evicted record) the file that is unlinked once the sink has had it.
struct HandoverRecord {
  PrefixKey key;
  std::optional<PrefixKey> parent;
  Digest128 bucket{};
  uint32_t tail_pages = 0;
  bool has_row = false;
  bool replicated_pages = false;
  bool replicated_row = false;
  uint64_t page_bytes = 0;               // one stored page record
  uint64_t row_bytes = 0;                // the stored row segment (0: none)
  std::optional<uint64_t> evicted_file;  // set: evicted; unset: a held ancestor
  std::unique_ptr<AlignedBytes> bytes;   // pages in order, then the row

  // The view of the bytes read (valid while this record lives).
  RecordView View() const;
};

// Root side first: the held ancestors (pinned until the read ends), then the
// records one eviction removed (a leaf and the page-only ancestors it left
// childless), root side first.
// A demotion (DiskFiles::Demote) removes nothing: its records are all held
// ones, the last the demoted record, offered once as one chain.
struct DiskHandover {
  std::vector<HandoverRecord> records;
  std::vector<PrefixKey> pinned;  // the held ancestors
  bool demotion = false;
};

}  // namespace strata
