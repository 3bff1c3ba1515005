#include "wire/link/link_liveness.h"

#include <algorithm>

namespace strata::wire {

LinkLiveness::LinkLiveness(LivenessOptions options, TimePoint now)
    : options_(options), last_sent_(now), last_received_(now) {}

LinkLiveness::Decision LinkLiveness::Check(TimePoint now) const {
  const bool silence_on = options_.silence_timeout.count() > 0;
  const bool heartbeat_on = options_.heartbeat_interval.count() > 0;
  if (silence_on && now - last_received_ >= options_.silence_timeout) {
    return {Action::kCloseSilent, TimePoint::max()};
  }
  Decision d;
  if (heartbeat_on && now - last_sent_ >= options_.heartbeat_interval) {
    d.action = Action::kSendHeartbeat;
    // Once sent (Sent(now)), the next one is due a full interval later.
    d.next_check = now + options_.heartbeat_interval;
  } else if (heartbeat_on) {
    d.next_check = last_sent_ + options_.heartbeat_interval;
  }
  if (silence_on) d.next_check = std::min(d.next_check, last_received_ + options_.silence_timeout);
  return d;
}

std::chrono::milliseconds LinkLiveness::silent_for(TimePoint now) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - last_received_);
}

}  // namespace strata::wire
