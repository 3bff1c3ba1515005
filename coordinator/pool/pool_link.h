// PoolLink: an instance's attachment to its manager (seed 2.15, startup and
// reconnects), the I/O shell around attach_rules.h. At startup it retries
// silently until the manager answers or kStartupAttachWaitMs passes, then
// warns once and stays local for good. An instance that attached reconnects
// after a lost connection, at most once per reconnect interval.
//
// Registration: with host planes nothing is registered, so any new Hello is
// taken. With device planes (a registrar) the arena is registered once per
// session, at the first Hello, and only after the budget (pool_budget.h)
// says the plan fits the host and every GPU: a plan that does not fit, or a
// registration the driver refuses, registers nothing, prints one warning
// naming the sizes, and leaves the instance on its local tiers for good.
// Reconnects to the same manager (same generation and sizes) reuse the
// registered mapping; a Hello whose generation or sizes changed disables
// sharing with one warning (DecideReattach). The registration ends with the
// link.
//
// Thread: one thread at a time (the model worker).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "coordinator/pool/attach_rules.h"
#include "coordinator/pool/pool_budget.h"
#include "coordinator/pool/pool_client.h"
#include "store/record/fingerprint.h"
#include "store/record/geometry.h"
#include "store/tier/store_clock.h"
#include "store/transfer/slab_pool.h"

namespace strata::pool {

// The Hello of an instance with `geometry` (every rank's planes, in scope
// order), serving `model`, identified by `sources` (GPU UUIDs, or one
// configured id for host planes).
PoolHello InstanceHello(const CacheGeometry& geometry, const NamespaceIdentity& model,
                        std::vector<std::string> sources);

enum class ArenaRegistration : uint8_t {
  kNone,        // host planes: the arena is only mapped
  kRegistered,  // device planes: the arena was registered (reuse rules apply)
};

struct PoolLinkOptions {
  PoolClientOptions client;
  ArenaRegistration registration = ArenaRegistration::kNone;
  // With kRegistered: registers the arena (CUDA host registration); not
  // owned, outlives the link. Null: the reattach rule applies, nothing is
  // registered.
  HostRegistrar* registrar = nullptr;
  // What the host and GPUs can give, read before the registration; unset:
  // unknown, which refuses the plan.
  std::function<BudgetSupply()> budget_supply;
  std::chrono::milliseconds startup_retry_interval{100};  // between startup attempts
  std::chrono::milliseconds reconnect_interval{1'000};    // between reconnects
  // The startup wait (kStartupAttachWaitMs) and the reconnect interval read
  // clock.steady; tests move it by hand. Default: the real clock.
  StoreClock clock{};
};

class PoolLink {
 public:
  // Blocks at startup until attached or the wait is over (then one warning);
  // a refused budget or registration ends it at once (local for good).
  static std::unique_ptr<PoolLink> AttachAtStartup(const PoolLinkOptions& options);
  // Ends the arena's registration.
  ~PoolLink();

  // The connected client, reconnecting first when an attached instance lost
  // it and the interval has passed; null while local.
  PoolClient* client();
  // The connected client, never reconnecting (Poll's: it must not block).
  PoolClient* connected() const { return client_.get(); }
  // The connection failed (`why`): drop the client; reconnect later.
  void Lost(const Status& why);

  AttachPhase phase() const { return phase_; }
  bool sharing() const { return phase_ == AttachPhase::kAttached && !disabled_; }
  // The arena's registered base (null: nothing registered).
  const std::byte* registered_base() const {
    return registered_arena_ ? registered_arena_->base() : nullptr;
  }
  uint64_t reconnects() const { return reconnects_; }
  // Counts successful connections: a lookup sent on one is answered on it
  // only (lookup tickets name it).
  uint64_t connection() const { return connections_; }
  // Microseconds of the link's monotone clock (options' clock.steady).
  uint64_t NowUs() const;
  // The lookup grace of the connection (PoolClient::lookup_grace_us: the
  // client's lookup_bound, which InstanceLinkOptions sets to the seed's 2 ms
  // for a manager on this host's socket; over TCP, four measured round trips clamped to
  // 2-250 ms, lookup_grace.h); while not connected, the bound, else a TCP
  // manager's 2 ms, else the answer_bound.
  uint64_t lookup_grace_us() const;
  // Tokens per page of the instance's layout (its Hello's).
  uint32_t page_tokens() const { return options_.client.hello.page_tokens; }

 private:
  explicit PoolLink(PoolLinkOptions options) : options_(std::move(options)) {}
  uint64_t NowMs() const;
  // One connection attempt, its steps within `bound` (unset: the client's
  // answer bound); on success checks the Hello against the last.
  Status Connect(std::optional<std::chrono::milliseconds> bound = std::nullopt);
  // The bound of a reconnect, made on the model's thread (a lookup or a
  // claim finds the connection gone): a manager on this host answers a
  // Hello in well under a millisecond.
  static constexpr std::chrono::milliseconds kReconnectBound{100};
  // Budget, then registration of `client`'s arena; a refusal warns once and
  // disables sharing.
  Status RegisterArena(const PoolClient& client);

  PoolLinkOptions options_;
  AttachPhase phase_ = AttachPhase::kStartup;
  bool disabled_ = false;  // a reattach that cannot reuse registrations
  std::unique_ptr<PoolClient> client_;
  ArenaShape registered_{};
  // The registered mapping (kRegistered with a registrar), reused by
  // reconnects to the same manager.
  std::shared_ptr<Arena> registered_arena_;
  uint64_t next_reconnect_ms_ = 0;
  uint64_t reconnects_ = 0;
  uint64_t connections_ = 0;
};

}  // namespace strata::pool
