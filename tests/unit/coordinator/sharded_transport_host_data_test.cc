// ShardedTransport's host-data jobs (wire protocol 3): a fetch takes each
// peer's share from its JobData, a peer finishing without its bytes stops the
// transport, a store sends each peer its share before the Job (paced when it
// is larger than a link queues), and the bytes and jobs in flight are
// bounded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/sharded_transport.h"
#include "tests/unit/coordinator/sharded_transport_rig.h"

namespace strata {
namespace {

using namespace sharded_testing;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;
using ::testing::HasSubstr;

// A host-data fetch of a 2-page record with a row over rank zero and one
// peer: `memory` backs both ranks' shares, `page` bytes a page, `row` the row.
RecordJob HostFetch(uint64_t id) {
  RecordJob j;
  j.id = JobId(id);
  j.kind = RecordJobKind::kFetch;
  j.key = Key(128);
  j.tail_pages = 2;
  j.host_data = true;
  j.host_row = true;
  return j;
}
std::vector<HostBuffers> Shares(std::vector<std::byte>& memory, uint32_t ranks, uint64_t page,
                                uint64_t row) {
  memory.assign(ranks * (2 * page + row), std::byte{0});
  std::vector<HostBuffers> out(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    std::byte* base = memory.data() + r * (2 * page + row);
    out[r].pages = {{base, page}, {base + page, page}};
    out[r].row = {{base + 2 * page, row}};
  }
  return out;
}

// Submits HostFetch(1) over rank zero and one peer into `memory`; the job
// as the peer received it.
RecordJob BeginHostFetch(Rig& rig, std::vector<std::byte>& memory) {
  rig.StartPeers();
  const std::vector<HostBuffers> shares = Shares(memory, 2, 4096, 512);
  EXPECT_TRUE(rig.transport->SubmitShares(HostFetch(1), shares).ok());
  return rig.NextJob(1);
}

TEST(ShardedTransportTest, AHostFetchTakesEachPeersShareFromItsJobData) {
  Rig rig(1);
  std::vector<std::byte> memory;
  const RecordJob at1 = BeginHostFetch(rig, memory);
  EXPECT_TRUE(at1.host_data);
  // The peer read its file: these bytes, as JobData, then its answer.
  std::vector<std::byte> peer(2 * 4096 + 512);
  for (size_t i = 0; i < peer.size(); ++i) peer[i] = static_cast<std::byte>(i * 13);
  HostBuffers read{.pages = {{peer.data(), 2 * 4096 + 512}}, .row = {}};
  for (const wire::JobData& d : ChunksOf(at1.id, read)) {
    ASSERT_TRUE(rig.sides[0]->link->Send(d).ok());
  }
  rig.sides[0]->Answer(at1, RankId(1));
  std::optional<RecordJobDone> done = rig.NextDone();
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->status.ok()) << done->status.ToString();
  EXPECT_TRUE(std::equal(peer.begin(), peer.end(), memory.begin() + (2 * 4096 + 512)))
      << "rank 1's share holds what it sent";
}

TEST(ShardedTransportTest, APeerThatFinishesAHostFetchWithoutItsBytesStopsTheTransport) {
  Rig rig(1);
  std::vector<std::byte> memory;
  const RecordJob at1 = BeginHostFetch(rig, memory);
  rig.sides[0]->Answer(at1, RankId(1));  // OK, but no JobData came
  ASSERT_TRUE(rig.WaitStopped());
  EXPECT_THAT(rig.transport->stopped().message(), HasSubstr("having sent 0 of its 8704 bytes"));
}

TEST(ShardedTransportTest, AHostStoreSendsEachPeerItsShareBeforeTheJob) {
  Rig rig(1);
  rig.StartPeers();
  std::vector<std::byte> memory;
  std::vector<HostBuffers> shares = Shares(memory, 2, 4096, 512);
  for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<std::byte>(i * 7);
  RecordJob store = HostFetch(2);
  store.kind = RecordJobKind::kStore;
  ASSERT_TRUE(rig.transport->SubmitShares(store, shares).ok());
  std::optional<wire::Message> first = rig.sides[0]->events.messages.Pop(wire::testing::kEventWait);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(std::holds_alternative<wire::JobData>(*first)) << wire::MessageName(*first);
  const wire::JobData& d = std::get<wire::JobData>(*first);
  EXPECT_EQ(d.total, 2 * 4096 + 512u);
  EXPECT_TRUE(std::equal(d.data.begin(), d.data.end(), memory.begin() + (2 * 4096 + 512)))
      << "rank 1 receives its own share";
  const RecordJob at1 = rig.NextJob(1);
  EXPECT_EQ(at1, store);
}

TEST(ShardedTransportTest, AShareAboveALinksSendQueueIsPacedAndArrivesWhole) {
  Rig rig(1);  // the peer reads nothing until the store was submitted
  std::vector<std::byte> memory;
  // 2 pages of 36 MiB and a row: 72 MiB per rank, more than a link queues
  // (64 MiB), so it goes only paced.
  constexpr uint64_t kPage = uint64_t{36} << 20;
  std::vector<HostBuffers> shares = Shares(memory, 2, kPage, 512);
  for (size_t i = 0; i < memory.size(); i += 4093) memory[i] = static_cast<std::byte>(i / 4093);
  RecordJob store = HostFetch(5);
  store.kind = RecordJobKind::kStore;
  ASSERT_TRUE(rig.transport->SubmitShares(store, shares).ok());
  rig.StartPeers();
  std::vector<std::byte> got(2 * kPage + 512);
  HostDataReceiver receiver(HostBuffers{.pages = {{got.data(), got.size()}}, .row = {}});
  std::optional<wire::Message> m;
  const auto until = std::chrono::steady_clock::now() + wire::testing::kEventWait;
  while (std::chrono::steady_clock::now() < until) {
    m = rig.sides[0]->events.messages.Pop(5ms);
    if (!m) {
      rig.transport->Poll(rig.done);  // the owner sends more once the link drained
      continue;
    }
    if (!std::holds_alternative<wire::JobData>(*m)) break;
    ASSERT_TRUE(receiver.Add(std::get<wire::JobData>(*m)).ok());
  }
  ASSERT_TRUE(m.has_value() && std::holds_alternative<wire::Job>(*m))
      << "no Job after " << receiver.received() << " bytes";
  EXPECT_TRUE(receiver.complete()) << "the Job came before the whole share";
  EXPECT_TRUE(std::equal(got.begin(), got.end(), memory.begin() + got.size()))
      << "rank 1 receives its own share, byte for byte";
  rig.sides[0]->Answer(std::get<wire::Job>(*m).record, RankId(1));
  std::optional<RecordJobDone> done = rig.NextDone();
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->status.ok()) << done->status.ToString();
  EXPECT_EQ(rig.transport->PeerReports()[0].errors_by_reason.count("send_queue_full"), 0u);
}

