// ShardedTransport against scripted peers over real loopback links and a
// scripted rank-zero transport: all-ranks completion, partial-store cleanup,
// a peer that stops reading, job timeouts on an injected clock, lost links,
// protocol errors and garbage from a joined peer.
#include "coordinator/sharded_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include "tests/unit/coordinator/sharded_transport_rig.h"
#include "tests/unit/wire/wire_test_util.h"

namespace strata {
namespace {

using namespace sharded_testing;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using wire::testing::LoopbackListener;
using wire::testing::Recorder;

TEST(ShardedTransportTest, SendsTheSameJobToEveryPeerAndCompletesWhenAllFinished) {
  Rig rig(2);
  rig.StartPeers();
  const RecordJob job = StoreJob(1);
  ASSERT_TRUE(rig.transport->Submit(job).ok());
  const RecordJob at1 = rig.NextJob(1);
  const RecordJob at2 = rig.NextJob(2);
  EXPECT_EQ(at1, job);
  EXPECT_EQ(at2, job);
  rig.sides[0]->Answer(at1, RankId(1));
  // Rank zero and rank 1 are done; rank 2 is not: no completion yet.
  std::vector<RecordJobDone> out;
  for (int i = 0; i < 5; ++i) {
    (void)rig.transport->WaitForCompletion(10ms);
    rig.transport->Poll(out);
  }
  EXPECT_TRUE(out.empty());
  rig.sides[1]->Answer(at2, RankId(2));
  std::optional<RecordJobDone> done = rig.NextDone();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->id, JobId(1));
  EXPECT_TRUE(done->status.ok()) << done->status.ToString();
  EXPECT_EQ(done->bytes, 10u + 5u + 5u);
  EXPECT_TRUE(rig.transport->stopped().ok());
}

TEST(ShardedTransportTest, TheLastRanksCompletionRaisesTheOwnersSignal) {
  Rig rig(2);
  rig.StartPeers();
  auto signal = std::make_shared<WakeSignal>();
  rig.transport->NotifyOnCompletion(signal);
  const RecordJob job = UnlinkJob(3);
  ASSERT_TRUE(rig.transport->Submit(job).ok());
  const RecordJob at1 = rig.NextJob(1);
  const RecordJob at2 = rig.NextJob(2);
  rig.sides[0]->Answer(at1, RankId(1));
  rig.sides[1]->Answer(at2, RankId(2));
  // The owner sleeps on its own signal only; each peer's JobDone raises it.
  constexpr int kWakeupsMax = 16;
  std::vector<RecordJobDone> out;
  for (int i = 0; i < kWakeupsMax && out.empty(); ++i) {
    ASSERT_TRUE(signal->WaitFor(wire::testing::kEventWait)) << "no event raised the signal";
    rig.transport->Poll(out);
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, JobId(3));
  EXPECT_TRUE(out[0].status.ok()) << out[0].status.ToString();
}

TEST(ShardedTransportTest, ThePeersAnswersWakeTheOwnerOnceForAJob) {
  Rig rig(3);
  rig.StartPeers();
  auto signal = std::make_shared<WakeSignal>();
  rig.transport->NotifyOnCompletion(signal);
  const RecordJob job = UnlinkJob(9);
  ASSERT_TRUE(rig.transport->Submit(job).ok());  // rank zero's share finishes at once
  std::vector<RecordJob> at(3);
  for (uint32_t r = 1; r <= 3; ++r) at[r - 1] = rig.NextJob(r);
  std::vector<RecordJobDone> out;
  rig.transport->Poll(out);  // takes rank zero's completion
  ASSERT_TRUE(out.empty());
  (void)signal->WaitUntil(std::chrono::steady_clock::now());  // lowered
  const uint64_t before = signal->notifications();
  // In any order of arrival, only the answer queued last raises the signal,
  // and by then every answer is queued.
  rig.sides[2]->Answer(at[2], RankId(3));
  rig.sides[0]->Answer(at[0], RankId(1));
  rig.sides[1]->Answer(at[1], RankId(2));
  ASSERT_TRUE(signal->WaitFor(wire::testing::kEventWait)) << "the last answer raised nothing";
  rig.transport->Poll(out);
  ASSERT_EQ(out.size(), 1u) << "woken before every answer was queued";
  EXPECT_EQ(out[0].id, JobId(9));
  EXPECT_TRUE(out[0].status.ok()) << out[0].status.ToString();
  EXPECT_EQ(signal->notifications() - before, 1u);
}

TEST(ShardedTransportTest, AnAnswerForAnUnknownJobStillWakesTheOwner) {
  Rig rig(2);
  rig.StartPeers();
  auto signal = std::make_shared<WakeSignal>();
  rig.transport->NotifyOnCompletion(signal);
  rig.sides[0]->Answer(StoreJob(42), RankId(1));
  ASSERT_TRUE(signal->WaitFor(wire::testing::kEventWait));
  std::vector<RecordJobDone> out;
  rig.transport->Poll(out);
  EXPECT_THAT(rig.transport->stopped().message(), HasSubstr("rank 1 reported job 42"));
}

TEST(ShardedTransportTest, FilesystemFullOnOnePeerSurvivesAggregation) {
  Rig rig(2);
  rig.StartPeers();
  ASSERT_TRUE(rig.transport->Submit(UnlinkJob(4)).ok());
  rig.sides[0]->Answer(rig.NextJob(1), RankId(1), Status::FsFull("no space on /nvme"), true);
  rig.sides[1]->Answer(rig.NextJob(2), RankId(2));
  std::optional<RecordJobDone> done = rig.NextDone();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status.code(), StatusCode::kFsFull);
  EXPECT_THAT(done->status.message(), HasSubstr("rank 1: no space on /nvme"));
  EXPECT_TRUE(done->fs_full);
}

