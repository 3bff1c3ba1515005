#include "coordinator/rendezvous/rendezvous_protocol.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

std::span<const uint8_t> Payload(const std::vector<uint8_t>& frame) {
  return std::span<const uint8_t>(frame).subspan(kRendezvousLengthBytes);
}

Result<RendezvousMessage> RoundTrip(const RendezvousMessage& m) {
  std::vector<uint8_t> frame = EncodeRendezvousFrame(m);
  Result<size_t> n =
      DecodeRendezvousLength(std::span<const uint8_t, kRendezvousLengthBytes>(frame.data(), 4));
  EXPECT_TRUE(n.ok());
  EXPECT_EQ(*n + kRendezvousLengthBytes, frame.size());
  return DecodeRendezvousPayload(Payload(frame));
}

JoinTicket Ticket() {
  JoinTicket t{4, "fe80::1%eth0", 40001, {}};
  for (size_t i = 0; i < kNonceBytes; ++i) t.nonce.bytes[i] = static_cast<uint8_t>(i * 7);
  return t;
}

HelloProof Proof() {
  HelloProof p{};
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(0xa0 + i);
  return p;
}

TEST(RendezvousProtocolTest, HelloRoundTrip) {
  Result<RendezvousMessage> m = RoundTrip(RendezvousHello{RankId(3), 8, Proof()});
  ASSERT_TRUE(m.ok());
  const auto& h = std::get<RendezvousHello>(*m);
  EXPECT_EQ(h.rank, RankId(3));
  EXPECT_EQ(h.world_size, 8u);
  EXPECT_EQ(h.proof, Proof());
}

TEST(RendezvousProtocolTest, ChallengeRoundTrip) {
  RendezvousChallenge c;
  for (size_t i = 0; i < kNonceBytes; ++i) c.challenge.bytes[i] = static_cast<uint8_t>(i + 1);
  std::vector<uint8_t> f = EncodeRendezvousFrame(c);
  EXPECT_EQ(f.size(), 4u + 12u + kNonceBytes);
  EXPECT_EQ(f[12], 4);  // type 4
  Result<RendezvousMessage> m = RoundTrip(c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<RendezvousChallenge>(*m).challenge, c.challenge);
}

TEST(RendezvousProtocolTest, TicketRoundTrip) {
  Result<RendezvousMessage> m = RoundTrip(Ticket());
  ASSERT_TRUE(m.ok());
  const auto& t = std::get<JoinTicket>(*m);
  EXPECT_EQ(t.world_size, 4u);
  EXPECT_EQ(t.record_host, "fe80::1%eth0");
  EXPECT_EQ(t.record_port, 40001);
  EXPECT_EQ(t.nonce, Ticket().nonce);
}

TEST(RendezvousProtocolTest, RejectRoundTripAndLongReasonsAreCut) {
  Result<RendezvousMessage> m = RoundTrip(RendezvousReject{"world size differs"});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<RendezvousReject>(*m).reason, "world size differs");
  m = RoundTrip(RendezvousReject{std::string(1000, 'x')});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<RendezvousReject>(*m).reason.size(), kRendezvousReasonBytesMax);
}

TEST(RendezvousProtocolTest, HelloLayoutIsFixed) {
  std::vector<uint8_t> f = EncodeRendezvousFrame(RendezvousHello{RankId(2), 5, Proof()});
  std::vector<uint8_t> expected = {52, 0, 0, 0, 'S', 'T', 'R', 'Z', 2, 0, 0, 0,
                                   1,  0, 0, 0, 2,   0,   0,   0,   5, 0, 0, 0};
  const HelloProof proof = Proof();
  expected.insert(expected.end(), proof.begin(), proof.end());
  EXPECT_EQ(f, expected);
}

