// Ranks on separate hosts, inside one test process: rank zero's Coordinator
// and a RankAgent per peer, each rank with its own HostPlanes, transfer
// threads and record directory (under one ScratchDir), joined through an
// InProcessRendezvous over loopback TCP. Plus the test doubles the fault
// tests need, each behind an interface a real implementation serves.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/coordinator.h"
#include "coordinator/rendezvous/in_process_rendezvous.h"
#include "coordinator/rendezvous/rendezvous_join.h"
#include "launch/presets.h"
#include "rank_agent/rank_agent.h"
#include "store/base/prefix_history.h"
#include "store/transfer/device_planes.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/record/record_test_support.h"
#include "tests/unit/store/tier/disk_store_test_support.h"

namespace strata::testing {

// Bound on any one wait in these tests; a passing test never reaches it.
inline constexpr std::chrono::seconds kClusterBound{30};

inline std::chrono::steady_clock::time_point Soon() {
  return std::chrono::steady_clock::now() + kClusterBound;
}

// The DevicePlanes of every rank at once, over each rank's own one-rank
// HostPlanes: a SyntheticRuntime on rank zero writes and checks every rank's
// bytes (rank-specific patterns) in the planes each rank's own transport
// moves.
class RankSetPlanes final : public DevicePlanes {
 public:
  explicit RankSetPlanes(std::vector<HostPlanes*> ranks) : ranks_(std::move(ranks)) {
    geometry_.page_tokens = ranks_[0]->geometry().page_tokens;
    for (HostPlanes* p : ranks_) geometry_.ranks.push_back(p->geometry().ranks[0]);
  }
  const CacheGeometry& geometry() const override { return geometry_; }
  RankPlanes planes(uint32_t rank) const override { return ranks_[rank]->planes(0); }
  Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                   std::span<const uint8_t> bytes) override {
    return ranks_[rank]->WritePage(0, plane, page, bytes);
  }
  Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) override {
    return ranks_[rank]->ReadPage(0, plane, page, bytes);
  }
  Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) override {
    return ranks_[rank]->WriteRow(0, slot, bytes);
  }
  Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) override {
    return ranks_[rank]->ReadRow(0, slot, bytes);
  }

 private:
  std::vector<HostPlanes*> ranks_;
  CacheGeometry geometry_;
};

// Transfers that pass jobs to a real implementation, or, when told, hold
// copy-out jobs (until Release) or fail them (a rank whose write fails).
class FaultyTransfers final : public Transfers {
 public:
  enum class Mode : unsigned char { kPass, kHoldCopyOut, kFailCopyOut };

  explicit FaultyTransfers(std::unique_ptr<Transfers> real) : real_(std::move(real)) {}
  void set_mode(Mode mode) {
    std::lock_guard lock(mu_);
    mode_ = mode;
  }
  // Waits (bounded) until a copy-out is held.
  bool WaitHeld() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kClusterBound, [&] { return !held_.empty(); });
  }
  // Passes every held job on and stops holding.
  void Release() {
    std::vector<TransferJob> held;
    {
      std::lock_guard lock(mu_);
      mode_ = Mode::kPass;
      held.swap(held_);
    }
    for (TransferJob& j : held) EXPECT_TRUE(real_->Submit(std::move(j)).ok());
    cv_.notify_all();
  }

  Status Submit(TransferJob job) override {
    {
      std::lock_guard lock(mu_);
      if (job.direction == TransferDirection::kDeviceToHost && mode_ != Mode::kPass) {
        if (mode_ == Mode::kHoldCopyOut) {
          held_.push_back(std::move(job));
        } else {
          failed_.push_back({job.id, Status::IoError("injected copy-out failure"), 0});
          if (signal_) signal_->Notify();
        }
        cv_.notify_all();
        return Status::Ok();
      }
    }
    return real_->Submit(std::move(job));
  }
  void Poll(std::vector<TransferCompletion>& out) override {
    {
      std::lock_guard lock(mu_);
      for (TransferCompletion& c : failed_) out.push_back(std::move(c));
      failed_.clear();
    }
    real_->Poll(out);
  }
  bool WaitForCompletion(std::chrono::milliseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      if (!failed_.empty()) return true;
    }
    return real_->WaitForCompletion(timeout);
  }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    bool ready;
    {
      std::lock_guard lock(mu_);
      signal_ = signal;
      ready = !failed_.empty();
    }
    if (ready && signal) signal->Notify();
    real_->NotifyOnCompletion(std::move(signal));
  }
  Status Close(std::chrono::milliseconds deadline) override {
    {
      std::lock_guard lock(mu_);
      if (!held_.empty()) return Status::Aborted("held copies never ran");
    }
    return real_->Close(deadline);
  }
  uint32_t rank_count() const override { return real_->rank_count(); }

 private:
  std::unique_ptr<Transfers> real_;
  std::mutex mu_;
  std::shared_ptr<WakeSignal> signal_;  // guarded by mu_
  std::condition_variable cv_;
  Mode mode_ = Mode::kPass;
  std::vector<TransferJob> held_;
  std::vector<TransferCompletion> failed_;
};

