// LinkLiveness, driven by hand: when a heartbeat is due, when a peer counts
// as silent, and when to ask again. No clock, no sockets.
#include "wire/link/link_liveness.h"

#include <gtest/gtest.h>

namespace strata::wire {
namespace {

using std::chrono::milliseconds;
using Action = LinkLiveness::Action;
using TimePoint = LinkLiveness::TimePoint;

const TimePoint kStart{std::chrono::seconds(1000)};
TimePoint At(int64_t ms) { return kStart + milliseconds(ms); }

LivenessOptions Options(int64_t heartbeat_ms, int64_t silence_ms) {
  return {.heartbeat_interval = milliseconds(heartbeat_ms),
          .silence_timeout = milliseconds(silence_ms)};
}

TEST(LinkLivenessTest, DecidesFromTheLastSendAndTheLastReceipt) {
  struct Case {
    const char* name;
    int64_t last_sent_ms;
    int64_t last_received_ms;
    int64_t now_ms;
    Action action;
    int64_t next_check_ms;
  };
  // Heartbeat every 1000 ms, silent after 10000 ms.
  const Case cases[] = {
      {"fresh", 0, 0, 0, Action::kNone, 1000},
      {"just before the heartbeat", 0, 0, 999, Action::kNone, 1000},
      {"send-idle for the interval", 0, 0, 1000, Action::kSendHeartbeat, 2000},
      {"a recent send defers it", 700, 0, 1000, Action::kNone, 1700},
      {"receiving does not defer it", 0, 900, 1000, Action::kSendHeartbeat, 2000},
      {"silence due first", 9500, 0, 9900, Action::kNone, 10000},
      {"silent for the timeout", 9500, 0, 10000, Action::kCloseSilent, INT64_MAX},
      {"silence wins over a due heartbeat", 0, 0, 10000, Action::kCloseSilent, INT64_MAX},
      {"a late receipt keeps it alive", 9500, 9000, 10000, Action::kNone, 10500},
  };
  for (const Case& c : cases) {
    LinkLiveness l(Options(1000, 10000), kStart);
    l.Sent(At(c.last_sent_ms));
    l.Received(At(c.last_received_ms));
    const LinkLiveness::Decision d = l.Check(At(c.now_ms));
    EXPECT_EQ(d.action, c.action) << c.name;
    const TimePoint want = c.next_check_ms == INT64_MAX ? TimePoint::max() : At(c.next_check_ms);
    EXPECT_EQ(d.next_check, want) << c.name;
  }
}

TEST(LinkLivenessTest, ZeroTurnsARuleOff) {
  LinkLiveness no_heartbeat(Options(0, 10000), kStart);
  EXPECT_EQ(no_heartbeat.Check(At(5000)).action, Action::kNone);
  EXPECT_EQ(no_heartbeat.Check(At(5000)).next_check, At(10000));
  EXPECT_EQ(no_heartbeat.Check(At(10000)).action, Action::kCloseSilent);

  LinkLiveness no_silence(Options(1000, 0), kStart);
  EXPECT_EQ(no_silence.Check(At(3'600'000)).action, Action::kSendHeartbeat);

  LinkLiveness off(Options(0, 0), kStart);
  EXPECT_EQ(off.Check(At(3'600'000)).action, Action::kNone);
  EXPECT_EQ(off.Check(At(3'600'000)).next_check, TimePoint::max());
}

TEST(LinkLivenessTest, SilentForIsTheTimeSinceTheLastReceipt) {
  LinkLiveness l(Options(1000, 10000), kStart);
  l.Received(At(250));
  EXPECT_EQ(l.silent_for(At(4250)), milliseconds(4000));
}

}  // namespace
}  // namespace strata::wire
