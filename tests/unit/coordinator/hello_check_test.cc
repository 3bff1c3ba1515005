#include "coordinator/hello_check.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

Nonce NonceOf(uint8_t seed) {
  Nonce n;
  n.bytes.fill(seed);
  return n;
}

PeerTable Table() {
  PeerTable t;
  t.world_size = 3;
  t.peers = {{RankId(1), "10.0.0.1", NonceOf(1)}, {RankId(2), "10.0.0.2", NonceOf(2)}};
  return t;
}

RankZeroFacts Self() {
  RankZeroFacts s;
  s.world_size = 3;
  s.layout_fingerprint.fill(0x5a);
  s.has_disk_store = true;
  return s;
}

wire::Hello GoodHello(uint32_t rank) {
  wire::Hello h;
  h.nonce = NonceOf(static_cast<uint8_t>(rank)).bytes;
  h.rank = RankId(rank);
  h.world_size = 3;
  h.layout_fingerprint.fill(0x5a);
  h.disk_limit_bytes = 1 << 30;
  h.has_disk_store = true;
  return h;
}

struct Case {
  std::string name;
  wire::Hello hello;
  std::string from;
  std::vector<bool> joined;
  HelloVerdict verdict;
  std::string reason;  // a part of it
};

TEST(HelloCheckTest, EveryRule) {
  auto with = [](uint32_t rank, auto change) {
    wire::Hello h = GoodHello(rank);
    change(h);
    return h;
  };
  const std::vector<bool> none = {true, false, false};
  const std::vector<Case> cases = {
      {"the right rank joins", GoodHello(2), "10.0.0.2", none, HelloVerdict::kAccept, ""},
      {"rank zero itself", GoodHello(0), "10.0.0.1", none, HelloVerdict::kRejectLink,
       "rank 0 is rank zero itself"},
      {"rank out of range", with(5, [](wire::Hello& h) { h.world_size = 8; }), "10.0.0.1", none,
       HelloVerdict::kRejectLink, "out of range for rank zero's world size 3"},
      {"another rank's nonce", with(2, [](wire::Hello& h) { h.nonce = NonceOf(1).bytes; }),
       "10.0.0.2", none, HelloVerdict::kRejectLink, "claiming rank 2: wrong nonce"},
      {"the wrong address", GoodHello(1), "10.0.0.9", none, HelloVerdict::kRejectLink,
       "wrong address (rank 1's rendezvous connection came from 10.0.0.1)"},
      {"a rank already joined",
       GoodHello(1),
       "10.0.0.1",
       {true, true, false},
       HelloVerdict::kRejectLink,
       "rank 1 has already joined"},
      {"another protocol version", with(1, [](wire::Hello& h) { h.protocol_version = 1; }),
       "10.0.0.1", none, HelloVerdict::kFailStartup, "rank 1 speaks protocol version 1"},
      {"another world size", with(1, [](wire::Hello& h) { h.world_size = 4; }), "10.0.0.1", none,
       HelloVerdict::kFailStartup, "rank 1 has world size 4, rank zero 3"},
      {"another layout", with(1, [](wire::Hello& h) { h.layout_fingerprint[0] = 0; }), "10.0.0.1",
       none, HelloVerdict::kFailStartup, "page planes or row sizes differ"},
      {"no disk store", with(1, [](wire::Hello& h) { h.has_disk_store = false; }), "10.0.0.1", none,
       HelloVerdict::kFailStartup, "rank 1 has no disk store but rank zero has one"},
      {"a zero disk limit", with(1, [](wire::Hello& h) { h.disk_limit_bytes = 0; }), "10.0.0.1",
       none, HelloVerdict::kFailStartup, "zero disk limit"},
  };
  const PeerTable table = Table();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HelloDecision d = CheckHello(c.hello, c.from, table, c.joined, Self());
    EXPECT_EQ(d.verdict, c.verdict) << d.reason;
    EXPECT_NE(d.reason.find(c.reason), std::string::npos) << d.reason;
  }
}

TEST(HelloCheckTest, AnUnprovenHelloNeverFailsStartupEvenWhenItAlsoDisagrees) {
  // A stray process with the wrong nonce and another layout costs only its link.
  wire::Hello h = GoodHello(1);
  h.nonce = NonceOf(9).bytes;
  h.layout_fingerprint[0] = 0;
  HelloDecision d = CheckHello(h, "10.0.0.1", Table(), {true, false, false}, Self());
  EXPECT_EQ(d.verdict, HelloVerdict::kRejectLink);
  EXPECT_NE(d.reason.find("wrong nonce"), std::string::npos);
}

}  // namespace
}  // namespace strata
