// The roles of ranks in separate processes (seed 2.14): rank zero runs the
// coordinator (its own record directory, the record listener, the one
// DiskStore over the sharded transport) and the synthetic runtime; every
// other rank runs a rank agent on its own record directory and the runtime
// service through which rank zero's runtime writes and checks that rank's
// planes (launch/runtime/runtime_service.h). Records move only over the record links.
//
// With attach.socket there is no synthetic runtime and no runtime service:
// each rank's planes are its attached runtime's memory (attach/), rank zero's
// runtime makes the store calls, and a peer's agent copies through transfers
// gated on its runtime being attached (launch/rank/attach_workload.h).
// With cluster.rendezvous = "attach" too, rank zero admits its runtime
// before the join and tells it the rendezvous address and job secret, and a
// peer joins only once its runtime's Hello handed them over
// (launch/rank/peer_rendezvous.h).
#include <spdlog/spdlog.h>

#include <future>

#include "coordinator/coordinator.h"
#include "coordinator/rendezvous/rendezvous_address.h"
#include "coordinator/rendezvous/tcp_rendezvous.h"
#include "launch/presets.h"
#include "launch/rank/attach_workload.h"
#include "launch/rank/multi_process_stores.h"
#include "launch/rank/peer_rendezvous.h"
#include "launch/runtime/attach_planes.h"
#include "launch/runtime/process_planes.h"
#include "launch/runtime/runtime_service.h"
#include "launch/runtime/service_guard.h"
#include "rank_agent/rank_agent.h"
#include "store/base/deliberate_leak.h"
#include "store/transfer/host_planes.h"
#include "wire/tls.h"

namespace strata {

namespace {

constexpr auto kIdleBound = std::chrono::seconds(60);

// What one process of the job holds of the cache: its own rank's planes.
struct OwnRank {
  CacheGeometry all;  // every rank, for rank zero's runtime
  CacheGeometry own;  // this process's rank alone
  NamespaceIdentity identity{};
  uint64_t disk_limit = 0;
};

Result<OwnRank> DescribeOwnRank(const RankConfig& config) {
  const PrefixCacheConfig& pc = config.prefix_cache;
  if (!pc.disk_dir.has_value() || pc.disk_limit_bytes.value_or(1) == 0) {
    return Status::InvalidArgument(
        "prefix_cache.disk: ranks in separate processes keep records on disk only, so every rank "
        "needs a record directory and a nonzero disk_limit");
  }
  OwnRank r;
  STRATA_ASSIGN_OR_RETURN(r.all, PresetGeometry(config.runtime.preset, config.cluster.world_size,
                                                config.runtime.pages, config.runtime.rows));
  r.own.page_tokens = r.all.page_tokens;
  r.own.ranks = {r.all.ranks.at(config.cluster.rank)};
  r.identity = ComputeNamespaceIdentity("synthetic/" + config.runtime.preset, StateMode::kOrdinary);
  r.disk_limit = *pc.disk_limit_bytes;  // resolved by OpenRankStores
  return r;
}

// The runtime service port of `rank` (runtime_service.h).
Result<uint16_t> ServicePort(const RankConfig& config, uint32_t rank) {
  const uint32_t port = uint32_t{config.metrics.port} + kRuntimeServicePortOffset + rank;
  if (config.metrics.port == 0 || port > 65535) {
    return Status::InvalidArgument(
        "metrics.port: ranks in separate processes need a fixed metrics port (not 0) with room "
        "for the runtime services at metrics.port + " +
        std::to_string(kRuntimeServicePortOffset) + " + rank (below 65536)");
  }
  return static_cast<uint16_t>(port);
}

// Forwards to the TCP rendezvous and keeps the peer table: rank zero's
// runtime reaches each peer's runtime service at the address its rendezvous
// connection came from.
class RecordingRendezvous final : public RendezvousServer {
 public:
  explicit RecordingRendezvous(RendezvousServer& inner) : inner_(inner) {}
  Result<PeerTable> AwaitPeers(uint32_t world_size, uint16_t record_port,
                               RendezvousDeadline deadline) override {
    Result<PeerTable> t = inner_.AwaitPeers(world_size, record_port, deadline);
    if (t.ok()) table_ = *t;
    return t;
  }
  const PeerTable& table() const { return table_; }