// A rendezvous client that hands out a ticket obtained beforehand (tests that
// play a peer themselves need the nonce too).
inline RankJoin FixedTicket(const JoinTicket& ticket) {
  return [ticket](std::chrono::steady_clock::time_point) -> Result<RecordLinkTicket> {
    return RecordLinkTicket{
        {ticket.record_host, ticket.record_port}, ticket.nonce.bytes, ticket.world_size};
  };
}

// One rank's geometry: `page_count` pages, 8 rows, of preset "tiny".
inline CacheGeometry RankGeometryOf(uint64_t page_count = 512) {
  Result<CacheGeometry> g = PresetGeometry("tiny", 1, page_count, 8);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : CacheGeometry{};
}

struct ClusterOptions {
  uint32_t world_size = 3;
  uint64_t disk_limit_bytes = uint64_t{1} << 30;
  std::chrono::milliseconds join_timeout{30'000};
  std::chrono::milliseconds job_timeout{30'000};
  std::string rendezvous_peer_address = "127.0.0.1";
  uint64_t nonce_seed = 1;
  // Mutual TLS on every record link (rank zero's listener and each peer's
  // dial) when set.
  std::shared_ptr<const wire::TlsContext> tls;
  // Every record link's idle spin (LinkOptions::idle_spin), both ends.
  std::chrono::microseconds link_idle_spin{0};
  // Rank zero's record links on one I/O thread (CoordinatorOptions).
  bool shared_link_thread = false;
  // Each rank's planes; unset: RankGeometryOf().
  std::optional<CacheGeometry> geometry;
};

// Ranks 0 .. N-1 of one model. Start() runs the rendezvous and the join;
// every rank's directory lives under `base`/rank<r>.
class Cluster {
 public:
  Cluster(std::string base, ClusterOptions options = {})
      : base_(std::move(base)),
        options_(options),
        rendezvous_(SeededNonceSource(options.nonce_seed), "127.0.0.1",
                    options.rendezvous_peer_address) {
    for (uint32_t r = 0; r < options_.world_size; ++r) {
      planes_.push_back(std::make_unique<HostPlanes>(options_.geometry.value_or(RankGeometryOf())));
    }
    std::vector<HostPlanes*> raw;
    for (auto& p : planes_) raw.push_back(p.get());
    all_planes_ = std::make_unique<RankSetPlanes>(raw);
    transfers_.resize(options_.world_size, nullptr);
  }
  ~Cluster() {
    if (coordinator_) (void)coordinator_->Close();
    coordinator_.reset();
    agents_.clear();
  }

  CoordinatorOptions CoordinatorOptionsFor() const {
    CoordinatorOptions o;
    o.world_size = options_.world_size;
    o.geometry = planes_[0]->geometry();
    o.identity = TestIdentity();
    o.disk.base_dir = base_ + "/rank0";
    o.disk.host_headroom_bytes = uint64_t{64} << 20;
    o.disk_limit_bytes = options_.disk_limit_bytes;
    o.listen = {"127.0.0.1", 0};
    o.link.tls = options_.tls;
    o.link.idle_spin = options_.link_idle_spin;
    o.shared_link_thread = options_.shared_link_thread;
    o.join_timeout = options_.join_timeout;
    o.sharded.job_timeout = options_.job_timeout;
    o.store.close_deadline = std::chrono::milliseconds(20'000);
    return o;
  }
  RankAgentOptions AgentOptionsFor(uint32_t rank) const {
    RankAgentOptions o;
    o.rank = RankId(rank);
    o.world_size = options_.world_size;
    o.geometry = planes_[rank]->geometry();
    o.identity = TestIdentity();
    o.disk.base_dir = base_ + "/rank" + std::to_string(rank);
    o.disk.host_headroom_bytes = uint64_t{64} << 20;
    o.disk_limit_bytes = options_.disk_limit_bytes;
    o.join_timeout = options_.join_timeout;
    o.drain_timeout = std::chrono::milliseconds(20'000);
    o.link.tls = options_.tls;
    o.link.idle_spin = options_.link_idle_spin;
    return o;
  }

  // Transfers over rank r's planes, wrapped so a test can inject faults.
  std::unique_ptr<Transfers> TransfersFor(uint32_t rank) {
    Result<std::unique_ptr<Transfers>> real = MakeHostTransfers(*planes_[rank]);
    EXPECT_TRUE(real.ok());
    auto faulty = std::make_unique<FaultyTransfers>(std::move(*real));
    transfers_[rank] = faulty.get();
    return faulty;
  }

  // Starts a peer; its join runs on its own thread.
  Status StartAgent(uint32_t rank, RankAgentOptions options, RankJoin join) {
    Result<std::unique_ptr<RankAgent>> agent =
        RankAgent::Start(std::move(options), std::move(join), TransfersFor(rank));
    if (!agent.ok()) return agent.status();
    agents_[rank] = std::move(*agent);
    return Status::Ok();
  }
  Status StartAgent(uint32_t rank) {
    return StartAgent(rank, AgentOptionsFor(rank),
                      JoinThroughRendezvous(rendezvous_, RankId(rank), options_.world_size));
  }
  // Rank zero, on this thread: blocks through the join.
  Status StartCoordinator(CoordinatorOptions options) {
    Result<std::unique_ptr<Coordinator>> c =
        Coordinator::Start(std::move(options), rendezvous_, TransfersFor(0));
    if (!c.ok()) return c.status();
    coordinator_ = std::move(*c);
    return Status::Ok();
  }
  // Every peer, then rank zero.
  Status Start() {
    for (uint32_t r = 1; r < options_.world_size; ++r) STRATA_RETURN_IF_ERROR(StartAgent(r));
    return StartCoordinator(CoordinatorOptionsFor());
  }
  // Rank zero closes (draining every rank); every agent must end cleanly.
  Status Close() {
    Status s = coordinator_ ? coordinator_->Close() : Status::Ok();
    for (auto& [rank, agent] : agents_) {
      std::optional<Status> ended = agent->Wait(Soon());
      if (!ended) return Status::Internal("rank " + std::to_string(rank) + " did not end");
      if (s.ok() && !ended->ok()) s = *ended;
    }
    coordinator_.reset();
    agents_.clear();
    return s;
  }

  Coordinator& coordinator() { return *coordinator_; }
  DiskStore& store() { return coordinator_->store(); }
  RankAgent& agent(uint32_t rank) { return *agents_.at(rank); }
  HostPlanes& planes(uint32_t rank) { return *planes_[rank]; }
  RankSetPlanes& all_planes() { return *all_planes_; }
  FaultyTransfers& transfers(uint32_t rank) { return *transfers_[rank]; }
  InProcessRendezvous& rendezvous() { return rendezvous_; }
  uint32_t world_size() const { return options_.world_size; }

  // Rank r's record directory (the one namespace directory under its base).
  std::string RecordDir(uint32_t rank) const {
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(base_ + "/rank" + std::to_string(rank), ec)) {
      if (e.is_directory()) return e.path().string();
    }
    return "";
  }
  // Rank r's record files: name -> size.
  std::map<std::string, uint64_t> Files(uint32_t rank) const {
    std::map<std::string, uint64_t> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(RecordDir(rank), ec)) {
      if (e.path().extension() == ".ckpt") out[e.path().filename().string()] = e.file_size();
    }
    return out;
  }
  // Every rank holds the same record file names with the same sizes.
  void ExpectSameFilesEverywhere() const {
    const std::map<std::string, uint64_t> zero = Files(0);
    for (uint32_t r = 1; r < options_.world_size; ++r) {
      EXPECT_EQ(Files(r), zero) << "rank " << r << " differs from rank 0";
    }
  }

 private:
  std::string base_;
  ClusterOptions options_;
  InProcessRendezvous rendezvous_;
  std::vector<std::unique_ptr<HostPlanes>> planes_;
  std::unique_ptr<RankSetPlanes> all_planes_;
  std::vector<FaultyTransfers*> transfers_;
  std::map<uint32_t, std::unique_ptr<RankAgent>> agents_;
  std::unique_ptr<Coordinator> coordinator_;
};

// Skips the test when the scratch filesystem refuses O_DIRECT (tmpfs);
// otherwise the status must be OK.
#define STRATA_OK_OR_SKIP_DIRECT_IO(expr)                                \
  do {                                                                   \
    ::strata::Status strata_s_ = (expr);                                 \
    if (strata_s_.message().find("O_DIRECT") != std::string::npos &&     \
        strata_s_.code() == ::strata::StatusCode::kFailedPrecondition) { \
      GTEST_SKIP() << strata_s_.message();                               \
    }                                                                    \
    ASSERT_TRUE(strata_s_.ok()) << strata_s_.ToString();                 \
  } while (0)

}  // namespace strata::testing
