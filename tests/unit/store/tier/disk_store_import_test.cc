// DiskStore as a RecordIntake in one process (share_count 1): a record from
// outside is written, committed, and restored byte-exact; a second import,
// pieces of the wrong size, a tail the index does not extend, and a record
// larger than the transport carries at once are refused with nothing
// started; a transport that cannot carry a record's share lets it go on
// eviction without offering it to the sink.
#include <gtest/gtest.h>

#include <vector>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/record/record_test_support.h"
#include "tests/unit/store/tier/disk_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::ScratchDir;
using Bytes = std::vector<std::byte>;

// A transport that says it carries shares of at most `cap` bytes, the rest
// forwarded to a real one (what a record link's limit looks like to the
// disk tier).
class CappedTransport final : public DiskTransport {
 public:
  CappedTransport(std::unique_ptr<DiskTransport> inner, uint64_t cap)
      : inner_(std::move(inner)), cap_(cap) {}
  Status Submit(RecordJob job) override { return inner_->Submit(std::move(job)); }
  Status SubmitHost(const RecordJob& job, const HostBuffers& buffers) override {
    return inner_->SubmitHost(job, buffers);
  }
  uint64_t share_bytes_max() const override { return cap_; }
  void Poll(std::vector<RecordJobDone>& out) override { inner_->Poll(out); }
  bool WaitForCompletion(std::chrono::milliseconds timeout) override {
    return inner_->WaitForCompletion(timeout);
  }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    inner_->NotifyOnCompletion(std::move(signal));
  }
  Status stopped() const override { return inner_->stopped(); }
  Status Close(std::chrono::milliseconds deadline) override { return inner_->Close(deadline); }

 private:
  std::unique_ptr<DiskTransport> inner_;
  uint64_t cap_;
};

// Counts what it is offered.
class CountingSink final : public EvictionSink {
 public:
  void OnEvicted(std::span<const RecordView> /*chain*/) override { ++offered; }
  int offered = 0;
};

class DiskStoreImportTest : public ::testing::Test {
 protected:
  // A store of three and a half 10-page records whose transport carries
  // shares of at most `cap` bytes.
  Status Open(uint64_t cap) {
    STRATA_ASSIGN_OR_RETURN(disk_, testing::OpenTestDisk(dir_.path(), planes_.geometry(),
                                                         LocalDiskOptions{}.durability));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskTransport> staged,
                            disk_->MakeTransport(*MakeHostTransfers(planes_)));
    const uint64_t one = RecordFileBytes(layout_, {.tail_pages = 10});
    STRATA_ASSIGN_OR_RETURN(
        store_, DiskStore::Open(planes_.geometry(),
                                std::make_unique<CappedTransport>(std::move(staged), cap),
                                disk_->scan().records, {.disk_limit_bytes = 3 * one + one / 2}));
    return Status::Ok();
  }
  void TearDown() override {
    if (store_) {
      EXPECT_TRUE(store_->Close().ok());
    }
  }
  // A root record of 10 pages (640 tokens) whose bytes are `seed`'s.
  void MakeRecord(uint8_t seed) {
    pages_.clear();
    for (int i = 0; i < 10; ++i) {
      pages_.emplace_back(layout_.page_record_bytes(), static_cast<std::byte>(seed + i));
    }
    row_.assign(layout_.row_segment_bytes(), static_cast<std::byte>(seed));
  }
  RecordView View(uint64_t consumed, uint8_t digest) const {
    RecordView v{.key = PrefixKey{consumed, {}},
                 .parent = std::nullopt,
                 .bucket = {},
                 .tail_pages = static_cast<uint32_t>(consumed / 64),
                 .replicated_pages = false,
                 .replicated_row = false,
                 .pages = {},
                 .row = {}};
    v.key.digest[0] = digest;
    for (const Bytes& p : pages_) v.pages.emplace_back(p);
    v.row.emplace_back(row_);
    return v;
  }
  void Settle() {
    ASSERT_TRUE(store_->WaitIdle(10s));
    std::vector<StoreEvent> events;
    store_->Poll(0, events);
    EXPECT_TRUE(events.empty()) << "an import reports no store event";
  }

  ScratchDir dir_;
  HostPlanes planes_{*PresetGeometry("tiny", 1, 512, 16)};
  RecordLayout layout_{planes_.geometry()};
  std::unique_ptr<LocalDisk> disk_;
  std::unique_ptr<DiskStore> store_;
  std::vector<Bytes> pages_;
  Bytes row_;
};

