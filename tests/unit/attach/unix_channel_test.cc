#include "attach/client/unix_channel.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "attach/client/attach_codec.h"
#include "attach/client/memfd_region.h"
#include "tests/unit/attach/attach_test_support.h"
#include "wire/attach.capnp.h"
#include "wire/codec_support.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;

std::pair<UnixChannel, UnixChannel> Pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return {UnixChannel(UniqueFd(fds[0])), UnixChannel(UniqueFd(fds[1]))};
}

TEST(AttachUnixChannelTest, HelloCarriesItsFdsAndTheyMapTheSameMemory) {
  auto [a, b] = Pair();
  auto region = *MemfdRegion::Create("plane", 10'000);
  region->data()[1234] = 0x5a;
  auto other = *MemfdRegion::Create("row", 5000);
  AttachHello hello = testing::HelloFor(testing::TinyGeometry());
  hello.plane_handle = PlaneHandleKind::kCudaVmmFd;  // travels as declared
  const int fds[] = {region->fd(), other->fd()};
  ASSERT_TRUE(a.Send(hello, fds).ok());
  Result<Received> got = b.Receive(5s);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->fds.size(), 2u);
  struct stat st {};
  ASSERT_EQ(::fstat(got->fds[0].get(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), region->bytes());
  const auto* h = std::get_if<AttachHello>(&got->message);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->ranks.size(), 1u);
  EXPECT_EQ(h->ranks[0].size(), hello.ranks[0].size());
  EXPECT_EQ(h->ranks[0][0].name, hello.ranks[0][0].name);
  EXPECT_EQ(h->model_identity, hello.model_identity);
  EXPECT_EQ(h->plane_handle, PlaneHandleKind::kCudaVmmFd);
}

TEST(AttachUnixChannelTest, FramesWithoutFdsFollowInOrderAndCarryNone) {
  auto [a, b] = Pair();
  LookupRequest big;
  big.request_id = 7;
  big.tokens.resize(20'000);  // 80 KB: within the socket buffer, so no reader is needed
  for (size_t i = 0; i < big.tokens.size(); ++i) big.tokens[i] = static_cast<Token>(i * 3);
  ASSERT_TRUE(a.Send(StoreAnswer{.checkpoint_id = 4, .outcome = StoreOutcome::kDeferred}).ok());
  ASSERT_TRUE(a.Send(big).ok());
  Result<Received> first = b.Receive(5s);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->fds.empty());
  EXPECT_EQ(std::get<StoreAnswer>(first->message).outcome, StoreOutcome::kDeferred);
  Result<Received> second = b.Receive(5s);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(std::get<LookupRequest>(second->message).tokens, big.tokens);
}

TEST(AttachUnixChannelTest, PeerCloseReadsAsUnavailable) {
  auto [a, b] = Pair();
  { UnixChannel gone = std::move(a); }
  Result<std::optional<Received>> got = b.TryReceive();
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
}

TEST(AttachUnixChannelTest, AnOversizedFrameIsRejectedBeforeItsBody) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  UniqueFd writer(fds[0]);
  UnixChannel reader{UniqueFd(fds[1])};
  // One segment declaring 2^28 words.
  const uint32_t table[2] = {0, 1u << 28};
  ASSERT_EQ(::write(writer.get(), table, sizeof table), static_cast<ssize_t>(sizeof table));
  Result<std::optional<Received>> got = reader.TryReceive();
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << got.status().ToString();
}

