#include "coordinator/rendezvous/kv_rendezvous.h"

#include <gtest/gtest.h>

#include <future>
#include <map>

#include "store/base/mutex.h"

namespace strata {
namespace {

using namespace std::chrono_literals;

// Bound for a test's rendezvous; a correct run finishes far sooner.
constexpr auto kTestDeadline = 30s;
RendezvousDeadline Soon() { return RendezvousClock::now() + kTestDeadline; }

// The in-memory double of a runtime's store: a blocking Get like
// torch.distributed.Store's, thread-safe.
class MemoryKv final : public KeyValueStore {
 public:
  Status Set(const std::string& key, const std::string& value) override {
    MutexLock lock(mu_);
    values_[key] = value;
    changed_.NotifyAll();
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& key, RendezvousDeadline deadline) override {
    MutexLock lock(mu_);
    while (values_.find(key) == values_.end()) {
      if (!changed_.WaitUntil(lock, deadline) && values_.find(key) == values_.end()) {
        return Status::Unavailable("timed out");
      }
    }
    return values_.at(key);
  }
  std::string Peek(const std::string& key) {
    MutexLock lock(mu_);
    auto it = values_.find(key);
    return it == values_.end() ? "" : it->second;
  }

 private:
  Mutex mu_;
  CondVar changed_;
  std::map<std::string, std::string> values_ GUARDED_BY(mu_);
};

LocalAddressFn FixedAddress(const std::string& address) {
  return [address](const std::string&) -> Result<std::string> { return address; };
}

TEST(KvRendezvousTest, ThreeRanksJoinThroughTheStore) {
  MemoryKv kv;
  KvRendezvousServer server(kv, "job/", "10.9.9.9", SeededNonceSource(1));
  std::vector<std::future<Result<JoinTicket>>> peers;
  for (uint32_t r = 1; r < 3; ++r) {
    peers.push_back(std::async(std::launch::async, [&kv, r] {
      KvRendezvousClient client(kv, "job/", FixedAddress("10.0.0." + std::to_string(r)));
      return client.Join(RankId(r), 3, Soon());
    }));
  }
  Result<PeerTable> table = server.AwaitPeers(3, 7777, Soon());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->peers.size(), 2u);
  for (uint32_t r = 1; r < 3; ++r) {
    Result<JoinTicket> t = peers[r - 1].get();
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->world_size, 3u);
    EXPECT_EQ(t->record_host, "10.9.9.9");
    EXPECT_EQ(t->record_port, 7777);
    EXPECT_EQ(t->nonce, table->Find(RankId(r))->nonce);
    EXPECT_EQ(table->Find(RankId(r))->address, "10.0.0." + std::to_string(r));
  }
  EXPECT_NE(table->peers[0].nonce, table->peers[1].nonce);
  EXPECT_EQ(kv.Peek("job/zero"), "strata-kv-v1 3 10.9.9.9 7777");
}

TEST(KvRendezvousTest, PeerMayAskBeforeRankZeroPublishes) {
  MemoryKv kv;
  auto peer = std::async(std::launch::async, [&kv] {
    KvRendezvousClient client(kv, "p/", FixedAddress("127.0.0.1"));
    return client.Join(RankId(1), 2, Soon());
  });
  KvRendezvousServer server(kv, "p/", "127.0.0.1", SeededNonceSource(2));
  ASSERT_TRUE(server.AwaitPeers(2, 1234, Soon()).ok());
  EXPECT_TRUE(peer.get().ok());
}

TEST(KvRendezvousTest, WorldSizeMismatchFailsBothSidesNamingBoth) {
  MemoryKv kv;
  auto bad = std::async(std::launch::async, [&kv] {
    KvRendezvousClient client(kv, "w/", FixedAddress("127.0.0.1"));
    return client.Join(RankId(1), 4, Soon());
  });
  KvRendezvousServer server(kv, "w/", "127.0.0.1", SeededNonceSource(3));
  Result<PeerTable> table = server.AwaitPeers(2, 1, Soon());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("has world size 4 but rank zero has world size 2"),
            std::string::npos)
      << table.status().ToString();
  Result<JoinTicket> b = bad.get();
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("rank 1 has world size 4, rank zero has 2"),
            std::string::npos)
      << b.status().ToString();
}

TEST(KvRendezvousTest, MissingPeerFailsAtTheDeadlineNamingIt) {
  MemoryKv kv;
  KvRendezvousClient early(kv, "m/", FixedAddress("127.0.0.1"));
  // Rank 2 says hello before rank zero runs; rank 1 never does.
  ASSERT_TRUE(kv.Set("m/zero", "strata-kv-v1 3 127.0.0.1 1").ok());
  auto two = std::async(std::launch::async, [&early] { return early.Join(RankId(2), 3, Soon()); });
  ASSERT_TRUE(kv.Get("m/hello/2", Soon()).ok());
  KvRendezvousServer server(kv, "m/", "127.0.0.1", SeededNonceSource(4));
  Result<PeerTable> table = server.AwaitPeers(3, 1, RendezvousClock::now() + 50ms);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(table.status().message().find("rank 1 of 3 did not join (joined: 2)"),
            std::string::npos)
      << table.status().ToString();
  Result<JoinTicket> t = two.get();  // told why rather than left waiting
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("did not join"), std::string::npos);
}

TEST(KvRendezvousTest, PeerWithoutRankZeroFailsAtItsDeadline) {
  MemoryKv kv;
  KvRendezvousClient client(kv, "n/", FixedAddress("127.0.0.1"));
  Result<JoinTicket> t = client.Join(RankId(1), 2, RendezvousClock::now() + 20ms);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(t.status().message().find("waiting for rank zero (rank 1)"), std::string::npos)
      << t.status().ToString();
}

TEST(KvRendezvousTest, RejectsAMalformedRankZeroRecord) {
  MemoryKv kv;
  ASSERT_TRUE(kv.Set("x/zero", "strata-kv-v0 2 h 1").ok());
  KvRendezvousClient client(kv, "x/", FixedAddress("127.0.0.1"));
  Result<JoinTicket> t = client.Join(RankId(1), 2, Soon());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(KvRendezvousTest, RoutedLocalAddressOfLoopbackIsLoopback) {
  Result<std::string> a = RoutedLocalAddress()("127.0.0.1");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, "127.0.0.1");
  EXPECT_FALSE(RoutedLocalAddress()("not-an-address").ok());
}

}  // namespace
}  // namespace strata
