// ClaimCopier: a granted chain copied out of a real memfd arena on the
// copier's thread, checked as it is copied, handed back in submission order.
#include "coordinator/pool/claim_copier.h"

#include <gtest/gtest.h>

#include <chrono>

#include "coordinator/pool/slot_copies.h"
#include "store/record/checksum.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

using namespace std::chrono_literals;
using testing::Key;
using testing::Pattern;

constexpr uint64_t kSlotBytes = 8192;

// An arena of 8 slots holding two records: the first over slots 1 and 2
// (1.5 slots of bytes), the second in slot 5.
struct Granted {
  Granted() {
    arena = std::shared_ptr<Arena>(
        *Arena::Create("claim-copier-test", kSlotBytes, 8, HugePages::kNever));
    slots = std::make_shared<MappedSlots>(arena);
    Put(Key(64), {SlotId(1), SlotId(2)}, kSlotBytes * 3 / 2, 0x11);
    Put(Key(128), {SlotId(5)}, 100, 0x77);
  }
  void Put(const PrefixKey& key, std::vector<SlotId> slots, uint64_t bytes, uint8_t seed) {
    std::vector<std::byte> image = Pattern(bytes, seed);
    HashPipeline hash;
    Result<uint64_t> sum = CopyIntoSlots(*arena, slots, image, hash);
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_EQ(*sum, Xxh3(image));
    records.push_back({.key = key, .bytes = bytes, .checksum = *sum, .slots = std::move(slots)});
    images.push_back(std::move(image));
  }
  ClaimCopyJob Job(uint64_t id) const {
    return {.id = id,
            .slots = slots,
            .claim = ClaimId(1),
            .records = records,
            .chain = {Key(64), Key(128)},
            .buffers = {},
            .status = Status::Ok()};
  }
  std::shared_ptr<Arena> arena;
  std::shared_ptr<SlotAccess> slots;
  std::vector<ClaimedRecord> records;
  std::vector<std::vector<std::byte>> images;
};

// The jobs `copier` handed back once `n` came (within a bound).
std::vector<ClaimCopyJob> AwaitDone(ClaimCopier& copier, WakeSignal& signal, size_t n) {
  std::vector<ClaimCopyJob> done;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (done.size() < n && std::chrono::steady_clock::now() < deadline) {
    for (ClaimCopyJob& j : copier.TakeDone()) done.push_back(std::move(j));
    if (done.size() < n) (void)signal.WaitFor(100ms);
  }
  return done;
}

TEST(ClaimCopierTest, AGrantedChainComesBackCopiedAndCheckedInSubmissionOrder) {
  Granted g;
  ClaimCopier copier;
  auto signal = std::make_shared<WakeSignal>();
  copier.NotifyOnProgress(signal);
  copier.Submit(g.Job(7));
  copier.Submit(g.Job(8));
  std::vector<ClaimCopyJob> done = AwaitDone(copier, *signal, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, 7u);
  EXPECT_EQ(done[1].id, 8u);
  for (const ClaimCopyJob& j : done) {
    ASSERT_TRUE(j.status.ok()) << j.status.ToString();
    ASSERT_EQ(j.buffers.size(), 2u);
    EXPECT_EQ(j.buffers[0], g.images[0]);
    EXPECT_EQ(j.buffers[1], g.images[1]);
  }
  EXPECT_GE(signal->notifications(), 1u) << "the owner's signal was raised";
}

TEST(ClaimCopierTest, ReusedBuffersAreResizedAndOverwritten) {
  Granted g;
  ClaimCopyJob job = g.Job(1);
  job.buffers = {std::vector<std::byte>(g.images[0].size(), std::byte{0xee}),
                 std::vector<std::byte>(5, std::byte{0xee})};
  HashPipeline hash;
  RunClaimCopy(job, hash);
  ASSERT_TRUE(job.status.ok()) << job.status.ToString();
  EXPECT_EQ(job.buffers[0], g.images[0]);
  EXPECT_EQ(job.buffers[1], g.images[1]);
}

TEST(ClaimCopierTest, AByteChangedInASlotAnotherRecordOrAShortGrantFailsTheCopy) {
  Granted g;
  g.arena->Slot(SlotId(2))[10] ^= std::byte{1};  // inside the first record's second slot
  HashPipeline hash;
  ClaimCopyJob flipped = g.Job(1);
  RunClaimCopy(flipped, hash);
  EXPECT_EQ(flipped.status.code(), StatusCode::kCorruption);
  EXPECT_NE(flipped.status.message().find("checksum"), std::string::npos);

  Granted other;
  ClaimCopyJob swapped = other.Job(2);
  std::swap(swapped.chain[0], swapped.chain[1]);
  RunClaimCopy(swapped, hash);
  EXPECT_EQ(swapped.status.code(), StatusCode::kCorruption) << "a record that is not chain[i]";

  ClaimCopyJob short_grant = other.Job(3);
  short_grant.records.pop_back();
  RunClaimCopy(short_grant, hash);
  EXPECT_EQ(short_grant.status.code(), StatusCode::kCorruption) << "fewer records than the chain";

  ClaimCopyJob outside = other.Job(4);
  outside.records[1].slots = {SlotId(8)};  // past the arena's 8 slots
  RunClaimCopy(outside, hash);
  EXPECT_EQ(outside.status.code(), StatusCode::kCorruption);
}

TEST(ClaimCopierTest, DestroyedWithJobsQueuedItReturns) {
  Granted g;
  {
    ClaimCopier copier;
    for (uint64_t id = 1; id <= 50; ++id) copier.Submit(g.Job(id));
  }  // the job in hand finishes, the rest are dropped
  SUCCEED();
}

}  // namespace
}  // namespace strata::pool