 private:
  RendezvousServer& inner_;
  PeerTable table_;
};

// The TLS context of [tls], or null (plaintext) when it is not configured.
Result<std::shared_ptr<const wire::TlsContext>> LinkTls(const RankConfig& config) {
  if (!config.tls.enabled()) return std::shared_ptr<const wire::TlsContext>();
  return wire::TlsContext::Create({*config.tls.cert, *config.tls.key, *config.tls.ca});
}

std::string LinkSecurityOf(const std::shared_ptr<const wire::TlsContext>& tls) {
  return tls ? "mutual TLS 1.3 (CA " + tls->config().ca_file + ")" : "plaintext";
}

// Heartbeats and the silence timeout of every record link ([cluster]).
wire::LivenessOptions RecordLinkLiveness(const ClusterConfig& cl) {
  return {.heartbeat_interval = cl.heartbeat_interval, .silence_timeout = cl.silence_timeout};
}

std::string HostPort(const std::string& address, uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// Rank zero: coordinator, store and runtime.
class RankZeroStores final : public RuntimeDriver {
 public:
  Status Open(const RankConfig& config, uint64_t seed) {
    STRATA_ASSIGN_OR_RETURN(OwnRank me, DescribeOwnRank(config));
    const ClusterConfig& cl = config.cluster;
    STRATA_ASSIGN_OR_RETURN(JobSecret secret, ReadJobSecret(cl.job_secret_file));
    const std::string service_token = RuntimeServiceToken(secret);
    const std::string secret_bytes(secret.bytes().begin(), secret.bytes().end());
    STRATA_ASSIGN_OR_RETURN(tls_, LinkTls(config));
    world_ = cl.world_size;
    if (config.attach.socket) {
      STRATA_ASSIGN_OR_RETURN(attached_, AttachPlanes::Open(me.own, config.runtime.gpus));
    } else {
      STRATA_ASSIGN_OR_RETURN(planes_, ProcessPlanes::Open(me.own, config.runtime.gpus));
    }
    STRATA_ASSIGN_OR_RETURN(
        rendezvous_,
        TcpRendezvousServer::Listen(
            cl.master_addr, cl.master_port, std::move(secret), OsNonceSource(), {},
            [](const Status& s) { spdlog::warn("rendezvous: {}", s.ToString()); }, tls_));
    spdlog::info("rendezvous listening on {}; waiting up to {} s for {} peer(s)",
                 HostPort(cl.master_addr, rendezvous_->port()), cl.connect_timeout.count() / 1000,
                 cl.world_size - 1);
    if (cl.rendezvous == RendezvousSource::kAttach) {
      STRATA_ASSIGN_OR_RETURN(
          early_attach_, AdmitRuntimeBeforeJoin(
                             config, attached_->importer(),
                             {.address = FormatRendezvousAddress(
                                  {.host = rendezvous_->address(), .port = rendezvous_->port()}),
                              .secret = secret_bytes}));
    }
    CoordinatorOptions o;
    o.world_size = cl.world_size;
    o.geometry = me.own;
    o.identity = me.identity;
    o.disk.base_dir = *config.prefix_cache.disk_dir;
    o.disk.durability = config.prefix_cache.durability;
    o.disk.registrar = planes_ ? planes_->registrar() : attached_->registrar();
    o.disk_limit_bytes = me.disk_limit;
    o.store.max_age_ms = config.prefix_cache.max_age
                             ? static_cast<uint64_t>(config.prefix_cache.max_age->count())
                             : 0;
    // Where peers already reach rank zero unless configured (docs/operations.md).
    o.listen = wire::Endpoint{cl.record_bind.value_or(rendezvous_->address()), cl.record_port};
    o.join_timeout = cl.connect_timeout;
    o.sharded.job_timeout = cl.job_timeout;
    o.link.tls = tls_;
    o.link.liveness = RecordLinkLiveness(cl);
    o.store.latencies = latencies_;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t,
                            attached_ ? attached_->MakeTransfers() : planes_->MakeTransfers());
    RecordingRendezvous recording(*rendezvous_);
    STRATA_ASSIGN_OR_RETURN(coordinator_,
                            Coordinator::Start(std::move(o), recording, std::move(t)));
    if (!attached_) {
      std::vector<std::string> services;
      for (const RendezvousPeer& p : recording.table().peers) {
        STRATA_ASSIGN_OR_RETURN(uint16_t port, ServicePort(config, p.rank.value));
        services.push_back(HostPort(p.address, port));
      }
      remote_ = std::make_unique<RemotePlanes>(me.all, planes_->planes(), services, service_token);
      runtime_ = std::make_unique<SyntheticRuntime>(*remote_, &coordinator_->store(),
                                                    SyntheticRuntimeOptions{.seed = seed});
    }
    const JoinStats& j = coordinator_->join_stats();
    summary_ = "coordinator for " + std::to_string(cl.world_size) + " ranks, disk store at " +
               coordinator_->record_dir() + ", limit " + std::to_string(j.disk_limit_bytes >> 20) +
               " MiB (smallest of all ranks), " +
               std::to_string(coordinator_->store().Stats().disk.records) + " records agreed, " +
               std::to_string(cl.world_size - 1) + " peer(s) joined, " + DescribePlanes();
    return Status::Ok();
  }

  HostStore* store() override { return coordinator_ ? &coordinator_->store() : nullptr; }
  std::unique_ptr<attach::AttachServer> TakeAttachServer() override {
    return std::move(early_attach_);
  }
  // Only without attach.socket (with it the attached runtime runs instead).
  SyntheticRuntime& runtime() override { return *runtime_; }
  PlaneImporter* attach_planes() override { return attached_ ? &attached_->importer() : nullptr; }
  std::string Summary() const override { return summary_; }
  std::string LinkSecurity() const override { return LinkSecurityOf(tls_); }

  Qualification MakeQualification() override {
    RecordListings listings = [this]() -> Result<std::vector<std::vector<std::string>>> {
      std::vector<std::vector<std::string>> all;
      STRATA_ASSIGN_OR_RETURN(std::vector<std::string> own,
                              ListRecordFiles(coordinator_->record_dir()));
      all.push_back(std::move(own));
      for (uint32_t r = 1; r < remote_->geometry().rank_count(); ++r) {
        STRATA_ASSIGN_OR_RETURN(std::vector<std::string> peer, remote_->Records(r));
        all.push_back(std::move(peer));
      }
      return all;
    };
    WaitIdle idle = [this] { return coordinator_->store().WaitIdle(kIdleBound); };
    return Qualification(*runtime_, listings, idle);
  }

  std::vector<PeerLinkStats> PeerLinks() const override {
    std::vector<PeerLinkStats> out;
    if (!coordinator_) return out;
    for (const PeerLinkReport& r : coordinator_->PeerLinks()) {
      out.push_back({r.peer, r.state, r.errors_by_reason});
    }
    return out;
  }

  std::string UnhealthyReason() const override {
    if (!coordinator_) return "not joined";
    Status s = coordinator_->store().stopped();
    if (!s.ok()) return "record transport stopped: " + s.ToString();
    // A link the transport has not polled yet (the owner is busy elsewhere).
    for (const PeerLinkReport& r : coordinator_->PeerLinks()) {
      const wire::LinkState& l = r.link_state;
      if (l.phase != wire::LinkPhase::kClosed) continue;
      return "lost rank " + std::to_string(r.peer.value) + ": its record link closed (" +
             std::string(wire::CloseCauseName(l.cause)) +
             (l.reason.ok() ? "" : ": " + l.reason.message()) + ")";
    }
    return "";
  }

  Status Close() override {
    if (!coordinator_) return Status::Ok();
    runtime_.reset();
    Status s = coordinator_->Close();
    // Every rank's planes have the same geometry, so each rank moved an
    // equal share of the bytes the store's jobs reported (the peers log theirs).
    const StoreStats st = coordinator_->store().Stats();
    const uint64_t world = world_;
    const uint64_t moved = st.disk.bytes_in_total + st.disk.bytes_out_total;
    spdlog::info("record jobs moved {} bytes over {} ranks: {} bytes per rank", moved, world,
                 moved / world);
    if (!s.ok()) {
      // Copies may still run on rank zero: keep what they could touch alive.
      (void)coordinator_.release();
      (void)planes_.release();
      (void)attached_.release();
      return s;
    }
    coordinator_.reset();
    return Status::Ok();
  }

 private:
  std::string DescribePlanes() const {
    return attached_ ? attached_->Describe() : planes_->Describe();
  }

  std::shared_ptr<const wire::TlsContext> tls_;  // null: plaintext
  uint32_t world_ = 0;
  std::unique_ptr<ProcessPlanes> planes_;   // without attach.socket
  std::unique_ptr<AttachPlanes> attached_;  // with attach.socket
  std::unique_ptr<TcpRendezvousServer> rendezvous_;
  std::unique_ptr<attach::AttachServer> early_attach_;  // cluster.rendezvous = "attach"
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<RemotePlanes> remote_;
  std::unique_ptr<SyntheticRuntime> runtime_;
  std::string summary_;
};

// A peer: rank agent plus runtime service; serves until rank zero closes.
class PeerStores final : public PeerRank {
 public:
  Status Open(const RankConfig& config) {
    STRATA_ASSIGN_OR_RETURN(OwnRank me, DescribeOwnRank(config));
    const ClusterConfig& cl = config.cluster;
    STRATA_ASSIGN_OR_RETURN(uint16_t service_port, ServicePort(config, cl.rank));
    const bool from_attach = cl.rendezvous == RendezvousSource::kAttach;
    from_attach_ = from_attach;
    // With cluster.rendezvous = "attach" the secret comes from the runtime.
    std::optional<JobSecret> secret;
    if (!from_attach) {
      STRATA_ASSIGN_OR_RETURN(secret, ReadJobSecret(cl.job_secret_file));
    }
    const std::string service_token = secret ? RuntimeServiceToken(*secret) : std::string();
    STRATA_ASSIGN_OR_RETURN(tls_, LinkTls(config));
    const bool attached = config.attach.socket.has_value();
    if (attached) {
      STRATA_ASSIGN_OR_RETURN(attached_, AttachPlanes::Open(me.own, config.runtime.gpus));
    } else {
      STRATA_ASSIGN_OR_RETURN(planes_, ProcessPlanes::Open(me.own, config.runtime.gpus));
    }
    rendezvous_ = std::make_unique<PeerRendezvous>(tls_);
    if (!from_attach) rendezvous_->DialAt(cl.master_addr, cl.master_port, std::move(*secret));
    RankAgentOptions o;
    o.rank = RankId(cl.rank);
    o.world_size = cl.world_size;
    o.geometry = me.own;
    o.identity = me.identity;
    o.disk.base_dir = *config.prefix_cache.disk_dir;
    o.disk.durability = config.prefix_cache.durability;
    o.disk.registrar = planes_ ? planes_->registrar() : attached_->registrar();
    o.disk_limit_bytes = me.disk_limit;
    o.join_timeout = cl.connect_timeout;
    o.link.tls = tls_;
    o.link.liveness = RecordLinkLiveness(cl);
    // The join waits until the runtime service is up, so rank zero never
    // reaches for a service that is not there yet.
    RankJoin through = rendezvous_->Join(o.rank, cl.world_size);
    std::shared_future<Status> service_up = service_up_.get_future().share();
    RankJoin join =
        [through,
         service_up](std::chrono::steady_clock::time_point deadline) -> Result<RecordLinkTicket> {
      if (service_up.wait_until(deadline) != std::future_status::ready) {
        return Status::Unavailable("runtime service did not start before the join deadline");
      }
      STRATA_RETURN_IF_ERROR(service_up.get());
      return through(deadline);
    };
    std::unique_ptr<Transfers> t;
    if (attached) {
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> inner, attached_->MakeTransfers());
      auto gated = std::make_unique<GatedTransfers>(std::move(inner));
      gate_ = gated.get();
      t = std::move(gated);
      service_up_.set_value(Status::Ok());  // no runtime service: the runtime attaches
    } else {
      STRATA_ASSIGN_OR_RETURN(t, planes_->MakeTransfers());
    }
    Result<std::unique_ptr<RankAgent>> agent = RankAgent::Start(std::move(o), join, std::move(t));
    if (!agent.ok()) {
      if (!attached) service_up_.set_value(Status::Aborted("agent did not start"));
      return agent.status();
    }
    agent_ = std::move(*agent);
    if (attached) {
      summary_ = "rank agent " + std::to_string(cl.rank) + " of " + std::to_string(cl.world_size) +
                 ", record directory " + agent_->record_dir() + ", limit " +
                 std::to_string(me.disk_limit >> 20) + " MiB, joining rank zero through " +
                 (from_attach ? std::string("the rendezvous its runtime hands over at attach")
                              : HostPort(cl.master_addr, cl.master_port)) +
                 ", " + attached_->Describe();
      return Status::Ok();
    }
    // Every `strata rank` workload drives the synthetic runtime on rank zero,
    // which writes and checks this rank's planes through this service; it is
    // started with the peer role and nowhere else (an embedding runtime, the
    // benches and the record tools never run it).
    Result<std::unique_ptr<RuntimeService>> service = RuntimeService::Start(
        planes_->planes(), agent_->record_dir(),
        {.bind = config.runtime.service_bind, .port = service_port, .token = service_token});
    service_up_.set_value(service.ok() ? Status::Ok() : service.status());
    if (!service.ok()) {
      return service.status().WithContext("runtime service on port " +
                                          std::to_string(service_port));
    }
    service_ = std::move(*service);
    summary_ = "rank agent " + std::to_string(cl.rank) + " of " + std::to_string(cl.world_size) +
               ", record directory " + agent_->record_dir() + ", limit " +
               std::to_string(me.disk_limit >> 20) + " MiB, joining rank zero through " +
               HostPort(cl.master_addr, cl.master_port) + ", runtime service on " +
               HostPort(config.runtime.service_bind, service_port) + ", " + planes_->Describe();
    return Status::Ok();
  }

