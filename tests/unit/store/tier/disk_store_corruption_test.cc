// A record whose file fails its checksums on fetch (one process): the fetch
// fails with kCorruption naming the file and page, the failure is counted,
// and the record (with what extends it) leaves the index and the disk so the
// next lookup misses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "launch/presets.h"
#include "store/record/record_file.h"
#include "tests/unit/store/tier/disk_rig.h"
#include "tests/unit/store/tier/disk_store_test_support.h"

namespace strata {
namespace {

using testing::AwaitEvent;
using testing::DamagePage;
using testing::DiskRig;
using ::testing::HasSubstr;
using testing::RootCheckpoint;
using testing::RootTokens;
using testing::ScratchDir;

constexpr auto kIdleBound = std::chrono::seconds(30);

// Restores `history`'s deepest record into fresh ids; the fetch's outcome.
std::optional<StoreEvent> FetchAll(DiskStore& store, const PrefixHistory& history) {
  std::optional<HostHit> hit = store.Lookup(history, 0, history.size());
  EXPECT_TRUE(hit.has_value());
  if (!hit) return std::nullopt;
  InboundTicket ticket{.ticket = JobId(1), .page_ids = {}, .row_slot = StateSlot(1)};
  for (uint64_t i = 0; i < hit->pages; ++i) ticket.page_ids.emplace_back(100 + i);
  Status s = store.Fetch(*hit, ticket);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return std::nullopt;
  return AwaitEvent(store, StoreEvent::Kind::kFetchFailed);
}

TEST(DiskStoreCorruptionTest, APageThatFailsItsChecksumRemovesTheRecordAndTheNextLookupMisses) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 2, 512, 16));
  OPEN_RIG(rig, dir.path(), planes, 1ull << 30);
  DiskStore& store = *rig.store();
  const PublishedCheckpoint cp = RootCheckpoint(1, 1, 10, 0, StateSlot(0));
  ASSERT_EQ(store.Store(cp), StoreOutcome::kQueued);
  ASSERT_TRUE(AwaitEvent(store, StoreEvent::Kind::kStored).has_value());
  const std::string path = rig.disk().path() + "/" + RecordFileName(cp.key);
  DamagePage(path, 3);

  const PrefixHistory history(RootTokens(1, 10));
  std::optional<StoreEvent> failed = FetchAll(store, history);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status.code(), StatusCode::kCorruption);
  EXPECT_THAT(failed->status.message(), HasSubstr(RecordFileName(cp.key)));
  EXPECT_THAT(failed->status.message(), HasSubstr("page 3 of 10 failed its checksum"));
  ASSERT_TRUE(store.WaitIdle(kIdleBound));  // the unlink finishes

  const StoreStats s = store.Stats();
  EXPECT_EQ(s.fetch_failed, 1u);
  EXPECT_EQ(s.fetch_checksum_failures, 1u);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(store.index().size(), 0u);
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_FALSE(store.Lookup(history, 0, history.size()).has_value());
}

TEST(DiskStoreCorruptionTest, ADamagedAncestorTakesItsDescendantsAndOnlyThem) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  OPEN_RIG(rig, dir.path(), planes, 1ull << 30);
  DiskStore& store = *rig.store();
  const PublishedCheckpoint root = RootCheckpoint(1, 1, 10, 0, StateSlot(0));
  ASSERT_EQ(store.Store(root), StoreOutcome::kQueued);
  ASSERT_TRUE(AwaitEvent(store, StoreEvent::Kind::kStored).has_value());
  // Its child: the same stream, 5 pages longer.
  const PrefixHistory history(RootTokens(1, 15));
  PublishedCheckpoint child = RootCheckpoint(2, 1, 15, 0, StateSlot(1));
  child.parent = root.key;
  child.tail_pages = 5;
  ASSERT_EQ(store.Store(child), StoreOutcome::kQueued);
  ASSERT_TRUE(AwaitEvent(store, StoreEvent::Kind::kStored).has_value());
  // An unrelated record stays.
  const PublishedCheckpoint other = RootCheckpoint(3, 2, 4, 20, StateSlot(2));
  ASSERT_EQ(store.Store(other), StoreOutcome::kQueued);
  ASSERT_TRUE(AwaitEvent(store, StoreEvent::Kind::kStored).has_value());
  ASSERT_EQ(store.index().size(), 3u);
  DamagePage(rig.disk().path() + "/" + RecordFileName(root.key), 2);

  std::optional<StoreEvent> failed = FetchAll(store, history);  // the chain root, child
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status.code(), StatusCode::kCorruption);
  EXPECT_THAT(failed->status.message(), HasSubstr("page 2 of 10"));
  ASSERT_TRUE(store.WaitIdle(kIdleBound));

  EXPECT_EQ(store.Stats().fetch_checksum_failures, 1u);
  EXPECT_FALSE(store.index().Find(root.key).has_value());
  EXPECT_FALSE(store.index().Find(child.key).has_value());
  EXPECT_TRUE(store.index().Find(other.key).has_value());
  EXPECT_FALSE(std::filesystem::exists(rig.disk().path() + "/" + RecordFileName(root.key)));
  EXPECT_FALSE(std::filesystem::exists(rig.disk().path() + "/" + RecordFileName(child.key)));
  EXPECT_FALSE(store.Lookup(history, 0, history.size()).has_value());
}

}  // namespace
}  // namespace strata