TEST(RendezvousProtocolTest, LengthOutOfRange) {
  const std::array<uint8_t, 4> big = {0x01, 0x02, 0, 0};  // 513
  Result<size_t> n = DecodeRendezvousLength(big);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kCorruption);
  EXPECT_NE(n.status().message().find("length 513 outside 12..512"), std::string::npos);
  const std::array<uint8_t, 4> small = {4, 0, 0, 0};
  EXPECT_FALSE(DecodeRendezvousLength(small).ok());
  const std::array<uint8_t, 4> max = {0x00, 0x02, 0, 0};
  EXPECT_EQ(*DecodeRendezvousLength(max), 512u);
}

TEST(RendezvousProtocolTest, WrongMagic) {
  std::vector<uint8_t> f = EncodeRendezvousFrame(RendezvousHello{RankId(1), 2});
  f[4] = 'G';
  Result<RendezvousMessage> m = DecodeRendezvousPayload(Payload(f));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("wrong magic"), std::string::npos);
}

TEST(RendezvousProtocolTest, OtherVersionIsNamed) {
  std::vector<uint8_t> f = EncodeRendezvousFrame(RendezvousHello{RankId(1), 2});
  f[8] = 1;  // a build from before the job secret
  Result<RendezvousMessage> m = DecodeRendezvousPayload(Payload(f));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("rendezvous protocol version 1; this build speaks version 2"),
            std::string::npos);
}

TEST(RendezvousProtocolTest, UnknownType) {
  std::vector<uint8_t> f = EncodeRendezvousFrame(RendezvousHello{RankId(1), 2});
  f[12] = 9;
  EXPECT_NE(DecodeRendezvousPayload(Payload(f)).status().message().find("unknown type 9"),
            std::string::npos);
}

TEST(RendezvousProtocolTest, TruncatedAndTrailingBytes) {
  for (const RendezvousMessage& message :
       {RendezvousMessage(RendezvousHello{RankId(1), 2, Proof()}),
        RendezvousMessage(RendezvousChallenge{})}) {
    std::vector<uint8_t> g = EncodeRendezvousFrame(message);
    for (size_t cut = 1; cut < g.size() - kRendezvousLengthBytes; ++cut) {
      std::span<const uint8_t> p = Payload(g).first(g.size() - kRendezvousLengthBytes - cut);
      EXPECT_FALSE(DecodeRendezvousPayload(p).ok()) << cut;
    }
  }
  std::vector<uint8_t> f = EncodeRendezvousFrame(Ticket());
  for (size_t cut = 1; cut < f.size() - kRendezvousLengthBytes; ++cut) {
    std::span<const uint8_t> p = Payload(f).first(f.size() - kRendezvousLengthBytes - cut);
    EXPECT_FALSE(DecodeRendezvousPayload(p).ok()) << cut;
  }
  f.push_back(0);
  Result<RendezvousMessage> m = DecodeRendezvousPayload(Payload(f));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("trailing bytes"), std::string::npos);
}

TEST(RendezvousProtocolTest, FieldsOutOfRange) {
  std::vector<uint8_t> hello = EncodeRendezvousFrame(RendezvousHello{RankId(1), 2});
  hello[20] = 0;  // world size 0
  EXPECT_NE(DecodeRendezvousPayload(Payload(hello)).status().message().find("world size 0"),
            std::string::npos);
  std::vector<uint8_t> ticket = EncodeRendezvousFrame(Ticket());
  ticket[20] = 0;  // port 0
  ticket[21] = 0;
  EXPECT_NE(DecodeRendezvousPayload(Payload(ticket)).status().message().find("ticket port 0"),
            std::string::npos);
  ticket = EncodeRendezvousFrame(Ticket());
  ticket[22] = 1;  // port 65536 + ...
  EXPECT_FALSE(DecodeRendezvousPayload(Payload(ticket)).ok());
  ticket = EncodeRendezvousFrame(Ticket());
  ticket[40] = 0xff;  // host length far beyond the payload and the limit
  EXPECT_FALSE(DecodeRendezvousPayload(Payload(ticket)).ok());
}

}  // namespace
}  // namespace strata