  HostStore* store() override { return nullptr; }
  std::string Summary() const override { return summary_; }
  std::string LinkSecurity() const override { return LinkSecurityOf(tls_); }
  PlaneImporter* attach_planes() override { return attached_ ? &attached_->importer() : nullptr; }
  GatedTransfers* attach_gate() override { return gate_; }
  std::function<Status(const attach::AttachRendezvous&)> attach_rendezvous_sink() override {
    if (!from_attach_) return {};
    return [this](const attach::AttachRendezvous& r) { return rendezvous_->Take(r); };
  }

  std::vector<PeerLinkStats> PeerLinks() const override {
    return {{RankId(0), std::string(AgentStateName(agent_->state())), {}}};
  }
  std::string UnhealthyReason() const override {
    if (agent_->state() != AgentState::kFailed) return "";
    const std::optional<Status> outcome = agent_->Wait(std::chrono::steady_clock::now());
    return "rank agent failed" + (outcome ? ": " + outcome->ToString() : std::string());
  }
  bool Joining() const override { return agent_->state() == AgentState::kJoining; }
  bool Serving() const override {
    const AgentState s = agent_->state();
    return s != AgentState::kClosed && s != AgentState::kFailed;
  }
  bool WaitEnded(std::chrono::steady_clock::time_point deadline) override {
    return agent_->Wait(deadline).has_value();
  }

