// The synthetic runtime's own lockstep between its rank processes: what
// stands in for a real tensor-parallel runtime's execution protocol (NCCL
// groups, a scheduler's broadcast), which Strata never sees.
//
// Rank zero's runtime decides each turn; a peer's runtime process must then
// compute (write) the same pages into its own planes, or check restored
// ones there, before rank zero publishes or reports them. Rank zero's
// runtime listens (LockstepLeader); each peer's runtime connects to it
// (LockstepFollower), proves the job's secret with a token
// (JobToken(secret, kLockstepTokenLabel)), and then answers every PageWork
// rank zero sends with its own ApplyPageWork result. Frames: lockstep_frames.h.
//
// Only (prefix digest, page id) lists travel here, never page bytes: each
// rank derives its own bytes. The token travels in clear, like the runtime
// service's: the channel binds loopback unless runtime.service_bind says
// otherwise (docs/operations.md, "Attached runtime processes").
//
// Thread: each object on one thread. Every wait is bounded.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attach/client/unique_fd.h"
#include "launch/runtime/page_work.h"

namespace strata {

inline constexpr std::string_view kLockstepTokenLabel = "strata-runtime-lockstep-v1";
// Rank zero's runtime listens on metrics.port + kLockstepPortOffset.
inline constexpr uint16_t kLockstepPortOffset = 2000;

struct LockstepOptions {
  std::string token;  // JobToken(secret, kLockstepTokenLabel); not empty
  // Bound on one frame's read or write once it started, and on one answer.
  std::chrono::milliseconds io_bound{std::chrono::seconds(60)};
};

// Rank zero's runtime: every peer's runtime process, in rank order.
class LockstepLeader final : public RankPeers {
 public:
  // Listens on `bind`:`port` (numeric address; port 0: an ephemeral one).
  static Result<std::unique_ptr<LockstepLeader>> Listen(const std::string& bind, uint16_t port,
                                                        const LockstepOptions& options);
  uint16_t port() const { return port_; }
  // Admits one runtime process for each rank 1..world_size-1 within
  // `join_bound`. A hello with another token, a rank out of range or one
  // already admitted is dropped (logged) and the wait goes on.
  // kUnavailable when a rank is still missing at the bound.
  Status AdmitPeers(uint32_t world_size, std::chrono::milliseconds join_bound);
  ~LockstepLeader() override;

  // Sends `work` to every peer, then collects every answer: the sum of
  // the checked bytes, or the first failure (kUnavailable names a peer that
  // went away).
  Result<PageWorkReport> Apply(const PageWork& work) override;
  // Tells every peer the job's runtime is done and waits for each to say so.
  Status Finish();

 private:
  LockstepLeader(attach::UniqueFd listener, uint16_t port, LockstepOptions options);
  attach::UniqueFd listener_;
  uint16_t port_;
  std::vector<attach::UniqueFd> peers_;  // [rank - 1], once admitted
  LockstepOptions options_;
};

// A peer's runtime process: its connection to rank zero's runtime.
class LockstepFollower {
 public:
  // Connects to `host`:`port` (retrying a refused connect until
  // `join_bound`: rank zero's runtime may start later) and says hello as `rank`.
  // Once `stopped` (when given) returns true between retries: kAborted.
  static Result<std::unique_ptr<LockstepFollower>> Join(const std::string& host, uint16_t port,
                                                        uint32_t rank,
                                                        std::chrono::milliseconds join_bound,
                                                        const LockstepOptions& options,
                                                        const std::function<bool()>& stopped = {});

  using ApplyWork = std::function<Result<PageWorkReport>(const PageWork&)>;
  // Answers each PageWork with `apply` until rank zero says done (Ok),
  // goes away (kUnavailable), or `stopped` returns true between frames
  // (kAborted; checked at least every `stop_check`).
  Status Serve(const ApplyWork& apply, const std::function<bool()>& stopped,
               std::chrono::milliseconds stop_check);

 private:
  LockstepFollower(attach::UniqueFd fd, LockstepOptions options)
      : fd_(std::move(fd)), options_(std::move(options)) {}
  attach::UniqueFd fd_;
  LockstepOptions options_;
};

}  // namespace strata