TEST(ShardedTransportTest, AnAnswerToAStoreWhoseJobWasNotSentYetStopsTheTransport) {
  Rig rig(1);  // the peer reads nothing: the share waits for its link
  std::vector<std::byte> memory;
  std::vector<HostBuffers> shares = Shares(memory, 2, uint64_t{36} << 20, 512);
  RecordJob store = HostFetch(6);
  store.kind = RecordJobKind::kStore;
  ASSERT_TRUE(rig.transport->SubmitShares(store, shares).ok());
  rig.sides[0]->Answer(store, RankId(1));  // before its Job could have come
  ASSERT_TRUE(rig.WaitStopped());
  EXPECT_THAT(rig.transport->stopped().message(), HasSubstr("before its Job was sent"));
}

TEST(ShardedTransportTest, HostDataJobsInFlightAreBoundedInNumber) {
  Rig rig(1);
  rig.StartPeers();
  std::vector<std::byte> tiny(16);
  std::vector<HostBuffers> shares(2);
  for (HostBuffers& b : shares) b.pages = {{tiny.data(), 1}};
  RecordJob fetch = HostFetch(1);
  fetch.host_row = false;
  for (uint64_t id = 1; id <= kHostDataJobsInFlightMax; ++id) {
    fetch.id = JobId(id);
    ASSERT_TRUE(rig.transport->SubmitShares(fetch, shares).ok()) << id;
  }
  fetch.id = JobId(kHostDataJobsInFlightMax + 1);
  EXPECT_EQ(rig.transport->SubmitShares(fetch, shares).code(), StatusCode::kBusy);
}

TEST(ShardedTransportTest, HostDataInFlightIsBoundedAndAShareAboveTheBoundIsRefused) {
  Rig rig(1);
  rig.StartPeers();
  // Pieces of the sizes named: the checks refuse before any byte is read.
  std::vector<std::byte> tiny(16);
  const uint64_t big = kHostDataInFlightBytesMax / 2 + 1;
  std::vector<HostBuffers> two(2);
  for (HostBuffers& b : two) b.pages = {{tiny.data(), big / 2}, {tiny.data(), big - big / 2}};
  RecordJob fetch = HostFetch(1);
  fetch.host_row = false;
  ASSERT_TRUE(rig.transport->SubmitShares(fetch, two).ok());
  fetch.id = JobId(2);
  EXPECT_EQ(rig.transport->SubmitShares(fetch, two).code(), StatusCode::kBusy);
  std::vector<HostBuffers> huge(2);
  for (HostBuffers& b : huge) {
    b.pages = {{tiny.data(), kHostDataInFlightBytesMax}, {tiny.data(), 1}};
  }
  fetch.id = JobId(3);
  EXPECT_EQ(rig.transport->SubmitShares(fetch, huge).code(), StatusCode::kInvalidArgument);
  std::vector<HostBuffers> uneven = two;
  uneven[1].pages.pop_back();
  fetch.id = JobId(4);
  EXPECT_EQ(rig.transport->SubmitShares(fetch, uneven).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.transport->SubmitShares(fetch, {two.data(), 1}).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
