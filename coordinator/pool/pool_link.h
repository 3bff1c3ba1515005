// PoolLink: an instance's attachment to its manager (seed 2.15, startup and
// reconnects), the I/O shell around attach_rules.h. At startup it retries
// silently until the manager answers or kStartupAttachWaitMs passes, then
// warns once and stays local for good. An instance that attached reconnects
// after a lost connection, at most once per reconnect interval.
//
// Registration: with host planes nothing is registered, so any new Hello is
// taken. With registered memory (CUDA, not built) a Hello whose generation or
// region sizes changed disables sharing with one warning (DecideReattach).
//
// Thread: one thread at a time (the model worker).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "coordinator/pool/attach_rules.h"
#include "coordinator/pool/pool_client.h"
#include "store/record/fingerprint.h"
#include "store/record/geometry.h"
#include "store/tier/store_clock.h"

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
  std::chrono::milliseconds startup_retry_interval{100};  // between startup attempts
  std::chrono::milliseconds reconnect_interval{1'000};    // between reconnects
  // The startup wait (kStartupAttachWaitMs) and the reconnect interval read
  // clock.steady; tests move it by hand. Default: the real clock.
  StoreClock clock{};
};

class PoolLink {
 public:
  // Blocks at startup until attached or the wait is over (then one warning).
  static std::unique_ptr<PoolLink> AttachAtStartup(const PoolLinkOptions& options);

  // The connected client, reconnecting first when an attached instance lost
  // it and the interval has passed; null while local.
  PoolClient* client();
  // The connection failed (`why`): drop the client; reconnect later.
  void Lost(const Status& why);

  AttachPhase phase() const { return phase_; }
  bool sharing() const { return phase_ == AttachPhase::kAttached && !disabled_; }
  uint64_t reconnects() const { return reconnects_; }

 private:
  explicit PoolLink(PoolLinkOptions options) : options_(std::move(options)) {}
  uint64_t NowMs() const;
  // One connection attempt; on success checks the Hello against the last.
  Status Connect();

  PoolLinkOptions options_;
  AttachPhase phase_ = AttachPhase::kStartup;
  bool disabled_ = false;  // a reattach that cannot reuse registrations
  std::unique_ptr<PoolClient> client_;
  ArenaShape registered_{};
  uint64_t next_reconnect_ms_ = 0;
  uint64_t reconnects_ = 0;
};

}  // namespace strata::pool