#define OPEN_OR_SKIP(cap) STRATA_OPEN_OR_SKIP(Open(cap))

TEST_F(DiskStoreImportTest, AnImportedRecordCommitsAndIsRestoredByteExact) {
  OPEN_OR_SKIP(UINT64_MAX);
  MakeRecord(7);
  const RecordView v = View(640, 1);
  ASSERT_TRUE(store_->Import(v, 0).ok());
  EXPECT_EQ(store_->Imported(v.key), ImportState::kWriting);
  EXPECT_EQ(store_->Import(v, 0).code(), StatusCode::kAlreadyExists);
  Settle();
  ASSERT_EQ(store_->Imported(v.key), ImportState::kLanded);
  EXPECT_EQ(store_->Stats().disk.stored_total, 1u);

  // The ordinary lookup and fetch restore it into the planes.
  HostHit hit;
  hit.endpoint = v.key;
  hit.chain = {v.key};
  hit.pages = 10;
  InboundTicket ticket;
  ticket.ticket = JobId(9);
  ticket.row_slot = StateSlot(3);
  for (uint32_t i = 0; i < 10; ++i) ticket.page_ids.push_back(PageId(100 + i));
  ASSERT_TRUE(store_->Fetch(hit, ticket).ok());
  ASSERT_TRUE(store_->WaitIdle(10s));
  std::vector<StoreEvent> events;
  store_->Poll(0, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kFetched) << events[0].status.ToString();
  for (uint32_t i = 0; i < 10; ++i) {
    for (uint32_t plane = 0; plane < layout_.plane_count(0); ++plane) {
      std::vector<uint8_t> got(layout_.plane_bytes(0, plane));
      ASSERT_TRUE(planes_.ReadPage(0, plane, PageId(100 + i), got).ok());
      const auto* want =
          reinterpret_cast<const uint8_t*>(pages_[i].data()) + layout_.plane_offset(0, plane);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want)) << "page " << i << " plane " << plane;
    }
  }
}

TEST_F(DiskStoreImportTest, WhatDoesNotFitIsRefusedWithNothingStarted) {
  OPEN_OR_SKIP(UINT64_MAX);
  MakeRecord(1);
  RecordView narrow = View(640, 2);
  narrow.pages[3] = narrow.pages[3].first(100);
  EXPECT_EQ(store_->Import(narrow, 0).code(), StatusCode::kInvalidArgument);
  RecordView orphan = View(640, 3);
  orphan.parent = PrefixKey{64, {}};
  EXPECT_EQ(store_->Import(orphan, 0).code(), StatusCode::kFailedPrecondition);
  RecordView short_tail = View(640, 4);
  short_tail.tail_pages = 11;  // the index computes 10 for a 640-token root
  EXPECT_EQ(store_->Import(short_tail, 0).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->index().size(), 0u);
  EXPECT_EQ(store_->used_bytes(), 0u);
}

TEST_F(DiskStoreImportTest, ARecordLargerThanTheTransportCarriesIsNeitherImportedNorHandedOver) {
  const uint64_t share = 10 * RecordLayout(*PresetGeometry("tiny", 1, 512, 16)).page_record_bytes();
  OPEN_OR_SKIP(share / 2);
  MakeRecord(5);
  Status s = store_->Import(View(640, 6), 0);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("more than a record link carries"), std::string::npos) << s.ToString();
  EXPECT_EQ(store_->index().size(), 0u);

  // Stores that evict: the evicted records go without reaching the sink.
  CountingSink sink;
  store_->SetEvictionSink(&sink);
  SyntheticRuntime rt(planes_, store_.get());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(rt.Turn(rt.NewConversation(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(store_->WaitIdle(10s));
  }
  store_->SetEvictionSink(nullptr);
  EXPECT_GT(store_->Stats().disk.evicted_total, 0u);
  EXPECT_EQ(sink.offered, 0);
}

}  // namespace
}  // namespace strata
