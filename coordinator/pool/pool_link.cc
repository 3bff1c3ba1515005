#include "coordinator/pool/pool_link.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pool_scope.h"
#include "coordinator/pool/pool_socket.h"

namespace strata::pool {

PoolHello InstanceHello(const CacheGeometry& geometry, const NamespaceIdentity& model,
                        std::vector<std::string> sources) {
  return PoolHello{.instance_sources = std::move(sources),
                   .model_identity = model,
                   .layout = ComputeLayoutFingerprint(geometry),
                   .rank_plane_bytes = RankPlaneBytes(geometry),
                   .page_tokens = geometry.page_tokens,
                   .proof = std::nullopt,
                   .client_nonce = std::nullopt};
}

uint64_t PoolLink::NowMs() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   options_.clock.steady().time_since_epoch())
                                   .count());
}

uint64_t PoolLink::NowUs() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   options_.clock.steady().time_since_epoch())
                                   .count());
}

uint64_t PoolLink::lookup_grace_us() const {
  if (client_ != nullptr) return client_->lookup_grace_us();
  if (options_.client.lookup_bound) {
    return static_cast<uint64_t>(std::chrono::microseconds(*options_.client.lookup_bound).count());
  }
  // Not connected, no bound set: a TCP manager's shortest network grace.
  const Result<PoolAddress> address = ParsePoolAddress(options_.client.socket_path);
  if (address.ok() && address->tcp()) return kNetworkGraceMinUs;
  return static_cast<uint64_t>(std::chrono::microseconds(options_.client.answer_bound).count());
}

std::unique_ptr<PoolLink> PoolLink::AttachAtStartup(const PoolLinkOptions& options) {
  std::unique_ptr<PoolLink> link(new PoolLink(options));
  const uint64_t started = link->NowMs();
  for (;;) {
    Status s = link->Connect();
    if (s.ok()) return link;
    if (link->disabled_) {  // the budget or the registration refused: warned already
      link->phase_ = AttachPhase::kLocalForever;
      return link;
    }
    const AttachFailure failure = AttachFailureOf(s);
    if (AfterFailedAttach(AttachPhase::kStartup, started, link->NowMs(), failure) ==
        AttachStep::kGiveUpWithWarning) {
      if (failure == AttachFailure::kRefused) {
        spdlog::warn(
            "prefix cache pool at {} refused this instance ({}): using local tiers only; "
            "this instance will not attach later",
            options.client.socket_path, s.ToString());
      } else {
        spdlog::warn(
            "prefix cache pool at {} did not answer within {} ms ({}): using local tiers only; "
            "this instance will not attach later",
            options.client.socket_path, kStartupAttachWaitMs, s.ToString());
      }
      link->phase_ = AttachPhase::kLocalForever;
      return link;
    }
    std::this_thread::sleep_for(options.startup_retry_interval);
  }
}

PoolLink::~PoolLink() {
  client_.reset();
  if (registered_arena_ && options_.registrar != nullptr) {
    (void)options_.registrar->Unregister(registered_arena_->base());
  }
}

Status PoolLink::RegisterArena(const PoolClient& client) {
  const uint64_t bytes = client.arena().bytes();
  const BudgetSupply supply = options_.budget_supply ? options_.budget_supply() : BudgetSupply{};
  const BudgetDecision budget = DecideBudget(supply, RegistrationPlan{.region_bytes = {bytes}});
  if (!budget.fits()) {
    spdlog::warn("{} (nothing registered)", budget.warning);
    disabled_ = true;
    return Status::FailedPrecondition(budget.warning);
  }
  if (Status s = options_.registrar->Register(client.arena().base(), bytes); !s.ok()) {
    spdlog::warn("prefix cache pool: registering the arena ({} bytes) failed: {}; local tiers only",
                 bytes, s.ToString());
    disabled_ = true;
    return s;
  }
  // Slots are handed to copies by their host address: the devices must
  // address the arena at the same one (seed 2.15, "Registration").
  if (Status s = options_.registrar->CheckSameAddress(client.arena().base()); !s.ok()) {
    spdlog::warn("prefix cache pool: the arena's device address differs ({}); local tiers only",
                 s.ToString());
    (void)options_.registrar->Unregister(client.arena().base());
    disabled_ = true;
    return s;
  }
  registered_arena_ = client.shared_arena();
  return Status::Ok();
}

Status PoolLink::Connect(std::optional<std::chrono::milliseconds> bound) {
  PoolClientOptions client_options = options_.client;
  if (bound) client_options.connect_bound = bound;
  client_options.reuse_arena = registered_arena_;
  client_options.reuse_generation = registered_.generation;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PoolClient> c, PoolClient::Connect(client_options));
  const PoolHelloAccept& a = c->accepted();
  const ArenaShape announced{.generation = a.generation,
                             .region_bytes = {a.slot_bytes * a.slot_count}};
  // Over the data channel nothing is mapped here: no registration to keep.
  const bool registers = options_.registration == ArenaRegistration::kRegistered && c->maps_arena();
  if (phase_ == AttachPhase::kAttached && registers &&
      DecideReattach(registered_, announced) == Reattach::kDisableSharing) {
    spdlog::warn("prefix cache pool: {}", ReattachWarning(registered_, announced));
    disabled_ = true;
    return Status::FailedPrecondition("sharing disabled until a restart");
  }
  if (registers && options_.registrar != nullptr && !registered_arena_) {
    STRATA_RETURN_IF_ERROR(RegisterArena(*c));
  }
  registered_ = announced;
  phase_ = AttachPhase::kAttached;
  client_ = std::move(c);
  ++connections_;
  spdlog::info("prefix cache pool {}: attached (generation {}, {} slots of {} bytes, {})",
               a.pool_name, a.generation, a.slot_count, a.slot_bytes,
               client_->maps_arena() ? "the arena mapped" : "through the TCP data channel");
  return Status::Ok();
}

PoolClient* PoolLink::client() {
  if (client_ || !sharing()) return client_.get();
  const uint64_t now = NowMs();
  if (AfterFailedAttach(phase_, 0, now) != AttachStep::kRetry || now < next_reconnect_ms_) {
    return nullptr;
  }
  next_reconnect_ms_ = now + static_cast<uint64_t>(options_.reconnect_interval.count());
  // On the model's thread (a lookup, a claim): a short bound.
  if (Connect(kReconnectBound).ok()) ++reconnects_;
  return client_.get();
}

void PoolLink::Lost(const Status& why) {
  if (!client_) return;
  spdlog::warn("prefix cache pool: connection lost ({}); reconnecting", why.ToString());
  client_.reset();
  next_reconnect_ms_ = NowMs() + static_cast<uint64_t>(options_.reconnect_interval.count());
}

}  // namespace strata::pool
