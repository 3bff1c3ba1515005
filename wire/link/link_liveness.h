// LinkLiveness: when an open link should send a Heartbeat and when its peer
// counts as lost, from when the link last sent and last received. Pure logic:
// no clock reads, timers or sockets; the link passes `now` in and acts on the
// decision (wire/link/link.h, docs/wire.md "Liveness").
//
// Rules: a link that has accepted no frame to send for heartbeat_interval
// sends a Heartbeat; a link that has read no byte for silence_timeout is
// closed as kPeerSilent. Silence wins when both are due. A zero duration
// turns its rule off.
#pragma once

#include <chrono>

namespace strata::wire {

// Defaults of LinkOptions: a heartbeat after 1 s without a send, a peer lost
// after 10 s without a byte (ten heartbeats missed).
inline constexpr std::chrono::milliseconds kHeartbeatIntervalDefault{1000};
inline constexpr std::chrono::milliseconds kSilenceTimeoutDefault{10'000};

struct LivenessOptions {
  std::chrono::milliseconds heartbeat_interval = kHeartbeatIntervalDefault;  // 0: never
  std::chrono::milliseconds silence_timeout = kSilenceTimeoutDefault;        // 0: never
};

class LinkLiveness {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  enum class Action : unsigned char {
    kNone,           // nothing due before next_check
    kSendHeartbeat,  // send-idle for heartbeat_interval
    kCloseSilent,    // nothing read for silence_timeout
  };
  struct Decision {
    Action action = Action::kNone;
    // When to ask again (unchanged activity); TimePoint::max() when both rules are off.
    TimePoint next_check = TimePoint::max();
  };

  // Both clocks start at `now` (the link opened or its peer was admitted).
  LinkLiveness(LivenessOptions options, TimePoint now);

  void Sent(TimePoint now) { last_sent_ = now; }
  void Received(TimePoint now) { last_received_ = now; }
  Decision Check(TimePoint now) const;

  // How long nothing was read, at `now` (for the close reason).
  std::chrono::milliseconds silent_for(TimePoint now) const;
  const LivenessOptions& options() const { return options_; }

 private:
  LivenessOptions options_;
  TimePoint last_sent_;
  TimePoint last_received_;
};

}  // namespace strata::wire