TEST(ShardedTransportTest, APartialStoreIsUnlinkedFromTheRanksThatWroteBeforeItFails) {
  Rig rig(2);
  rig.StartPeers();
  ASSERT_TRUE(rig.transport->Submit(StoreJob(7)).ok());
  rig.sides[0]->Answer(rig.NextJob(1), RankId(1), Status::IoError("write failed"));
  rig.sides[1]->Answer(rig.NextJob(2), RankId(2));
  // Rank 2 and rank zero wrote: each gets an unlink of the same record.
  const RecordJob cleanup = rig.NextJob(2);
  EXPECT_EQ(cleanup.kind, RecordJobKind::kUnlink);
  EXPECT_EQ(cleanup.key, Key(128));
  (void)rig.transport->WaitForCompletion(20ms);
  rig.transport->Poll(rig.done);
  EXPECT_TRUE(rig.done.empty()) << "the failure was reported before its cleanup finished";
  ASSERT_EQ(rig.local->submitted.size(), 2u);
  EXPECT_EQ(rig.local->submitted[1], cleanup);
  EXPECT_EQ(rig.sides[0]->events.messages.size(), 0u) << "rank 1 wrote nothing to unlink";
  rig.sides[1]->Answer(cleanup, RankId(2));
  std::optional<RecordJobDone> done = rig.NextDone();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->id, JobId(7));
  EXPECT_EQ(done->status.code(), StatusCode::kIoError);
  EXPECT_EQ(done->status.message(), "rank 1: write failed");
}

TEST(ShardedTransportTest, AFailedCleanupIsReportedWithTheFailure) {
  Rig rig(2);
  rig.StartPeers();
  rig.local->unlink_status = Status::IoError("unlink refused");
  ASSERT_TRUE(rig.transport->Submit(StoreJob(8)).ok());
  rig.sides[1]->Answer(rig.NextJob(2), RankId(2), Status::FsFull("full"), true);
  rig.sides[0]->Answer(rig.NextJob(1), RankId(1));
  const RecordJob cleanup = rig.NextJob(1);
  EXPECT_EQ(cleanup.kind, RecordJobKind::kUnlink);
  rig.sides[0]->Answer(cleanup, RankId(1));
  std::optional<RecordJobDone> done = rig.NextDone();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status.code(), StatusCode::kFsFull);
  EXPECT_TRUE(done->fs_full);
  EXPECT_THAT(done->status.message(), HasSubstr("rank 2: full"));
  EXPECT_THAT(done->status.message(),
              HasSubstr("unlinking the file from the ranks that wrote it failed: rank 0: "
                        "unlink refused"));
}