  Status Close() override {
    if (!agent_) return Status::Ok();
    const bool stopped_here = Serving();
    rendezvous_->Cancel();  // a join still waiting for its runtime or rank zero ends now
    agent_->Stop();
    const AgentStats stats = agent_->stats();
    spdlog::info("record jobs on this rank: {} done, {} failed, {} bytes moved", stats.jobs_done,
                 stats.jobs_failed, stats.bytes);
    // The agent bounds its own join and drain; this only guards a hang.
    std::optional<Status> outcome =
        agent_->Wait(std::chrono::steady_clock::now() + std::chrono::minutes(5));
    if (!outcome) {
      KeepMemory();
      return Status::Unavailable("rank agent did not stop; its memory stays allocated");
    }
    service_.reset();
    const bool kept_memory = outcome->message().find("keep device memory") != std::string::npos;
    if (kept_memory) {
      KeepMemory();
      return *outcome;
    }
    agent_.reset();
    // Stopped by a signal here: the drain finished, which is a clean stop.
    if (stopped_here && outcome->code() == StatusCode::kAborted) return Status::Ok();
    return *outcome;
  }

 private:
  // Copies may still run: leave the agent and the planes alive for good.
  void KeepMemory() {
    LeakOnPurpose(std::move(agent_));
    LeakOnPurpose(std::move(planes_));
    LeakOnPurpose(std::move(attached_));
  }

