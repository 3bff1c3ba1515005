// The fixture of the pooled-store tests that need a relay (docs/pool.md):
// a manager, instance A whose evictions fill the pool, and instance B that
// reaches the manager through a relay (tests/support/pool_proxy.h) that can
// hold B's answers, so that an answer comes late by construction, not by
// timing. B's clock is moved by hand. Used by pooled_store_tickets_test.cc
// and pooled_store_claims_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <thread>

#include "coordinator/pool/pool_server.h"
#include "tests/support/pool_proxy.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"

namespace strata::pool::pooled_test {

using strata::testing::IsPoolMessage;
using strata::testing::PoolHop;
using strata::testing::PoolProxy;

constexpr std::chrono::milliseconds kGrace{2};
// Bound on waiting for an event (never a sleep the result depends on).
constexpr std::chrono::seconds kEventBound{10};

class PooledRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-tickets-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    auto server = PoolServer::Start(ManagerOptions(dir_), 5);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto proxy = PoolProxy::Start(dir_ + "/proxy.sock", dir_ + "/pool.sock");
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    proxy_ = std::move(*proxy);

    a_ = std::make_unique<Instance>(
        InstanceOptions{.socket_path = dir_ + "/pool.sock", .source = "host-a"});
    // A's first conversation: its record is evicted to the pool by the rest.
    const uint32_t conv = a_->runtime->NewConversation();
    ASSERT_TRUE(a_->runtime->Turn(conv, kConversationTokens).ok());
    ASSERT_TRUE(a_->runtime->WaitForStores().ok());
    a_->Compute();
    ASSERT_GT(a_->pooled->pool_stats().puts, 0u);
    const std::span<const Token> tokens = a_->runtime->tokens(conv);
    history_ = std::make_unique<PrefixHistory>(tokens.first(kConversationTokens));

    b_ = std::make_unique<Instance>(InstanceOptions{.socket_path = dir_ + "/proxy.sock",
                                                    .source = "host-b",
                                                    .clock = clock_.AsStoreClock(),
                                                    .lookup_grace = kGrace});
    ASSERT_TRUE(b_->pooled->link().sharing());
  }
  void TearDown() override {
    b_.reset();
    a_.reset();
    proxy_.reset();
    server_.reset();
    (void)::unlink((dir_ + "/proxy.sock").c_str());
    ::rmdir(dir_.c_str());
  }

  PooledStore& b() { return *b_->pooled; }
  const PrefixHistory& h() const { return *history_; }
  // Polls B until `ticket` is ready, within kEventBound.
  bool PollUntilReady(LookupTicket ticket) {
    const auto deadline = std::chrono::steady_clock::now() + kEventBound;
    std::vector<StoreEvent> events;
    while (std::chrono::steady_clock::now() < deadline) {
      b().Poll(0, events);
      if (b().TicketStatus(ticket).state == LookupTicketState::kReady) return true;
      std::this_thread::yield();
    }
    return false;
  }

  // Fetches `hit` into B's last pages (the synthetic runtime allocates from
  // the front and is idle) and polls B until the fetch's event, within
  // kEventBound; nullopt when none came.
  std::optional<StoreEvent> FetchAndWait(const HostHit& hit) {
    InboundTicket ticket;
    ticket.ticket = JobId(next_ticket_++);
    const uint64_t pages = b_->geometry.ranks[0].page_count;
    for (uint64_t i = 0; i < hit.pages; ++i) {
      ticket.page_ids.emplace_back(static_cast<uint32_t>(pages - 1 - i));
    }
    ticket.row_slot = StateSlot(static_cast<uint32_t>(b_->geometry.ranks[0].row_count - 1));
    if (Status s = b().Fetch(hit, ticket); !s.ok()) {
      StoreEvent refused;
      refused.kind = StoreEvent::Kind::kFetchFailed;
      refused.ticket = ticket.ticket;
      refused.status = s;
      return refused;
    }
    return WaitForFetch(ticket.ticket);
  }
  // Polls B until the event of fetch `ticket`, within kEventBound.
  std::optional<StoreEvent> WaitForFetch(JobId ticket) {
    const auto deadline = std::chrono::steady_clock::now() + kEventBound;
    std::vector<StoreEvent> events;
    while (std::chrono::steady_clock::now() < deadline) {
      b().Poll(0, events);
      for (StoreEvent& e : events) {
        if (e.ticket == ticket) return std::move(e);
      }
      events.clear();
      std::this_thread::yield();
    }
    return std::nullopt;
  }

  uint64_t next_ticket_ = 1'000'000;
  std::string dir_;
  ManualClock clock_;
  std::unique_ptr<PoolServer> server_;
  std::unique_ptr<PoolProxy> proxy_;
  std::unique_ptr<Instance> a_;
  std::unique_ptr<Instance> b_;
  std::unique_ptr<PrefixHistory> history_;
};

}  // namespace strata::pool::pooled_test