TEST(ShardedTransportTest, APeerThatStopsReadingFailsTheJobAndNeverBlocksTheCaller) {
  wire::LinkOptions tiny_queue = wire::testing::QuietLinkOptions();
  tiny_queue.send_queue_frames_max = 2;
  tiny_queue.send_queue_bytes_max = 1 << 20;
  tiny_queue.close_timeout = 100ms;
  ShardedOptions options;
  options.max_outstanding_jobs = 100'000;
  Rig rig(1, tiny_queue, options);  // the peer side is never started: it never reads
  RecordJob big;
  big.kind = RecordJobKind::kFetch;
  big.key = Key(64);
  big.tail_pages = 1 << 16;
  big.page_ids.assign(big.tail_pages, PageId(1));  // 256 KiB frames
  std::optional<RecordJobDone> refused;
  std::vector<RecordJobDone> out;
  constexpr uint64_t kAttemptsMax = 4096;  // 1 GiB: far beyond socket buffers
  for (uint64_t id = 1; id <= kAttemptsMax && !refused; ++id) {
    big.id = JobId(id);
    ASSERT_TRUE(rig.transport->Submit(big).ok());
    rig.transport->Poll(out);
    for (RecordJobDone& d : out) {
      if (!d.status.ok()) refused = d;
    }
    out.clear();
  }
  ASSERT_TRUE(refused.has_value()) << "no job failed against a peer that never reads";
  EXPECT_EQ(refused->status.code(), StatusCode::kBusy);
  EXPECT_THAT(refused->status.message(), HasSubstr("rank 1 is not reading its record link"));
  EXPECT_TRUE(rig.transport->stopped().ok());  // a full queue fails the job, not the transport
  std::vector<PeerLinkReport> reports = rig.transport->PeerReports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_GE(reports[0].errors_by_reason["send_queue_full"], 1u);
  EXPECT_EQ(rig.transport->Close(200ms).code(), StatusCode::kOk);
  EXPECT_FALSE(rig.transport->peer_drain_status().ok());
}

TEST(ShardedTransportTest, AJobNotFinishedWithinTheTimeoutStopsTheTransport) {
  ShardedOptions options;
  options.job_timeout = 5s;
  Rig rig(2, {}, options);
  rig.StartPeers();
  ASSERT_TRUE(rig.transport->Submit(StoreJob(3)).ok());
  rig.sides[0]->Answer(rig.NextJob(1), RankId(1));
  (void)rig.NextJob(2);  // rank 2 never answers
  ASSERT_TRUE(rig.WaitJobsDone(1, 1));
  rig.clock.now += 4s;
  std::vector<RecordJobDone> out;
  rig.transport->Poll(out);
  EXPECT_TRUE(rig.transport->stopped().ok());
  rig.clock.now += 1s;
  ASSERT_TRUE(rig.WaitStopped());
  EXPECT_THAT(rig.transport->stopped().message(),
              HasSubstr("job 3 (store of " + Key(128).ToFileStem() +
                        ") was not finished by rank(s) 2 within 5000 ms"));
  EXPECT_EQ(rig.transport->Submit(StoreJob(4)).code(), StatusCode::kAborted);
  // A late answer changes nothing: the job is never reported.
  rig.sides[1]->Answer(StoreJob(3), RankId(2));
  for (int i = 0; i < 5; ++i) {
    (void)rig.transport->WaitForCompletion(10ms);
    rig.transport->Poll(out);
  }
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(rig.transport->PeerReports()[1].errors_by_reason["timeout"], 1u);
  EXPECT_EQ(rig.transport->PeerReports()[1].state, "failed");
}

