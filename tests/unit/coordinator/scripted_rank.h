// A peer rank played by a test: it dials rank zero's record listener over a
// real link (TLS when given a context) and sends and expects messages by
// hand, for the join tests (join_test.cc, tls_cluster_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "coordinator/rendezvous/rendezvous.h"
#include "store/record/fingerprint.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"
#include "wire/tls.h"

namespace strata::testing {

class ScriptedRank {
 public:
  // `tls` null: a plaintext link.
  explicit ScriptedRank(const JoinTicket& ticket,
                        std::shared_ptr<const wire::TlsContext> tls = nullptr) {
    // Quiet on its side; rank zero's heartbeats are skipped by Next().
    wire::LinkOptions o = wire::testing::QuietLinkOptions();
    o.tls = std::move(tls);
    auto link = wire::Dial({ticket.record_host, ticket.record_port}, o);
    EXPECT_TRUE(link.ok());
    link_ = std::move(*link);
    link_->Start(events_.Handlers());
  }
  ~ScriptedRank() { link_.reset(); }
  ScriptedRank(const ScriptedRank&) = delete;
  ScriptedRank& operator=(const ScriptedRank&) = delete;

  void Send(const wire::Message& m) { EXPECT_TRUE(link_->Send(m).ok()); }
  // The next message other than a Heartbeat.
  wire::Message Next() {
    for (;;) {
      std::optional<wire::Message> m = events_.messages.Pop();
      EXPECT_TRUE(m.has_value()) << "rank zero sent nothing";
      if (!m.has_value()) return wire::Heartbeat{};
      if (!std::holds_alternative<wire::Heartbeat>(*m)) return std::move(*m);
    }
  }
  // The reason of the HelloReject that must come next.
  std::string Rejection() {
    wire::Message m = Next();
    EXPECT_TRUE(std::holds_alternative<wire::HelloReject>(m)) << wire::MessageName(m);
    return std::holds_alternative<wire::HelloReject>(m) ? std::get<wire::HelloReject>(m).reason
                                                        : "";
  }
  // The link must close without one message from rank zero.
  void ExpectClosedUnanswered() {
    std::optional<wire::LinkState> closed = events_.closed.Pop();
    ASSERT_TRUE(closed.has_value()) << "rank zero kept the connection";
    EXPECT_FALSE(events_.messages.Pop(std::chrono::milliseconds(0)).has_value());
  }
  wire::Link& link() { return *link_; }

 private:
  wire::testing::Recorder events_;
  std::unique_ptr<wire::Link> link_;
};

// The Hello a real rank `rank` would send with `ticket`.
inline wire::Hello HelloFor(const JoinTicket& ticket, uint32_t rank) {
  wire::Hello h;
  h.nonce = ticket.nonce.bytes;
  h.rank = RankId(rank);
  h.world_size = ticket.world_size;
  h.layout_fingerprint = ComputeLayoutFingerprint(RankGeometryOf());
  h.disk_limit_bytes = uint64_t{1} << 30;
  h.has_disk_store = true;
  return h;
}

}  // namespace strata::testing