TEST(AttachCodecTest, StoreEventsAndCloseDoneRoundTripWithTheirStatus) {
  StoreEvent e;
  e.kind = StoreEvent::Kind::kFetchFailed;
  e.ticket = JobId(9);
  e.status = Status::Aborted("detaching");
  e.key.consumed = 128;
  auto frame = EncodeAttachFrame(e);
  ASSERT_TRUE(frame.ok());
  auto back = DecodeAttachFrame(frame->words);
  ASSERT_TRUE(back.ok());
  const auto& got = std::get<StoreEvent>(*back);
  EXPECT_EQ(got.kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(got.ticket, JobId(9));
  EXPECT_EQ(got.status.code(), StatusCode::kAborted);
  EXPECT_EQ(got.key.consumed, 128u);
}

TEST(AttachCodecTest, AHitRoundTripsWithItsTierAndWhetherThePoolSuppliesIt) {
  for (const bool pooled : {false, true}) {
    HostHit hit;
    hit.endpoint.consumed = 256;
    hit.chain = {hit.endpoint};
    hit.pages = 4;
    hit.bytes = 4096;
    hit.tokens_gained = 256;
    hit.tier = pooled ? Tier::kMemory : Tier::kDisk;
    hit.pooled = pooled;
    auto frame = EncodeAttachFrame(LookupResult{.request_id = 3, .hit = hit});
    ASSERT_TRUE(frame.ok());
    auto back = DecodeAttachFrame(frame->words);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    const auto& got = std::get<LookupResult>(*back);
    ASSERT_TRUE(got.hit.has_value());
    EXPECT_EQ(got.hit->pooled, pooled);
    EXPECT_EQ(got.hit->tier, hit.tier);
    EXPECT_EQ(got.hit->bytes, 4096u);
  }
}

TEST(AttachCodecTest, TwoStepLookupsRoundTripAndAnAdmissionNamesItsTicket) {
  const LookupRequest admit{.request_id = 12,
                            .tokens = {1, 2, 3},
                            .resident_tokens = 1,
                            .before = 3,
                            .step = LookupStep::kAdmit,
                            .begun = 11};
  auto frame = EncodeAttachFrame(admit);
  ASSERT_TRUE(frame.ok());
  auto back = DecodeAttachFrame(frame->words);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const auto& got = std::get<LookupRequest>(*back);
  EXPECT_EQ(got.step, LookupStep::kAdmit);
  EXPECT_EQ(got.begun, 11u);
  EXPECT_EQ(got.tokens, admit.tokens);

  auto end = EncodeAttachFrame(EndLookup{.begun = 11});
  ASSERT_TRUE(end.ok());
  auto end_back = DecodeAttachFrame(end->words);
  ASSERT_TRUE(end_back.ok());
  EXPECT_EQ(std::get<EndLookup>(*end_back).begun, 11u);

  // An admission without its ticket, or a begin that names one: refused.
  for (const LookupRequest& bad : {LookupRequest{.request_id = 1,
                                  .tokens = {},
                                  .resident_tokens = 0,
                                  .before = 0,
                                  .step = LookupStep::kAdmit,
                                  .begun = 0},
                                   LookupRequest{.request_id = 1,
                                   .tokens = {},
                                   .resident_tokens = 0,
                                   .before = 0,
                                   .step = LookupStep::kBegin,
                                   .begun = 4}}) {
    auto f = EncodeAttachFrame(bad);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(DecodeAttachFrame(f->words).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(AttachCodecTest, ExportsRoundTrip) {
  StoreEvent request;
  request.kind = StoreEvent::Kind::kExportRequested;
  request.export_id = ExportId(11);
  request.key.consumed = 128;
  request.generation = 4;
  request.start_page = 2;
  request.bytes = 4096;
  auto frame = EncodeAttachFrame(request);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  auto back = DecodeAttachFrame(frame->words);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const auto& e = std::get<StoreEvent>(*back);
  EXPECT_EQ(e.kind, StoreEvent::Kind::kExportRequested);
  EXPECT_EQ(e.export_id, ExportId(11));
  EXPECT_EQ(e.generation, 4u);
  EXPECT_EQ(e.start_page, 2u);
  EXPECT_EQ(e.bytes, 4096u);

  const ExportPinnedReply pinned{
      .export_id = ExportId(11),
      .description = {.start_page = 2, .pages = {PageId(5), PageId(6)}, .row_slot = StateSlot(1)}};
  auto pf = EncodeAttachFrame(pinned);
  ASSERT_TRUE(pf.ok()) << pf.status().ToString();
  auto pb = DecodeAttachFrame(pf->words);
  ASSERT_TRUE(pb.ok()) << pb.status().ToString();
  const auto& p = std::get<ExportPinnedReply>(*pb);
  EXPECT_EQ(p.export_id, ExportId(11));
  EXPECT_EQ(p.description.start_page, 2u);
  EXPECT_EQ(p.description.pages, pinned.description.pages);
  EXPECT_EQ(p.description.row_slot, StateSlot(1));

  for (ExportRefusal reason : {ExportRefusal::kNotFound, ExportRefusal::kGenerationChanged,
                               ExportRefusal::kChainGap, ExportRefusal::kNoHeadroom}) {
    auto rf = EncodeAttachFrame(ExportRefusedReply{.export_id = ExportId(12), .reason = reason});
    ASSERT_TRUE(rf.ok());
    auto rb = DecodeAttachFrame(rf->words);
    ASSERT_TRUE(rb.ok()) << rb.status().ToString();
    EXPECT_EQ(std::get<ExportRefusedReply>(*rb).reason, reason);
  }

  PublishedCheckpoint c;
  c.checkpoint_id = 3;
  c.generation = 9;
  auto sf = EncodeAttachFrame(StoreRequest{c});
  ASSERT_TRUE(sf.ok());
  auto sb = DecodeAttachFrame(sf->words);
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(std::get<StoreRequest>(*sb).checkpoint.generation, 9u)
      << "a store names its generation";
}

TEST(AttachCodecTest, EvictionNoticesRoundTripAndTooManyAreRefused) {
  EvictedNotices m;
  for (uint64_t i = 1; i <= 3; ++i) {
    EvictionNotice n;
    n.key.consumed = 64 * i;
    n.key.digest[0] = static_cast<uint8_t>(i);
    n.generation = 10 + i;
    m.notices.push_back(n);
  }
  auto frame = EncodeAttachFrame(m);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  auto back = DecodeAttachFrame(frame->words);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const auto& got = std::get<EvictedNotices>(*back).notices;
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, m.notices[i].key);
    EXPECT_EQ(got[i].generation, m.notices[i].generation);
  }
  auto lost = EncodeAttachFrame(EvictionsLost{});
  ASSERT_TRUE(lost.ok());
  auto lost_back = DecodeAttachFrame(lost->words);
  ASSERT_TRUE(lost_back.ok());
  EXPECT_TRUE(std::holds_alternative<EvictionsLost>(*lost_back));

  EvictedNotices too_many;
  too_many.notices.resize(kAttachNoticesMax + 1);
  const auto refused = EncodeAttachFrame(too_many);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("Evicted.notices"), std::string::npos)
      << refused.status().ToString();
}

TEST(AttachCodecTest, ATicketsStatusRoundTripsAndAnImpossibleOneIsRefused) {
  auto ask = EncodeAttachFrame(TicketStatusRequest{.request_id = 21, .begun = 11});
  ASSERT_TRUE(ask.ok());
  auto ask_back = DecodeAttachFrame(ask->words);
  ASSERT_TRUE(ask_back.ok());
  EXPECT_EQ(std::get<TicketStatusRequest>(*ask_back).request_id, 21u);
  EXPECT_EQ(std::get<TicketStatusRequest>(*ask_back).begun, 11u);

  const TicketStatusResult late{.request_id = 21,
                                .status = {.state = LookupTicketState::kReady,
                                           .pool_consumed = 256,
                                           .admitted_consumed = 64,
                                           .admissions = 1,
                                           .answered_late = true,
                                           .retry_used = false}};
  auto frame = EncodeAttachFrame(late);
  ASSERT_TRUE(frame.ok());
  auto back = DecodeAttachFrame(frame->words);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const auto& got = std::get<TicketStatusResult>(*back);
  EXPECT_EQ(got.request_id, 21u);
  EXPECT_EQ(got.status.state, LookupTicketState::kReady);
  EXPECT_EQ(got.status.pool_consumed, 256u);
  EXPECT_EQ(got.status.admitted_consumed, 64u);
  EXPECT_EQ(got.status.admissions, 1u);
  EXPECT_TRUE(got.status.answered_late);
  EXPECT_FALSE(got.status.retry_used);

  // A pooled endpoint on a ticket still pending, and a state past the last:
  // never sent, and refused on receipt (frames built by hand, as a hostile
  // peer would).
  TicketStatusResult pending = late;
  pending.status.state = LookupTicketState::kPending;
  TicketStatusResult unknown = late;
  unknown.status.state = static_cast<LookupTicketState>(7);
  for (const TicketStatusResult& bad : {pending, unknown}) {
    EXPECT_EQ(EncodeAttachFrame(bad).status().code(), StatusCode::kInvalidArgument);
    auto f = wire::codec::EncodeEnvelope<wire::attach_schema::Envelope>(
        kAttachFrameBytesMax, "a hostile frame", [&](wire::attach_schema::Envelope::Builder env) {
          auto out = env.initTicketStatusResult();
          out.setRequestId(bad.request_id);
          out.setState(static_cast<wire::attach_schema::TicketState>(bad.status.state));
          out.setPoolConsumed(bad.status.pool_consumed);
          return Status::Ok();
        });
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(DecodeAttachFrame(f->words).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(AttachCodecTest, RankZerosRendezvousRoundTripsInHelloAndHelloAccept) {
  const AttachRendezvous r{.address = "[::1]:29470", .secret = std::string(40, 's')};
  auto accept = EncodeAttachFrame(HelloAccept{.rendezvous = r});
  ASSERT_TRUE(accept.ok());
  auto accept_back = DecodeAttachFrame(accept->words);
  ASSERT_TRUE(accept_back.ok());
  EXPECT_EQ(std::get<HelloAccept>(*accept_back).rendezvous.address, r.address);
  EXPECT_EQ(std::get<HelloAccept>(*accept_back).rendezvous.secret, r.secret);
  AttachHello hello;
  hello.runtime_id = "peer";
  auto plain = EncodeAttachFrame(hello);  // none: the fields stay empty
  ASSERT_TRUE(plain.ok());
  auto plain_back = DecodeAttachFrame(plain->words);
  ASSERT_TRUE(plain_back.ok());
  EXPECT_TRUE(std::get<AttachHello>(*plain_back).rendezvous.empty());
  hello.rendezvous = r;
  auto carried = EncodeAttachFrame(hello);
  ASSERT_TRUE(carried.ok());
  auto carried_back = DecodeAttachFrame(carried->words);
  ASSERT_TRUE(carried_back.ok());
  EXPECT_EQ(std::get<AttachHello>(*carried_back).rendezvous.address, r.address);
  EXPECT_EQ(std::get<AttachHello>(*carried_back).runtime_id, "peer");
  hello.rendezvous.secret = std::string(kAttachTextBytesMax + 1, 's');
  EXPECT_EQ(EncodeAttachFrame(hello).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::attach
