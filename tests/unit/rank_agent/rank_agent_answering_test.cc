// A peer answers a job from the thread that finished its work (the disk or a
// transfer thread), not through a hand-off to its link's I/O thread; a
// completion raised while the serving state is held is still answered; and
// the I/O thread never waits for a finishing thread that holds the state.
#include <gtest/gtest.h>

#include <algorithm>
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
  bool WaitStalled() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kClusterBound, [&] { return stalled_; });
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
  wire::LivenessOptions liveness;              // both ends of the record link

  Status Start() {
    RankAgentOptions o = cluster.AgentOptionsFor(1);
    o.link.liveness = liveness;
    o.make_transport = [this](LocalDisk&, std::unique_ptr<Transfers> transfers,
                              const StagedOptions&) -> Result<std::unique_ptr<DiskTransport>> {
      auto t = std::make_unique<HandFinishedTransport>(std::move(transfers));
      transport = t.get();
      return std::unique_ptr<DiskTransport>(std::move(t));
    };
    STRATA_RETURN_IF_ERROR(cluster.StartAgent(
        1, std::move(o), JoinThroughRendezvous(cluster.rendezvous(), RankId(1), 2)));
    CoordinatorOptions co = cluster.CoordinatorOptionsFor();
    co.link.liveness = liveness;
    return cluster.StartCoordinator(co);
  }
};

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
  // Many completions raised at once from several threads: whichever finds
  // the serving state taken posts the pump instead, and every job is
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
  int stored = 0;
  while (stored < kJobs) {
    std::vector<StoreEvent> others;
    ASSERT_TRUE(AwaitEvent(h.cluster.store(), StoreEvent::Kind::kStored, &others).has_value())
        << "answered " << stored << " of " << kJobs;
    stored += 1 + static_cast<int>(std::count_if(others.begin(), others.end(), [](const auto& e) {
                return e.kind == StoreEvent::Kind::kStored;
              }));
  }
  EXPECT_EQ(stored, kJobs);
  EXPECT_EQ(h.transport->polled_on().size(), static_cast<size_t>(kJobs));
  EXPECT_TRUE(h.cluster.Close().ok());
}

TEST(RankAgentAnsweringTest, TheLinkKeepsServingWhileAFinishingThreadHoldsTheState) {
  HandFinishedCluster h;
  // Rank zero closes a link it reads nothing from for 1 s; both ends send a
  // heartbeat after 50 ms without a send. A peer I/O thread that waited
  // for the serving state would send nothing while it waits.
  h.liveness.heartbeat_interval = std::chrono::milliseconds(50);
  h.liveness.silence_timeout = std::chrono::milliseconds(1000);
  STRATA_OK_OR_SKIP_DIRECT_IO(h.Start());
  ASSERT_EQ(h.cluster.store().Store(RootCheckpoint(1, 1, 10, 0, StateSlot(0))),
            StoreOutcome::kQueued);
  std::optional<JobId> first = h.transport->NextJob();
  ASSERT_TRUE(first.has_value());
  // A finishing thread takes the serving state and stalls inside it (as a
  // low-priority disk thread preempted mid-answer) for 2.5 s, while rank
  // zero's heartbeats and its next Job arrive.
  std::thread finisher([&] {
    h.transport->StallPollsOn(std::this_thread::get_id());
    h.transport->Complete(*first);
  });
  ASSERT_TRUE(h.transport->WaitStalled());
  ASSERT_EQ(h.cluster.store().Store(RootCheckpoint(2, 2, 10, 20, StateSlot(1))),
            StoreOutcome::kQueued);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  h.transport->Resume();
  finisher.join();
  // The Job that came meanwhile is served once the holder let go.
  std::optional<JobId> second = h.transport->NextJob();
  ASSERT_TRUE(second.has_value());
  h.transport->Complete(*second);
  int stored = 0;
  while (stored < 2) {
    std::vector<StoreEvent> others;
    ASSERT_TRUE(AwaitEvent(h.cluster.store(), StoreEvent::Kind::kStored, &others).has_value())
        << "stored " << stored << " of 2";
    stored += 1 + static_cast<int>(std::count_if(others.begin(), others.end(), [](const auto& e) {
                return e.kind == StoreEvent::Kind::kStored;
              }));
  }
  const std::vector<PeerLinkReport> links = h.cluster.coordinator().PeerLinks();
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].state, "up") << "rank 1 went silent while a finishing thread held its state";
  EXPECT_TRUE(h.cluster.Close().ok());
}

}  // namespace
}  // namespace strata
