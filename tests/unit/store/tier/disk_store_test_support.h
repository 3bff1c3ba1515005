// Helpers for tests of a disk store (one process or ranks on separate
// hosts): a checkpoint from a seeded token stream, waiting for a store event
// with a bound, and damaging one page of a committed record file.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "store/base/prefix_history.h"
#include "store/record/record_header.h"
#include "store/tier/disk_store.h"

namespace strata::testing {

// Bound on any one wait for a store event; a passing test never reaches it.
inline constexpr std::chrono::seconds kStoreEventBound{30};

inline uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// The token stream of RootCheckpoint(…, seed, pages, …, page_tokens).
inline std::vector<Token> RootTokens(uint64_t seed, uint32_t pages, uint32_t page_tokens = 64) {
  std::vector<Token> tokens(uint64_t{pages} * page_tokens);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<Token>(seed * 7919 + i);
  return tokens;
}

// A root checkpoint of `pages` pages (ids first_id ..) and row `row`, from a
// token stream derived from `seed`. The planes keep whatever they hold.
inline PublishedCheckpoint RootCheckpoint(uint64_t checkpoint_id, uint64_t seed, uint32_t pages,
                                          uint32_t first_id, StateSlot row,
                                          uint32_t page_tokens = 64) {
  const std::vector<Token> tokens = RootTokens(seed, pages, page_tokens);
  PrefixHistory h(tokens);
  PublishedCheckpoint cp;
  cp.checkpoint_id = checkpoint_id;
  cp.key = h.key_at(tokens.size());
  cp.bucket = h.bucket_digest(tokens.size());
  for (uint32_t i = 0; i < pages; ++i) cp.chain.emplace_back(first_id + i);
  cp.tail_pages = pages;
  cp.row_slot = row;
  return cp;
}

// Polls `store` until an event of `kind` (returned), collecting every other
// event into `others`; nullopt when none comes within kStoreEventBound.
inline std::optional<StoreEvent> AwaitEvent(DiskStore& store, StoreEvent::Kind kind,
                                            std::vector<StoreEvent>* others = nullptr) {
  const auto until = std::chrono::steady_clock::now() + kStoreEventBound;
  std::vector<StoreEvent> events;
  while (std::chrono::steady_clock::now() < until) {
    events.clear();
    store.Poll(WallMs(), events);
    std::optional<StoreEvent> found;
    for (StoreEvent& e : events) {
      if (!found && e.kind == kind) {
        found = std::move(e);
      } else if (others != nullptr) {
        others->push_back(std::move(e));
      }
    }
    if (found) return found;
    (void)store.WaitIdle(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

// Flips one byte inside page `page` of the committed record file at `path`
// (its header and checksum segment stay intact).
inline void DamagePage(const std::string& path, uint32_t page) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.good()) << path;
  std::vector<char> header(kRecordHeaderBytes);
  file.read(header.data(), static_cast<std::streamsize>(header.size()));
  Result<RecordHeader> h = DecodeRecordHeader(std::as_bytes(std::span(header)));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Result<RecordExtents> e = ComputeExtents(*h);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const auto at = static_cast<std::streamoff>(e->page_offset(page) + 123);
  char c = 0;
  file.seekg(at);
  file.read(&c, 1);
  c = static_cast<char>(c ^ 0x01);
  file.seekp(at);
  file.write(&c, 1);
  file.flush();
  ASSERT_TRUE(file.good()) << path;
}

}  // namespace strata::testing
