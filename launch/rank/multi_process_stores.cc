// The roles of ranks in separate processes (seed 2.14): rank zero runs the
// coordinator (its own record directory, the record listener, the one
// DiskStore over the sharded transport) and, with prefix_cache.pool, the
// pool session over that store (seed 2.15); every other rank runs a rank
// agent on its own record directory. Records move only over the record
// links.
// Each rank chooses its own record transport by its own GPUDirect probe
// ([prefix_cache] transport): its share of every job runs direct where its
// host accepts, staged otherwise.
//
// Every rank serves attach.socket: its planes are its attached runtime's
// memory (attach/; `strata runtime` or an embedding runtime), rank zero's
// runtime makes the store calls, and every rank copies through transfers
// gated on its runtime being attached (launch/rank/attach_workload.h): a
// peer's agent, and rank zero's own share of the store's jobs.
// With cluster.rendezvous = "attach", rank zero admits its runtime
// before the join and tells it the rendezvous address and job secret, and a
// peer joins only once its runtime's Hello handed them over
// (launch/rank/peer_rendezvous.h).
#include <spdlog/spdlog.h>

#include "coordinator/coordinator.h"
#include "coordinator/rendezvous/rendezvous_address.h"
#include "coordinator/rendezvous/tcp_rendezvous.h"
#include "launch/pool_metrics.h"
#include "launch/presets.h"
#include "launch/rank/attach_workload.h"
#include "launch/rank/multi_process_stores.h"
#include "launch/rank/peer_rendezvous.h"
#include "launch/rank/rank_disk_transport.h"
#include "launch/rank/rank_pool.h"
#include "launch/rank/rank_transport.h"
#include "launch/runtime/attach_planes.h"
#include "rank_agent/rank_agent.h"
#include "store/base/deliberate_leak.h"
#include "store/transfer/host_planes.h"
#include "wire/tls.h"

