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

#include "tests/unit/wire/wire_test_util.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using wire::testing::LoopbackListener;
using wire::testing::Recorder;

// Rank zero's share: accepts every job and finishes it on the next Poll with
// the status the test set for its kind (OK by default).
class ScriptedLocal final : public DiskTransport {
 public:
  Status Submit(RecordJob job) override {
    submitted.push_back(job);
    pending_.push_back(job);
    if (signal_) signal_->Notify();  // finished at once: ready for the next Poll
    return Status::Ok();
  }
  // Rank zero's share of a host-data job: as a device job (the bytes are
  // not the test's concern here).
  Status SubmitHost(const RecordJob& job, const HostBuffers& /*buffers*/) override {
    return Submit(job);
  }
  void Poll(std::vector<RecordJobDone>& out) override {
    for (const RecordJob& j : pending_) {
      Status s = j.kind == RecordJobKind::kUnlink ? unlink_status : Status::Ok();
      out.push_back({j.id, s, false, 10});
    }
    pending_.clear();
  }
  bool WaitForCompletion(std::chrono::milliseconds) override { return !pending_.empty(); }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    signal_ = std::move(signal);
    if (signal_ && !pending_.empty()) signal_->Notify();
  }
  Status stopped() const override { return Status::Ok(); }
  Status Close(std::chrono::milliseconds) override { return Status::Ok(); }

  std::vector<RecordJob> submitted;  // every job, cleanups included
  Status unlink_status;

 private:
  std::vector<RecordJob> pending_;
  std::shared_ptr<WakeSignal> signal_;
};

// A clock the test advances.
struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  ShardedClock Fn() {
    return [this] { return now; };
  }
};

// A peer rank played by the test: the accepted side of a loopback link.
struct ScriptedPeerSide {
  // Declared before the link, so the link (whose I/O thread calls the
  // recorder's handlers until it is closed) is destroyed first.
  Recorder events;
  std::unique_ptr<wire::Link> link;

  void Answer(const RecordJob& job, RankId rank, Status status = Status::Ok(),
              bool fs_full = false) {
    ASSERT_TRUE(link->Send(wire::JobDone{job.id, rank, std::move(status), fs_full, 5}).ok());
  }
};

// A ShardedTransport over `peers` scripted peers.
struct Rig {
  explicit Rig(uint32_t peers, wire::LinkOptions dial_options = wire::testing::QuietLinkOptions(),
               ShardedOptions options = {}) {
    auto local_owned = std::make_unique<ScriptedLocal>();
    local = local_owned.get();
    inbox = std::make_shared<wire::LinkInbox>();
    std::vector<ShardedPeer> sharded_peers;
    for (uint32_t r = 1; r <= peers; ++r) {
      auto dialed = wire::Dial(listener.endpoint(), dial_options);
      EXPECT_TRUE(dialed.ok());
      std::unique_ptr<wire::Link> link = std::move(*dialed);
      link->Start(inbox->HandlersFor(100 + r));
      sharded_peers.push_back({RankId(r), 100 + r, std::move(link)});
      auto side = std::make_unique<ScriptedPeerSide>();
      side->link = listener.NextLink();
      sides.push_back(std::move(side));
    }
    transport = std::make_unique<ShardedTransport>(std::move(local_owned), std::move(sharded_peers),
                                                   inbox, clock.Fn(), options);
  }
  // Starts reading on every peer side (a test that keeps one stuck skips it).
  void StartPeers() {
    for (auto& s : sides) s->link->Start(s->events.Handlers());
  }
  // The next job peer `rank` receives, polling the transport meanwhile
  // (cleanups are sent from Poll); completions wait in `done`.
  RecordJob NextJob(uint32_t rank) {
    const auto until = std::chrono::steady_clock::now() + wire::testing::kEventWait;
    while (std::chrono::steady_clock::now() < until) {
      std::optional<wire::Message> m = sides[rank - 1]->events.messages.Pop(5ms);
      if (m) {
        EXPECT_TRUE(std::holds_alternative<wire::Job>(*m)) << wire::MessageName(*m);
        if (std::holds_alternative<wire::Job>(*m)) return std::get<wire::Job>(*m).record;
        return {};
      }
      transport->Poll(done);
    }
    ADD_FAILURE() << "no job arrived at rank " << rank;
    return {};
  }
  // Polls until a completion arrives (bounded).
  std::optional<RecordJobDone> NextDone() {
    const auto until = std::chrono::steady_clock::now() + wire::testing::kEventWait;
    while (done.empty() && std::chrono::steady_clock::now() < until) {
      (void)transport->WaitForCompletion(50ms);
      transport->Poll(done);
    }
    if (done.empty()) return std::nullopt;
    EXPECT_EQ(done.size(), 1u);
    RecordJobDone d = done.front();
    done.erase(done.begin());
    return d;
  }
  // Polls until the transport stopped (bounded).
  bool WaitStopped() {
    const auto until = std::chrono::steady_clock::now() + wire::testing::kEventWait;
    std::vector<RecordJobDone> out;
    while (transport->stopped().ok() && std::chrono::steady_clock::now() < until) {
      (void)transport->WaitForCompletion(20ms);
      transport->Poll(out);
    }
    EXPECT_TRUE(out.empty()) << "a stopping transport reported a completion";
    return !transport->stopped().ok();
  }

  LoopbackListener listener;
  FakeClock clock;
  ScriptedLocal* local = nullptr;
  std::shared_ptr<wire::LinkInbox> inbox;
  std::vector<std::unique_ptr<ScriptedPeerSide>> sides;
  std::unique_ptr<ShardedTransport> transport;
  std::vector<RecordJobDone> done;

  // Scripted peers never confirm a drain: close within a short bound.
  ~Rig() {
    if (transport) (void)transport->Close(200ms);
  }
  // Polls until rank `rank` has reported `jobs` jobs done (bounded).
  bool WaitJobsDone(uint32_t rank, uint64_t jobs) {
    const auto until = std::chrono::steady_clock::now() + wire::testing::kEventWait;
    while (std::chrono::steady_clock::now() < until) {
      if (transport->PeerReports()[rank - 1].jobs_done >= jobs) return true;
      (void)transport->WaitForCompletion(5ms);
      transport->Poll(done);
    }
    return false;
  }
};

PrefixKey Key(uint64_t consumed) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = 0xab;
  return k;
}

RecordJob StoreJob(uint64_t id) {
  RecordJob j;
  j.id = JobId(id);
  j.kind = RecordJobKind::kStore;
  j.key = Key(128);
  j.tail_pages = 2;
  j.page_ids = {PageId(3), PageId(4)};
  j.row_slot = StateSlot(1);
  return j;
}

RecordJob UnlinkJob(uint64_t id) {
  RecordJob j;
  j.id = JobId(id);
  j.kind = RecordJobKind::kUnlink;
  j.key = Key(64);
  return j;
}

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