TEST(ShardedTransportTest, ALinkLostWithAJobOutstandingStopsTheTransport) {
  Rig rig(2);
  rig.StartPeers();
  ASSERT_TRUE(rig.transport->Submit(StoreJob(5)).ok());
  (void)rig.NextJob(1);
  rig.sides[0]->link->Close();  // rank 1 goes away with the job
  ASSERT_TRUE(rig.WaitStopped());
  EXPECT_THAT(rig.transport->stopped().message(), HasSubstr("the record link to rank 1 closed"));
  EXPECT_THAT(rig.transport->stopped().message(), HasSubstr("with jobs outstanding"));
  EXPECT_EQ(rig.transport->Submit(StoreJob(6)).code(), StatusCode::kAborted);
  EXPECT_EQ(rig.transport->PeerReports()[0].errors_by_reason["link_lost"], 1u);
}

TEST(ShardedTransportTest, ACompletionForAnUnknownJobIsAProtocolError) {
  Rig rig(1);
  rig.StartPeers();
  rig.sides[0]->Answer(StoreJob(99), RankId(1));
  ASSERT_TRUE(rig.WaitStopped());
  EXPECT_THAT(rig.transport->stopped().message(),
              HasSubstr("rank 1 reported job 99, which is not outstanding"));
  EXPECT_EQ(rig.transport->PeerReports()[0].errors_by_reason["protocol"], 1u);
}

TEST(ShardedTransportTest, ACompletionSentTwiceIsAProtocolError) {
  Rig rig(2);
  rig.StartPeers();
  ASSERT_TRUE(rig.transport->Submit(UnlinkJob(2)).ok());
  const RecordJob job = rig.NextJob(1);
  rig.sides[0]->Answer(job, RankId(1));
  rig.sides[0]->Answer(job, RankId(1));
  ASSERT_TRUE(rig.WaitStopped());
  EXPECT_THAT(rig.transport->stopped().message(), HasSubstr("rank 1 reported job 2 twice"));
}

TEST(ShardedTransportTest, GarbageFromAJoinedPeerClosesItsLinkAndStopsTheTransport) {
  // A plain socket plays rank 1, so it can write bytes no link would.
  LoopbackListener listener;
  asio::io_context io;
  asio::ip::tcp::socket raw(io);
  auto inbox = std::make_shared<wire::LinkInbox>();
  // The transport's side is the accepted link; the raw socket dials in.
  raw.connect({asio::ip::make_address(listener.endpoint().address), listener.endpoint().port});
  std::unique_ptr<wire::Link> accepted = listener.NextLink();
  ASSERT_NE(accepted, nullptr);
  accepted->Start(inbox->HandlersFor(1));
  std::vector<ShardedPeer> peers;
  peers.push_back({RankId(1), 1, std::move(accepted)});
  FakeClock clock;
  ShardedTransport transport(std::make_unique<ScriptedLocal>(), std::move(peers), inbox,
                             clock.Fn());
  const std::vector<uint64_t> garbage = {uint64_t{2} << 32, 0xdeadbeefdeadbeefULL,
                                         0x0123456789abcdefULL};
  asio::write(raw, asio::buffer(garbage.data(), garbage.size() * 8));
  const auto until = std::chrono::steady_clock::now() + wire::testing::kEventWait;
  std::vector<RecordJobDone> out;
  while (transport.stopped().ok() && std::chrono::steady_clock::now() < until) {
    (void)transport.WaitForCompletion(20ms);
    transport.Poll(out);
  }
  ASSERT_FALSE(transport.stopped().ok());
  EXPECT_THAT(transport.stopped().message(), HasSubstr("rejected frame"));
  std::vector<PeerLinkReport> reports = transport.PeerReports();
  EXPECT_EQ(reports[0].errors_by_reason["malformed"], 1u);
  EXPECT_EQ(reports[0].state, "failed");
  EXPECT_TRUE(transport.Close(200ms).ok());
}

}  // namespace
}  // namespace strata