  std::shared_ptr<const wire::TlsContext> tls_;  // null: plaintext
  std::unique_ptr<ProcessPlanes> planes_;        // without attach.socket
  std::unique_ptr<AttachPlanes> attached_;       // with attach.socket
  GatedTransfers* gate_ = nullptr;               // owned by agent_; with attach.socket
  bool from_attach_ = false;                     // cluster.rendezvous = "attach"
  std::unique_ptr<PeerRendezvous> rendezvous_;   // outlives the agent's join
  std::promise<Status> service_up_;
  std::unique_ptr<RankAgent> agent_;
  std::unique_ptr<RuntimeService> service_;
  std::string summary_;
};

}  // namespace

Result<std::unique_ptr<RuntimeDriver>> OpenRankZeroStores(const RankConfig& config, uint64_t seed) {
  auto s = std::make_unique<RankZeroStores>();
  STRATA_RETURN_IF_ERROR(s->Open(config, seed));
  return std::unique_ptr<RuntimeDriver>(std::move(s));
}

Result<std::unique_ptr<PeerRank>> OpenPeerStores(const RankConfig& config) {
  auto s = std::make_unique<PeerStores>();
  STRATA_RETURN_IF_ERROR(s->Open(config));
  return std::unique_ptr<PeerRank>(std::move(s));
}

}  // namespace strata
