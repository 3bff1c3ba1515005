// Demotion before a tier that ends the local chain fills (seed 2.15;
// record_handover.h), for the disk tier and the memory tier alike. With a
// sink that takes demotions, a tier above its headroom floor offers its least
// recently used record as a copy and keeps it; once the sink reports it
// accepted, the record leaves the tier, and one given up stays and is not
// offered again; one that gained a child meanwhile stays, and its capacity
// eviction later drops it without offering it again. With a sink that does
// not take them (not connected, or its queue busy), only capacity eviction
// hands records over.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/tier/memory_store.h"
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

class TierDemotionTest : public ::testing::TestWithParam<Tier> {
 protected:
  // The tier under test, holding exactly `records` 10-page records.
  Status Open(uint64_t records) {
    if (GetParam() == Tier::kDisk) {
      STRATA_ASSIGN_OR_RETURN(
          disk_, testing::OpenTestDisk(dir_.path(), planes_.geometry(), Durability::kNone));
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskTransport> transport,
                              disk_->MakeTransport(*MakeHostTransfers(planes_)));
      record_bytes_ = RecordFileBytes(RecordLayout(planes_.geometry()), {.tail_pages = 10});
      STRATA_ASSIGN_OR_RETURN(
          disk_store_,
          DiskStore::Open(planes_.geometry(), std::move(transport), disk_->scan().records,
                          {.disk_limit_bytes = records * record_bytes_}));
      disk_store_->SetEvictionSink(&sink_);
      store_ = disk_store_.get();
      intake_ = disk_store_.get();
    } else {
      const uint64_t page_record = RecordLayout(planes_.geometry()).page_record_bytes();
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> probe, SlabPool::Create(page_record, 1, 0));
      record_slots_ = MemoryStore(planes_.geometry(), std::move(probe), *MakeHostTransfers(planes_))
                          .SlotsFor(10);
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> pool,
                              SlabPool::Create(page_record, records * record_slots_, 0));
      memory_store_ = std::make_unique<MemoryStore>(planes_.geometry(), std::move(pool),
                                                    *MakeHostTransfers(planes_));
      memory_store_->SetEvictionSink(&sink_);
      store_ = memory_store_.get();
      intake_ = memory_store_.get();
    }
    runtime_ = std::make_unique<SyntheticRuntime>(planes_, store_);
    return Status::Ok();
  }
  void TearDown() override {
    runtime_.reset();
    if (disk_store_) disk_store_->SetEvictionSink(nullptr);
    if (memory_store_) memory_store_->SetEvictionSink(nullptr);
    if (store_ != nullptr) {
      EXPECT_TRUE(store_->Close().ok());
    }
  }
  // One more turn of `conversation` (a new one when unset) of 640 tokens:
  // one 10-page record, stored; its key.
  PrefixKey Turn(std::optional<uint32_t> conversation = std::nullopt) {
    const uint32_t c = conversation.value_or(runtime_->NewConversation());
    EXPECT_TRUE(runtime_->Turn(c, 640).ok());
    EXPECT_TRUE(runtime_->WaitForStores().ok());
    Settle();
    const std::span<const Token> tokens = runtime_->tokens(c);
    return PrefixHistory(tokens).key_at(tokens.size());
  }
  PrefixKey Conversation() { return Turn(); }
  // Polls until the tier is idle after what each poll started (a read, an
  // unlink).
  void Settle() {
    for (int i = 0; i < 6; ++i) {
      if (disk_store_) {
        ASSERT_TRUE(disk_store_->WaitIdle(10s));
      }
      std::vector<StoreEvent> events;
      store_->Poll(0, events);
    }
  }
  TierStats tier_stats() const {
    return GetParam() == Tier::kDisk ? store_->Stats().disk : store_->Stats().memory;
  }
  // What the tier's records occupy, in units of one record.
  uint64_t records_charged() const {
    return GetParam() == Tier::kDisk ? disk_store_->used_bytes() / record_bytes_
                                     : store_->Stats().slots_in_use / record_slots_;
  }

  ScratchDir dir_;
  HostPlanes planes_{*PresetGeometry("tiny", 1, 512, 16)};
  uint64_t record_bytes_ = 0;
  uint64_t record_slots_ = 0;
  std::unique_ptr<LocalDisk> disk_;
  std::unique_ptr<DiskStore> disk_store_;
  std::unique_ptr<MemoryStore> memory_store_;
  HostStore* store_ = nullptr;
  RecordIntake* intake_ = nullptr;
  DemotionSink sink_;
  std::unique_ptr<SyntheticRuntime> runtime_;
};

