// A peer answers a job from the thread that finished its work (the disk or a
// transfer thread), not through a hand-off to its link's I/O thread; a
// completion raised while the serving state is held is still answered; and
// the I/O thread never waits for a finishing thread that holds the state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "rank_agent/rank_agent.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::AwaitEvent;
using testing::Cluster;
using testing::ClusterOptions;
using testing::kClusterBound;
using testing::RootCheckpoint;
using testing::ScratchDir;

// A peer's transport whose jobs the test finishes by hand, on the thread it
// chooses, as a disk or transfer thread finishes real ones: Complete()
// queues the completion and raises the owner's signal on the calling
// thread. It notes the thread of every Poll that handed a completion out.
class HandFinishedTransport final : public DiskTransport {
 public:
  explicit HandFinishedTransport(std::unique_ptr<Transfers> transfers)
      : transfers_(std::move(transfers)) {}

  Status Submit(RecordJob job) override {
    std::lock_guard lock(mu_);
    submitted_.push_back(job.id);
    polled_since_submit_ = false;
    return Status::Ok();
  }
  void Poll(std::vector<RecordJobDone>& out) override {
    std::unique_lock lock(mu_);
    polled_since_submit_ = true;  // the submitter's pump is past the transport
    cv_.notify_all();
    if (std::this_thread::get_id() == stall_on_) {  // as a preempted holder
      stalled_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !stall_on_.has_value(); });
    }
    for (RecordJobDone& d : done_) {
      out.push_back(std::move(d));
      polled_on_.push_back(std::this_thread::get_id());
    }
    done_.clear();
  }
  bool WaitForCompletion(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return !done_.empty(); });
  }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    std::shared_ptr<WakeSignal> raise;
    {
      std::lock_guard lock(mu_);
      signal_ = signal ? std::move(signal) : std::make_shared<WakeSignal>();
      if (!done_.empty()) raise = signal_;
    }
    if (raise) raise->Notify();
  }
  Status stopped() const override { return Status::Ok(); }
  Status Close(std::chrono::milliseconds) override { return Status::Ok(); }

  // The next job the agent submitted, once the pump that submitted it has
  // polled (bounded).
  std::optional<JobId> NextJob() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, kClusterBound,
                      [&] { return !submitted_.empty() && polled_since_submit_; })) {
      return std::nullopt;
    }
    JobId id = submitted_.front();
    submitted_.pop_front();
    return id;
  }
  // Raises the owner's signal on this thread with nothing finished (as a
  // thread that made progress Submit cares about).
  void Raise() {
    std::shared_ptr<WakeSignal> signal;
    {
      std::lock_guard lock(mu_);
      signal = signal_;
    }
    signal->Notify();
  }
  // Finishes `id` on this thread and raises the owner's signal here.
  void Complete(JobId id) {
    std::shared_ptr<WakeSignal> signal;
    {
      std::lock_guard lock(mu_);
      done_.push_back({id, Status::Ok(), false, 0});
      signal = signal_;
      cv_.notify_all();
    }
    signal->Notify();
  }
  std::vector<std::thread::id> polled_on() {
    std::lock_guard lock(mu_);
    return polled_on_;
  }
  // Polls on thread `id` stall until Resume(), holding whatever the caller
  // holds.
  void StallPollsOn(std::thread::id id) {
    std::lock_guard lock(mu_);
    stall_on_ = id;
    stalled_ = false;
  }
  // True once a poll stalled; false as soon as `gave_up` says so (checked
  // at each notification and every millisecond), or at the bound.
  template <typename GaveUp>
  bool WaitStalledOr(GaveUp gave_up) {
    std::unique_lock lock(mu_);
    const auto until = std::chrono::steady_clock::now() + kClusterBound;
    while (!stalled_ && !gave_up() && std::chrono::steady_clock::now() < until) {
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
    return stalled_;
  }
  void Resume() {
    std::lock_guard lock(mu_);
    stall_on_.reset();
    cv_.notify_all();
  }

 private:
  std::unique_ptr<Transfers> transfers_;  // the planes' transfers, unused
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<WakeSignal> signal_ = std::make_shared<WakeSignal>();
  std::deque<JobId> submitted_;
  bool polled_since_submit_ = false;
  std::optional<std::thread::id> stall_on_;
  bool stalled_ = false;
  std::vector<RecordJobDone> done_;
  std::vector<std::thread::id> polled_on_;
};

ClusterOptions TwoRanks() {
  ClusterOptions o;
  o.world_size = 2;
  return o;
}

