// Demotion before the disk tier fills (seed 2.15; record_handover.h). With a
// sink that takes demotions, a disk tier above its headroom floor offers its
// least recently used record as a copy and keeps it; once the sink reports
// it accepted, the record leaves the tier, and one given up stays and is
// not offered again. With a sink that does not take them (not connected, or
// its queue busy), only capacity eviction hands records over.
#include <gtest/gtest.h>

#include <algorithm>
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

// Records what it is offered; takes demotions while `takes`; reports the
// outcomes the test puts in `accept` and `give_up`.
class DemotionSink final : public EvictionSink {
 public:
  void OnEvicted(std::span<const RecordView> chain) override {
    evicted.push_back(chain.back().key);
  }
  bool TakesDemotions() const override { return takes; }
  void OnDemoted(std::span<const RecordView> chain) override {
    demoted.push_back(chain.back().key);
    for (const RecordView& r : chain) {
      EXPECT_EQ(r.pages.size(), r.tail_pages) << "the copy carries the record's bytes";
    }
  }
  void TakeDemotionOutcomes(std::vector<PrefixKey>& accepted,
                            std::vector<PrefixKey>& given_up) override {
    accepted.insert(accepted.end(), accept.begin(), accept.end());
    given_up.insert(given_up.end(), give_up.begin(), give_up.end());
    accept.clear();
    give_up.clear();
  }

  bool takes = false;
  std::vector<PrefixKey> evicted;
  std::vector<PrefixKey> demoted;
  std::vector<PrefixKey> accept;
  std::vector<PrefixKey> give_up;
};

class DiskDemotionTest : public ::testing::Test {
 protected:
  // A disk store of exactly `records` 10-page records.
  Status Open(uint64_t records) {
    STRATA_ASSIGN_OR_RETURN(
        disk_, testing::OpenTestDisk(dir_.path(), planes_.geometry(), Durability::kNone));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskTransport> transport,
                            disk_->MakeTransport(*MakeHostTransfers(planes_)));
    record_bytes_ = RecordFileBytes(RecordLayout(planes_.geometry()), {.tail_pages = 10});
    STRATA_ASSIGN_OR_RETURN(
        store_, DiskStore::Open(planes_.geometry(), std::move(transport), disk_->scan().records,
                                {.disk_limit_bytes = records * record_bytes_}));
    store_->SetEvictionSink(&sink_);
    runtime_ = std::make_unique<SyntheticRuntime>(planes_, store_.get());
    return Status::Ok();
  }
  void TearDown() override {
    runtime_.reset();
    if (store_) {
      store_->SetEvictionSink(nullptr);
      EXPECT_TRUE(store_->Close().ok());
    }
  }
  // One 640-token conversation: one 10-page root record, stored.
  PrefixKey Conversation() {
    const uint32_t c = runtime_->NewConversation();
    EXPECT_TRUE(runtime_->Turn(c, 640).ok());
    EXPECT_TRUE(runtime_->WaitForStores().ok());
    Settle();
    return PrefixHistory(runtime_->tokens(c)).key_at(640);
  }
  // Polls until the tier is idle after what each poll started (a read, an
  // unlink).
  void Settle() {
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(store_->WaitIdle(10s));
      std::vector<StoreEvent> events;
      store_->Poll(0, events);
    }
  }

  ScratchDir dir_;
  HostPlanes planes_{*PresetGeometry("tiny", 1, 512, 16)};
  uint64_t record_bytes_ = 0;
  std::unique_ptr<LocalDisk> disk_;
  std::unique_ptr<DiskStore> store_;
  DemotionSink sink_;
  std::unique_ptr<SyntheticRuntime> runtime_;
};

#define OPEN_OR_SKIP(records) STRATA_OPEN_OR_SKIP(Open(records))

TEST_F(DiskDemotionTest, AboveTheFloorTheColdestRecordIsOfferedKeptAndLetGoOnceAccepted) {
  OPEN_OR_SKIP(3);
  sink_.takes = true;
  const PrefixKey first = Conversation();
  (void)Conversation();
  EXPECT_TRUE(sink_.demoted.empty()) << "two of three records are below the floor";
  (void)Conversation();  // fits the limit: no store needs room
  ASSERT_EQ(sink_.demoted.size(), 1u) << "one offer at a time, awaiting its outcome";
  EXPECT_EQ(sink_.demoted[0], first) << "the least recently used record";
  EXPECT_EQ(store_->Stats().disk.records, 3u) << "kept until accepted";
  EXPECT_EQ(store_->Stats().disk.demoted_total, 0u);

  sink_.accept = {first};
  Settle();
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.disk.records, 2u);
  EXPECT_EQ(s.disk.demoted_total, 1u);
  EXPECT_EQ(s.disk.evicted_total, 1u);
  EXPECT_EQ(store_->used_bytes(), 2 * record_bytes_) << "its file was unlinked";
  EXPECT_EQ(sink_.demoted.size(), 1u) << "below the floor again: no more demotions";
  EXPECT_TRUE(sink_.evicted.empty());
}

TEST_F(DiskDemotionTest, ARecordGivenUpStaysAndIsNotOfferedAgain) {
  OPEN_OR_SKIP(3);
  sink_.takes = true;
  const PrefixKey first = Conversation();
  const PrefixKey second = Conversation();
  (void)Conversation();
  ASSERT_EQ(sink_.demoted.size(), 1u);
  sink_.give_up = {first};
  Settle();
  EXPECT_EQ(store_->Stats().disk.records, 3u) << "a demotion never discards";
  ASSERT_EQ(sink_.demoted.size(), 2u) << "the next coldest is offered instead";
  EXPECT_EQ(sink_.demoted[1], second);
  EXPECT_EQ(std::count(sink_.demoted.begin(), sink_.demoted.end(), first), 1);

  // Capacity eviction still hands the given-up record over as usual.
  sink_.takes = false;
  (void)Conversation();
  ASSERT_EQ(sink_.evicted.size(), 1u);
  EXPECT_EQ(sink_.evicted[0], first);
}

TEST_F(DiskDemotionTest, ASinkThatDoesNotTakeDemotionsGetsOnlyWhatCapacityEvictionHandsOver) {
  OPEN_OR_SKIP(3);
  for (int i = 0; i < 3; ++i) (void)Conversation();
  EXPECT_TRUE(sink_.demoted.empty());
  EXPECT_EQ(store_->Stats().disk.records, 3u);

  (void)Conversation();  // needs room: capacity eviction reads and offers one
  EXPECT_EQ(sink_.evicted.size(), 1u);
  EXPECT_TRUE(sink_.demoted.empty());
  EXPECT_EQ(store_->Stats().disk.demoted_total, 0u);
  EXPECT_EQ(store_->Stats().disk.evicted_total, 1u);
}

}  // namespace
}  // namespace strata
