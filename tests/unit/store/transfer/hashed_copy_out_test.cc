// Copy-out fused with the record checksums: a hash_records job on one rank
// comes back with XXH3 of every page record and the row segment as they were
// left in host memory; other jobs, and several ranks, come back without.
#include <gtest/gtest.h>

#include <cstring>

#include "launch/presets.h"
#include "store/base/aligned_buffer.h"
#include "store/record/checksum.h"
#include "store/transfer/hashed_copy_out.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

constexpr auto kBound = std::chrono::seconds(30);

struct Job {
  TransferJob job;
  AlignedBuffer pages;
  AlignedBuffer row;
};

// A copy-out of pages 3..5 and row slot 1 into fresh host memory filled with
// garbage (so unzeroed padding would show in the sums).
enum class Hash : unsigned char { kNo, kYes };

Job CopyOut(const RecordLayout& layout, Hash hash) {
  Job j{
      {}, AlignedBuffer(3 * layout.page_record_bytes()), AlignedBuffer(layout.row_segment_bytes())};
  std::memset(j.pages.data(), 0xa5, j.pages.size());
  std::memset(j.row.data(), 0x5a, j.row.size());
  j.job.id = JobId(1);
  j.job.direction = TransferDirection::kDeviceToHost;
  for (uint32_t i = 0; i < 3; ++i) {
    j.job.page_ids.emplace_back(3 + i);
    j.job.page_records.push_back(reinterpret_cast<uint8_t*>(j.pages.data()) +
                                 i * layout.page_record_bytes());
  }
  j.job.row_slot = StateSlot(1);
  j.job.row_pieces.push_back({reinterpret_cast<uint8_t*>(j.row.data()), j.row.size()});
  j.job.hash_records = hash == Hash::kYes;
  return j;
}

void FillPlanes(HostPlanes& planes) {
  const CacheGeometry& g = planes.geometry();
  for (uint32_t r = 0; r < g.ranks.size(); ++r) {
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (uint64_t id = 0; id < 8; ++id) {
        std::memset(planes.page(r, p, PageId(id)), static_cast<int>(id * 9 + p + r + 1),
                    g.ranks[r].page_planes[p].unit_bytes);
      }
    }
    std::memset(planes.row(r, StateSlot(1)), 0x33, g.ranks[r].row.unit_bytes);
  }
}

TransferCompletion RunOne(Transfers& t, TransferJob job) {
  EXPECT_TRUE(t.Submit(std::move(job)).ok());
  EXPECT_TRUE(t.WaitForCompletion(kBound));
  std::vector<TransferCompletion> done;
  t.Poll(done);
  EXPECT_EQ(done.size(), 1u);
  return done.empty() ? TransferCompletion{} : done[0];
}

TEST(HashedCopyOutTest, OneRankReturnsTheSumsOfTheBytesLeftInHostMemory) {
  HostPlanes planes(*PresetGeometry("tiny", 1, 16, 4));
  FillPlanes(planes);
  const RecordLayout layout(planes.geometry());
  ASSERT_TRUE(CanHashCopyOut(layout));
  Result<std::unique_ptr<Transfers>> t = MakeHostTransfers(planes);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Job j = CopyOut(layout, Hash::kYes);
  TransferCompletion c = RunOne(**t, j.job);
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  ASSERT_EQ(c.page_sums.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c.page_sums[i], Xxh3(j.pages.span().subspan(i * layout.page_record_bytes(),
                                                          layout.page_record_bytes())))
        << "page " << i;
  }
  ASSERT_TRUE(c.row_sum.has_value());
  EXPECT_EQ(*c.row_sum, Xxh3(j.row.span()));
  EXPECT_TRUE((*t)->Close(kBound).ok());
}

TEST(HashedCopyOutTest, AJobThatDoesNotAskOrSeveralRanksComeBackWithoutSums) {
  HostPlanes one(*PresetGeometry("tiny", 1, 16, 4));
  FillPlanes(one);
  Result<std::unique_ptr<Transfers>> t1 = MakeHostTransfers(one);
  ASSERT_TRUE(t1.ok());
  TransferCompletion plain = RunOne(**t1, CopyOut(RecordLayout(one.geometry()), Hash::kNo).job);
  EXPECT_TRUE(plain.status.ok());
  EXPECT_TRUE(plain.page_sums.empty());
  EXPECT_FALSE(plain.row_sum.has_value());
  EXPECT_TRUE((*t1)->Close(kBound).ok());

  HostPlanes two(*PresetGeometry("tiny", 2, 16, 4));
  FillPlanes(two);
  EXPECT_FALSE(CanHashCopyOut(RecordLayout(two.geometry())));
  Result<std::unique_ptr<Transfers>> t2 = MakeHostTransfers(two);
  ASSERT_TRUE(t2.ok());
  Job j = CopyOut(RecordLayout(two.geometry()), Hash::kYes);
  TransferCompletion c = RunOne(**t2, j.job);
  EXPECT_TRUE(c.status.ok());
  EXPECT_TRUE(c.page_sums.empty());
  EXPECT_FALSE(c.row_sum.has_value());
  EXPECT_TRUE((*t2)->Close(kBound).ok());
}

}  // namespace
}  // namespace strata