namespace strata {

namespace {

// Rank zero's GPU UUID, or none for host planes (or a GPU the driver cannot
// name: the pool then names the instance by host and process).
std::vector<std::string> RankZeroGpuUuids(const AttachPlanes& planes) {
  std::optional<AttachedGpu> gpu = planes.gpu();
  if (!gpu) return {};
  Result<std::string> uuid = gpu->driver->DeviceUuid(gpu->ordinal);
  if (!uuid.ok()) return {};
  return {*uuid};
}

// What one process of the job holds of the cache: its own rank's planes.
struct OwnRank {
  CacheGeometry own;  // this process's rank alone
  CacheGeometry all;  // every rank's (the layout a pooled record has)
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
  if (!config.attach.socket) {
    return Status::InvalidArgument(
        "attach.socket: ranks in separate processes each serve an attached runtime; set "
        "attach.socket (--attach-socket) and run one `strata runtime` per rank with the same "
        "flags (docs/operations.md, \"Attached runtime processes\")");
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

std::string LinkSecurityOf(const std::shared_ptr<const wire::TlsContext>& tls) {
  return tls ? "mutual TLS 1.3 (CA " + tls->config().ca_file + ")" : "plaintext";
}

// Every record link's options: its TLS, and from [cluster] its heartbeats,
// silence timeout and idle spin.
wire::LinkOptions RecordLinkOptions(const ClusterConfig& cl,
                                    const std::shared_ptr<const wire::TlsContext>& tls) {
  wire::LinkOptions o;
  o.tls = tls;
  o.liveness = {.heartbeat_interval = cl.heartbeat_interval, .silence_timeout = cl.silence_timeout};
  o.idle_spin = std::chrono::microseconds(cl.link_idle_spin_us);
  return o;
}

// The direct side's seams over `planes` (an attached runtime's, on one
// GPU), whose io registers each attachment's planes with cuFile from now on
// (the one mapped already too, when the runtime attached before the join).
Result<DirectSeams> AttachedSeams(const RankTransportChoice& chosen, AttachPlanes& planes) {
  const std::optional<AttachedGpu> gpu = planes.gpu();
  if (!gpu)
    return Status::FailedPrecondition("the direct transport needs the planes in GPU memory");
  STRATA_ASSIGN_OR_RETURN(DirectSeams seams,
                          CuFileAttachedSeams(chosen.library, CuFileIoModeFor(chosen.decision.kind),
                                              *gpu, planes.importer().shared_geometry()));
  planes.ObserveMappings(seams.on_mapping);
  return seams;
}

// This rank's record transport, by its own probe on its own host (seed 2.6:
// with ranks on separate hosts each runs its own, and the job runs direct
// where that host accepts it), over the attached planes behind `gate`.
// `decision` receives the choice (for the startup line and /status); a
// transport = "direct" that the probe refuses fails the rank's startup.
DiskTransportFactory AttachedTransportFactory(const RankConfig& config, AttachPlanes& planes,
                                              GatedTransfers& gate, TransportDecision& decision) {
  return [config, &planes, &gate, &decision](
             LocalDisk& disk, std::unique_ptr<Transfers> transfers,
             const StagedOptions& staged) -> Result<std::unique_ptr<DiskTransport>> {
    STRATA_ASSIGN_OR_RETURN(RankTransportChoice chosen, ChooseRankTransport(config, disk.path()));
    decision = chosen.decision;
    return OpenAttachedDiskTransport(chosen.decision, disk, planes.bases(), std::move(transfers),
                                     staged, gate, [&] { return AttachedSeams(chosen, planes); });
  };
}

std::string HostPort(const std::string& address, uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// Rank zero: coordinator and store, serving its attached runtime.
class RankZeroStores final : public RuntimeDriver {
 public:
  Status Open(const RankConfig& config) {
    STRATA_ASSIGN_OR_RETURN(OwnRank me, DescribeOwnRank(config));
    const ClusterConfig& cl = config.cluster;
    STRATA_ASSIGN_OR_RETURN(JobSecret secret, ReadJobSecret(cl.job_secret_file));
    const std::string secret_bytes(secret.bytes().begin(), secret.bytes().end());
    STRATA_ASSIGN_OR_RETURN(tls_, RankTls(config));
    world_ = cl.world_size;
    STRATA_ASSIGN_OR_RETURN(attached_, AttachPlanes::Open(me.own, config.runtime.gpus,
                                                          TransferThreads(config.runtime)));
    // Every copy over the runtime's planes passes the gate, so a detach waits
    // for exactly those: once a lost peer stopped the sharded transport its
    // jobs are never reported, but rank zero's own copies still finish (the
    // transport keeps polling its local one) and count down here.
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> inner, attached_->MakeTransfers());
    auto gated = std::make_unique<GatedTransfers>(std::move(inner));
    gate_ = gated.get();
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
                             config, attached_->importer(), *gate_,
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
    o.disk.disk_thread.idle_spin = IdleSpin(config.prefix_cache);
    o.disk.registrar = attached_->registrar();
    o.disk_limit_bytes = me.disk_limit;
    o.store.max_age_ms = config.prefix_cache.max_age
                             ? static_cast<uint64_t>(config.prefix_cache.max_age->count())
                             : 0;
    // Where peers already reach rank zero unless configured (docs/operations.md).
    o.listen = wire::Endpoint{cl.record_bind.value_or(rendezvous_->address()), cl.record_port};
    o.join_timeout = cl.connect_timeout;
    o.sharded.job_timeout = cl.job_timeout;
    o.sharded.idle_spin = IdleSpin(config.prefix_cache);
    o.link = RecordLinkOptions(cl, tls_);
    o.shared_link_thread = cl.shared_link_thread;
    o.store.latencies = latencies_;
    o.make_transport = AttachedTransportFactory(config, *attached_, *gate_, transport_);
    STRATA_ASSIGN_OR_RETURN(coordinator_,
                            Coordinator::Start(std::move(o), *rendezvous_, std::move(gated)));
    const JoinStats& j = coordinator_->join_stats();
    summary_ = "coordinator for " + std::to_string(cl.world_size) + " ranks, disk store at " +
               coordinator_->record_dir() + ", limit " + std::to_string(j.disk_limit_bytes >> 20) +
               " MiB (smallest of all ranks), " +
               std::to_string(coordinator_->store().Stats().disk.records) + " records agreed, " +
               std::to_string(cl.world_size - 1) + " peer(s) joined, " + attached_->Describe() +
               ", " + TransportSummary(transport_);
    // Rank zero owns the pool session; every rank moves its own share of a
    // put or claim over the record links (docs/pool.md, "Multi-process
    // instances"). The arena is only mapped: claims land on disk first. The
    // instance is named by rank zero's GPU (no other instance's rank zero
    // runs on it), so its identity at the pool survives a restart.
    STRATA_ASSIGN_OR_RETURN(pool_, AttachRankPool(config, me.all, &coordinator_->store(), {},
                                                  {.registrar = nullptr,
                                                   .supply = {},
                                                   .gpu_uuids = RankZeroGpuUuids(*attached_)}));
    if (pool_) {
      summary_ += ", pool at " + *config.prefix_cache.pool +
                  (pool_->store().link().sharing() ? "" : " (not attached)");
    }
    return Status::Ok();
  }

  HostStore* store() override {
    if (pool_) return &pool_->store();
    return coordinator_ ? &coordinator_->store() : nullptr;
  }
  TransportDecision Transport() const override { return transport_; }
  std::vector<MetricFamily> ExtraMetrics() const override {
    if (pool_) return PoolClientMetrics(pool_->store().pool_stats());
    if (!coordinator_) return {};
    return {UnpooledEndOfChainDrops(coordinator_->store().Stats(), /*has_disk=*/true)};
  }
  std::unique_ptr<attach::AttachServer> TakeAttachServer() override {
    return std::move(early_attach_);
  }
  // Never called: rank zero in its own process always serves an attached
  // runtime (Open refuses it without attach.socket), and runtime() and
  // MakeQualification() are only for a rank without one (rank_stores.h).
  SyntheticRuntime& runtime() override { NoSyntheticRuntime(); }
  Qualification MakeQualification() override { NoSyntheticRuntime(); }
  PlaneImporter* attach_planes() override { return &attached_->importer(); }
  GatedTransfers* attach_gate() override { return gate_; }
  std::string Summary() const override { return summary_; }
  std::string LinkSecurity() const override { return LinkSecurityOf(tls_); }

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
             wire::DescribeClose(l) + ")";
    }
    return "";
  }

