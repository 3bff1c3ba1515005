// The rig of the ShardedTransport tests: a scripted rank-zero transport,
// scripted peers over real loopback links and an injected clock.
// sharded_transport_test.cc and sharded_transport_host_data_test.cc use it.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/sharded_transport.h"
#include "tests/unit/wire/wire_test_util.h"

namespace strata::sharded_testing {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
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

inline PrefixKey Key(uint64_t consumed) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = 0xab;
  return k;
}

inline RecordJob StoreJob(uint64_t id) {
  RecordJob j;
  j.id = JobId(id);
  j.kind = RecordJobKind::kStore;
  j.key = Key(128);
  j.tail_pages = 2;
  j.page_ids = {PageId(3), PageId(4)};
  j.row_slot = StateSlot(1);
  return j;
}

inline RecordJob UnlinkJob(uint64_t id) {
  RecordJob j;
  j.id = JobId(id);
  j.kind = RecordJobKind::kUnlink;
  j.key = Key(64);
  return j;
}

}  // namespace strata::sharded_testing