// Rank 1 of a 2-rank cluster runs on a HandFinishedTransport.
struct HandFinishedCluster {
  ScratchDir dir;
  Cluster cluster{dir.path(), TwoRanks()};
  HandFinishedTransport* transport = nullptr;  // owned by rank 1's agent
  wire::LivenessOptions peer_liveness;         // rank 1's end of the record link
  wire::LivenessOptions zero_liveness;         // rank zero's end

  Status Start() {
    RankAgentOptions o = cluster.AgentOptionsFor(1);
    o.link.liveness = peer_liveness;
    o.make_transport = [this](LocalDisk&, std::unique_ptr<Transfers> transfers,
                              const StagedOptions&) -> Result<std::unique_ptr<DiskTransport>> {
      auto t = std::make_unique<HandFinishedTransport>(std::move(transfers));
      transport = t.get();
      return std::unique_ptr<DiskTransport>(std::move(t));
    };
    STRATA_RETURN_IF_ERROR(cluster.StartAgent(
        1, std::move(o), JoinThroughRendezvous(cluster.rendezvous(), RankId(1), 2)));
    CoordinatorOptions co = cluster.CoordinatorOptionsFor();
    co.link.liveness = zero_liveness;
    return cluster.StartCoordinator(co);
  }
};

// Awaits `count` stored events from rank zero's store.
void AwaitStored(DiskStore& store, int count) {
  int stored = 0;
  while (stored < count) {
    std::vector<StoreEvent> others;
    ASSERT_TRUE(AwaitEvent(store, StoreEvent::Kind::kStored, &others).has_value())
        << "stored " << stored << " of " << count;
    stored += 1 + static_cast<int>(std::count_if(others.begin(), others.end(), [](const auto& e) {
                return e.kind == StoreEvent::Kind::kStored;
              }));
  }
  EXPECT_EQ(stored, count) << "more stored events than stores";
}

TEST(RankAgentAnsweringTest, APeerAnswersFromTheThreadThatFinishedTheJob) {
  HandFinishedCluster h;
  STRATA_OK_OR_SKIP_DIRECT_IO(h.Start());
  // Each job finishes on a thread of its own, as on a disk thread. The
  // serving state is free but for the moment the I/O thread handles a frame
  // (the Job's pump ends just after its poll; a heartbeat), so most answers
  // must come from the finishing thread itself; before, every one was posted
  // to the I/O thread.
  constexpr int kJobs = 6;
  int here = 0;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_EQ(h.cluster.store().Store(RootCheckpoint(i + 1, i + 1, 10, 20 * i, StateSlot(0))),
              StoreOutcome::kQueued);
    std::optional<JobId> job = h.transport->NextJob();
    ASSERT_TRUE(job.has_value());
    std::thread::id finisher;
    std::thread([&] {
      finisher = std::this_thread::get_id();
      h.transport->Complete(*job);
    }).join();
    std::optional<StoreEvent> stored = AwaitEvent(h.cluster.store(), StoreEvent::Kind::kStored);
    ASSERT_TRUE(stored.has_value()) << "job " << i;
    EXPECT_EQ(stored->checkpoint_id, static_cast<uint64_t>(i + 1));
    std::vector<std::thread::id> polled = h.transport->polled_on();
    ASSERT_EQ(polled.size(), static_cast<size_t>(i + 1));
    here += polled.back() == finisher ? 1 : 0;
  }
  EXPECT_GE(here, kJobs / 2) << "answers went through the I/O thread";
  EXPECT_TRUE(h.cluster.Close().ok());
}

TEST(RankAgentAnsweringTest, ACompletionRaisedWhileTheServingStateIsHeldIsStillAnswered) {
  HandFinishedCluster h;
  STRATA_OK_OR_SKIP_DIRECT_IO(h.Start());
  // Many completions raised at once from several threads, whichever of
  // them (or the I/O thread) holds the serving state: every job is
  // answered.
  constexpr int kJobs = 8;
  std::vector<JobId> jobs;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_EQ(h.cluster.store().Store(RootCheckpoint(i + 1, i + 1, 10, 20 * i, StateSlot(0))),
              StoreOutcome::kQueued);
    std::optional<JobId> job = h.transport->NextJob();
    ASSERT_TRUE(job.has_value());
    jobs.push_back(*job);
  }
  std::vector<std::thread> finishers;
  for (JobId id : jobs) finishers.emplace_back([&h, id] { h.transport->Complete(id); });
  for (std::thread& t : finishers) t.join();
  AwaitStored(h.cluster.store(), kJobs);
  if (HasFatalFailure()) return;
  EXPECT_EQ(h.transport->polled_on().size(), static_cast<size_t>(kJobs));
  EXPECT_TRUE(h.cluster.Close().ok());
}

