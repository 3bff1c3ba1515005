// What the multi-rank handover tests read and record: one rank's record file
// as its page records and row, and a sink keeping a copy of every evicted
// record offered, and an import that waits for room.
// multi_rank_handover_test.cc and
// multi_rank_large_share_test.cc use them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "store/record/record_header.h"
#include "store/tier/disk_store.h"
#include "store/tier/record_handover.h"

namespace strata::handover_testing {

using Bytes = std::vector<std::byte>;

// One rank's record file: its page records and its row segment.
struct FileShare {
  std::vector<Bytes> pages;
  Bytes row;
};

inline FileShare ReadShare(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* begin = reinterpret_cast<const std::byte*>(raw.data());
  const Bytes all(begin, begin + raw.size());
  FileShare out;
  if (all.size() < kRecordHeaderBytes) return out;
  Result<RecordHeader> h = DecodeRecordHeader(std::span(all).first(kRecordHeaderBytes));
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  if (!h.ok()) return out;
  Result<RecordExtents> x = ComputeExtents(*h);
  EXPECT_TRUE(x.ok());
  for (uint32_t i = 0; i < h->tail_page_count; ++i) {
    const auto at = all.begin() + static_cast<std::ptrdiff_t>(x->page_offset(i));
    out.pages.emplace_back(at, at + static_cast<std::ptrdiff_t>(x->page_record_bytes));
  }
  if (all.size() >= x->file_bytes_with_row() && x->row_segment_bytes > 0) {
    const auto at = all.begin() + static_cast<std::ptrdiff_t>(x->row_segment_offset);
    out.row.assign(at, at + static_cast<std::ptrdiff_t>(x->row_segment_bytes));
  }
  return out;
}

// Keeps a copy of every evicted record offered.
class RecordingSink final : public EvictionSink {
 public:
  struct Offered {
    PrefixKey key;
    std::optional<PrefixKey> parent;
    Digest128 bucket{};
    std::vector<Bytes> pages;
    Bytes row;
    // The record as a view over the bytes kept here.
    RecordView View() const {
      RecordView v{.key = key,
                   .parent = parent,
                   .bucket = bucket,
                   .tail_pages = static_cast<uint32_t>(pages.size()),
                   .replicated_pages = false,
                   .replicated_row = false,
                   .pages = {},
                   .row = {}};
      for (const Bytes& p : pages) v.pages.emplace_back(p);
      if (!row.empty()) v.row.emplace_back(row);
      return v;
    }
  };
  void OnEvicted(std::span<const RecordView> chain) override {
    const RecordView& v = chain.back();
    EXPECT_FALSE(v.replicated_pages || v.replicated_row);
    Offered o{.key = v.key, .parent = v.parent, .bucket = v.bucket, .pages = {}, .row = {}};
    for (auto p : v.pages) o.pages.emplace_back(p.begin(), p.end());
    for (auto p : v.row) o.row.insert(o.row.end(), p.begin(), p.end());
    offered.push_back(std::move(o));
  }
  std::vector<Offered> offered;
};

// Imports `record` into `store`, retrying while it answers kBusy: room is
// made by evicting, and the import waits for the evicted files' unlinks.
// Between tries the store must go idle within `idle_bound` (else
// kUnavailable); at most 100 tries.
inline Status ImportWhenRoom(DiskStore& store, const RecordView& record,
                             std::chrono::milliseconds idle_bound) {
  Status imported = store.Import(record, 0);
  for (int tries = 0; imported.code() == StatusCode::kBusy && tries < 100; ++tries) {
    if (!store.WaitIdle(idle_bound)) return Status::Unavailable("the store did not go idle");
    std::vector<StoreEvent> events;
    store.Poll(0, events);
    imported = store.Import(record, 0);
  }
  return imported;
}

}  // namespace strata::handover_testing