#define OPEN_OR_SKIP(records) STRATA_OPEN_OR_SKIP(Open(records))

TEST_P(TierDemotionTest, AboveTheFloorTheColdestRecordIsOfferedKeptAndLetGoOnceAccepted) {
  OPEN_OR_SKIP(3);
  sink_.takes = true;
  const PrefixKey first = Conversation();
  (void)Conversation();
  EXPECT_TRUE(sink_.demoted.empty()) << "two of three records are below the floor";
  (void)Conversation();  // fits the limit: no store needs room
  ASSERT_EQ(sink_.demoted.size(), 1u) << "one offer at a time, awaiting its outcome";
  EXPECT_EQ(sink_.demoted[0], first) << "the least recently used record";
  EXPECT_EQ(tier_stats().records, 3u) << "kept until accepted";
  EXPECT_EQ(tier_stats().demoted_total, 0u);
  EXPECT_TRUE(intake_->Holds(first));

  sink_.accept = {first};
  Settle();
  const TierStats s = tier_stats();
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.demoted_total, 1u);
  EXPECT_EQ(s.evicted_total, 1u);
  EXPECT_FALSE(intake_->Holds(first));
  EXPECT_EQ(records_charged(), 2u) << "its file was unlinked, its slots freed";
  EXPECT_EQ(sink_.demoted.size(), 1u) << "below the floor again: no more demotions";
  EXPECT_TRUE(sink_.evicted.empty());
}

TEST_P(TierDemotionTest, ARecordGivenUpStaysAndIsNotOfferedAgain) {
  OPEN_OR_SKIP(3);
  sink_.takes = true;
  const PrefixKey first = Conversation();
  const PrefixKey second = Conversation();
  (void)Conversation();
  ASSERT_EQ(sink_.demoted.size(), 1u);
  sink_.give_up = {first};
  Settle();
  EXPECT_EQ(tier_stats().records, 3u) << "a demotion never discards";
  ASSERT_EQ(sink_.demoted.size(), 2u) << "the next coldest is offered instead";
  EXPECT_EQ(sink_.demoted[1], second);
  EXPECT_EQ(std::count(sink_.demoted.begin(), sink_.demoted.end(), first), 1);

  // Capacity eviction still hands the given-up record over as usual.
  sink_.takes = false;
  (void)Conversation();
  ASSERT_EQ(sink_.evicted.size(), 1u);
  EXPECT_EQ(sink_.evicted[0], first);
}

TEST_P(TierDemotionTest, AnAcceptedRecordThatGainedAChildStaysAndIsNotOfferedAtEviction) {
  OPEN_OR_SKIP(4);
  sink_.takes = true;
  const uint32_t c = runtime_->NewConversation();
  const PrefixKey root = Turn(c);
  for (int i = 0; i < 3; ++i) (void)Conversation();  // four of four: above the floor
  ASSERT_EQ(sink_.demoted.size(), 1u);
  ASSERT_EQ(sink_.demoted[0], root);
  // The root gains a child before the manager's answer comes.
  sink_.takes = false;
  (void)Turn(c);
  sink_.accept = {root};
  Settle();
  EXPECT_TRUE(intake_->Holds(root)) << "a parent stays: its child needs it";
  EXPECT_EQ(tier_stats().demoted_total, 0u);
  // Capacity eviction takes the child, then the root, and never offers the
  // root (it is pooled already).
  for (int i = 0; i < 6; ++i) (void)Conversation();
  EXPECT_FALSE(intake_->Holds(root));
  EXPECT_EQ(std::count(sink_.evicted.begin(), sink_.evicted.end(), root), 0);
}

TEST_P(TierDemotionTest, ASinkThatDoesNotTakeDemotionsGetsOnlyWhatCapacityEvictionHandsOver) {
  OPEN_OR_SKIP(3);
  for (int i = 0; i < 3; ++i) (void)Conversation();
  EXPECT_TRUE(sink_.demoted.empty());
  EXPECT_EQ(tier_stats().records, 3u);

  (void)Conversation();  // needs room: capacity eviction hands one over
  EXPECT_EQ(sink_.evicted.size(), 1u);
  EXPECT_TRUE(sink_.demoted.empty());
  EXPECT_EQ(tier_stats().demoted_total, 0u);
  EXPECT_EQ(tier_stats().evicted_total, 1u);
}

INSTANTIATE_TEST_SUITE_P(EndOfChain, TierDemotionTest,
                         ::testing::Values(Tier::kMemory, Tier::kDisk),
                         [](const ::testing::TestParamInfo<Tier>& info) {
                           return info.param == Tier::kDisk ? "Disk" : "Memory";
                         });

}  // namespace
}  // namespace strata