// Stores checkpoint `id` on every rank and has a new thread finish rank 1's
// job of it, stalling in its Poll while it holds the serving state (as a
// low-priority disk thread preempted mid-answer). The I/O thread may take
// the completion first (it was still pumping): then the next checkpoint is
// tried. The finisher stays stalled until Resume(); `stores` counts the
// checkpoints stored.
class StalledFinisher {
 public:
  StalledFinisher(HandFinishedCluster& h, int& stores) : h_(h), stores_(stores) {}
  ~StalledFinisher() {
    h_.transport->Resume();
    if (thread_.joinable()) thread_.join();
  }
  StalledFinisher(const StalledFinisher&) = delete;
  StalledFinisher& operator=(const StalledFinisher&) = delete;

  // With a job of its own to finish.
  bool Start() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      const int id = ++stores_;
      if (h_.cluster.store().Store(RootCheckpoint(id, id, 2, 2 * id, StateSlot(0))) !=
          StoreOutcome::kQueued) {
        return false;
      }
      std::optional<JobId> job = h_.transport->NextJob();
      if (!job) return false;
      if (Stalls([this, job] { h_.transport->Complete(*job); })) return true;
    }
    return false;
  }
  // With nothing finished: a holder that has no answer to send.
  bool StartEmpty() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      if (Stalls([this] { h_.transport->Raise(); })) return true;
    }
    return false;
  }

 private:
  // Runs `raise` on a new thread whose polls stall; whether one did.
  template <typename Raise>
  bool Stalls(Raise raise) {
    if (thread_.joinable()) thread_.join();
    auto done = std::make_shared<std::atomic<bool>>(false);
    thread_ = std::thread([this, done, raise] {
      h_.transport->StallPollsOn(std::this_thread::get_id());
      raise();
      *done = true;
    });
    if (h_.transport->WaitStalledOr([&] { return done->load(); })) return true;
    thread_.join();  // another thread held the state and polled; try again
    return false;
  }

 public:
 private:
  HandFinishedCluster& h_;
  int& stores_;
  std::thread thread_;
};

TEST(RankAgentAnsweringTest, TheLinkKeepsServingWhileAFinishingThreadHoldsTheState) {
  HandFinishedCluster h;
  // Rank zero closes a link it reads nothing from for 1 s; rank 1 sends a
  // heartbeat after 50 ms without a send. A peer I/O thread that waited for
  // the serving state would send nothing while it waits.
  h.peer_liveness.heartbeat_interval = std::chrono::milliseconds(50);
  h.zero_liveness.heartbeat_interval = std::chrono::milliseconds(50);
  h.zero_liveness.silence_timeout = std::chrono::milliseconds(1000);
  STRATA_OK_OR_SKIP_DIRECT_IO(h.Start());
  int stores = 0;
  {
    StalledFinisher finisher(h, stores);
    ASSERT_TRUE(finisher.Start());
    // Rank zero's next Job and heartbeats arrive during a 2.5 s hold.
    ++stores;
    ASSERT_EQ(h.cluster.store().Store(RootCheckpoint(stores, stores, 2, 2 * stores, StateSlot(0))),
              StoreOutcome::kQueued);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  }  // resumed and joined
  // The Job that came meanwhile is served once the holder let go.
  std::optional<JobId> last = h.transport->NextJob();
  ASSERT_TRUE(last.has_value());
  h.transport->Complete(*last);
  AwaitStored(h.cluster.store(), stores);
  const std::vector<PeerLinkReport> links = h.cluster.coordinator().PeerLinks();
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].state, "up") << "rank 1 went silent while a finishing thread held its state";
  EXPECT_TRUE(h.cluster.Close().ok());
}

TEST(RankAgentAnsweringTest, ALinkThatClosesWhileAFinishingThreadHoldsTheStateEndsTheSession) {
  HandFinishedCluster h;
  // Rank zero sends nothing unasked, and rank 1 closes a link it reads
  // nothing from for 300 ms: it closes while the finisher holds the state,
  // when no pump can be posted to its I/O thread any more.
  h.zero_liveness.heartbeat_interval = std::chrono::milliseconds(0);
  h.peer_liveness.heartbeat_interval = std::chrono::milliseconds(50);
  h.peer_liveness.silence_timeout = std::chrono::milliseconds(300);
  STRATA_OK_OR_SKIP_DIRECT_IO(h.Start());
  int stores = 0;
  {
    StalledFinisher finisher(h, stores);
    ASSERT_TRUE(finisher.StartEmpty());
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }  // resumed and joined: the holder serves the close it left
  std::optional<Status> ended =
      h.cluster.agent(1).Wait(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(ended.has_value()) << "rank 1 never served its link's close";
  EXPECT_FALSE(ended->ok());
  EXPECT_THAT(ended->message(), ::testing::HasSubstr("peer silent"));
}

}  // namespace
}  // namespace strata