  Status Close() override {
    if (!coordinator_) return Status::Ok();
    // The pool's parked puts get their bounded flush while the disk tier
    // and the links still run; closing it closes the disk store too.
    const Status pooled = pool_ ? pool_->store().Close() : Status::Ok();
    Status s = coordinator_->Close();
    if (s.ok()) s = pooled;
    // Every rank's planes have the same geometry, so each rank moved an
    // equal share of the bytes the store's jobs reported (the peers log theirs).
    const StoreStats st = coordinator_->store().Stats();
    const uint64_t world = world_;
    const uint64_t moved = st.disk.bytes_in_total + st.disk.bytes_out_total;
    spdlog::info("record jobs moved {} bytes over {} ranks: {} bytes per rank", moved, world,
                 moved / world);
    if (!s.ok()) {
      // Copies may still run on rank zero: keep what they could touch alive.
      (void)pool_.release();
      (void)coordinator_.release();
      (void)attached_.release();
      return s;
    }
    pool_.reset();  // unhooks the disk tier's eviction sink first
    coordinator_.reset();
    return Status::Ok();
  }

 private:
  [[noreturn]] static void NoSyntheticRuntime() {
    spdlog::critical("rank zero in its own process has no synthetic runtime (attach.socket)");
    std::abort();
  }

  std::shared_ptr<const wire::TlsContext> tls_;  // null: plaintext
  uint32_t world_ = 0;
  std::unique_ptr<AttachPlanes> attached_;
  GatedTransfers* gate_ = nullptr;  // owned by coordinator_ once it started
  std::unique_ptr<TcpRendezvousServer> rendezvous_;
  std::unique_ptr<attach::AttachServer> early_attach_;  // cluster.rendezvous = "attach"
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<pool::InstancePool> pool_;  // with prefix_cache.pool
  TransportDecision transport_{.kind = TransportKind::kStaged, .reason = "configured"};
  std::string summary_;
};

// A peer: rank agent copying into its attached runtime's planes; serves
// until rank zero closes.
class PeerStores final : public PeerRank {
 public:
  Status Open(const RankConfig& config) {
    STRATA_ASSIGN_OR_RETURN(OwnRank me, DescribeOwnRank(config));
    const ClusterConfig& cl = config.cluster;
    if (config.prefix_cache.pool) {
      spdlog::info(
          "prefix_cache.pool: rank zero owns the pool session; rank {} moves its share of every "
          "put and claim over its record link",
          cl.rank);
    }
    from_attach_ = cl.rendezvous == RendezvousSource::kAttach;
    STRATA_ASSIGN_OR_RETURN(tls_, RankTls(config));
    STRATA_ASSIGN_OR_RETURN(attached_, AttachPlanes::Open(me.own, config.runtime.gpus,
                                                          TransferThreads(config.runtime)));
    rendezvous_ = std::make_unique<PeerRendezvous>(tls_);
    // With cluster.rendezvous = "attach" the secret comes from the runtime.
    if (!from_attach_) {
      STRATA_ASSIGN_OR_RETURN(JobSecret secret, ReadJobSecret(cl.job_secret_file));
      rendezvous_->DialAt(cl.master_addr, cl.master_port, std::move(secret));
    }
    RankAgentOptions o;
    o.rank = RankId(cl.rank);
    o.world_size = cl.world_size;
    o.geometry = me.own;
    o.identity = me.identity;
    o.disk.base_dir = *config.prefix_cache.disk_dir;
    o.disk.durability = config.prefix_cache.durability;
    o.disk.disk_thread.idle_spin = IdleSpin(config.prefix_cache);
    o.disk.registrar = attached_->registrar();
    o.disk_limit_bytes = me.disk_limit;
    o.join_timeout = cl.connect_timeout;
    o.link = RecordLinkOptions(cl, tls_);
    RankJoin join = rendezvous_->Join(o.rank, cl.world_size);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> inner, attached_->MakeTransfers());
    auto gated = std::make_unique<GatedTransfers>(std::move(inner));
    gate_ = gated.get();
    o.make_transport = AttachedTransportFactory(config, *attached_, *gate_, transport_);
    STRATA_ASSIGN_OR_RETURN(agent_, RankAgent::Start(std::move(o), join, std::move(gated)));
    summary_ = "rank agent " + std::to_string(cl.rank) + " of " + std::to_string(cl.world_size) +
               ", record directory " + agent_->record_dir() + ", limit " +
               std::to_string(me.disk_limit >> 20) + " MiB, joining rank zero through " +
               (from_attach_ ? std::string("the rendezvous its runtime hands over at attach")
                             : HostPort(cl.master_addr, cl.master_port)) +
               ", " + attached_->Describe() + ", " + TransportSummary(transport_);
    return Status::Ok();
  }

  HostStore* store() override { return nullptr; }
  TransportDecision Transport() const override { return transport_; }
  std::string Summary() const override { return summary_; }
  std::string LinkSecurity() const override { return LinkSecurityOf(tls_); }
  PlaneImporter* attach_planes() override { return &attached_->importer(); }
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
    LeakOnPurpose(std::move(attached_));
  }

  std::shared_ptr<const wire::TlsContext> tls_;  // null: plaintext
  std::unique_ptr<AttachPlanes> attached_;
  GatedTransfers* gate_ = nullptr;              // owned by agent_
  bool from_attach_ = false;                    // cluster.rendezvous = "attach"
  std::unique_ptr<PeerRendezvous> rendezvous_;  // outlives the agent's join
  std::unique_ptr<RankAgent> agent_;
  TransportDecision transport_{.kind = TransportKind::kStaged, .reason = "configured"};
  std::string summary_;
};

}  // namespace

Result<std::unique_ptr<RuntimeDriver>> OpenRankZeroStores(const RankConfig& config) {
  auto s = std::make_unique<RankZeroStores>();
  STRATA_RETURN_IF_ERROR(s->Open(config));
  return std::unique_ptr<RuntimeDriver>(std::move(s));
}

Result<std::unique_ptr<PeerRank>> OpenPeerStores(const RankConfig& config) {
  auto s = std::make_unique<PeerStores>();
  STRATA_RETURN_IF_ERROR(s->Open(config));
  return std::unique_ptr<PeerRank>(std::move(s));
}

}  // namespace strata
