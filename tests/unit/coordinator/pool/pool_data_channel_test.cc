// The pool's TCP data channel (docs/pool.md, "The data channel"): an
// instance that maps no arena moves its records window by window through
// data connections of its session. Checked on loopback with the channel
// forced: puts and claims byte-exact both ways with an instance on the Unix
// socket; a record corrupted in the arena fails the claim's checksum; a
// data connection with a wrong token or secret is refused and counted; a
// window for no open put or held claim is refused and the connection stays
// in step; ending the session ends its data connections; a manager without
// an arena file serves TCP instances through the channel only. And the pure
// parts: windows never cross a slot, and the grants table's rules.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/remote_slots.h"
#include "coordinator/pool/session_grants.h"
#include "store/record/checksum.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotBytes = 64 * 1024;

using testing::Pattern;
using testing::Tokens;

JobSecret Secret(char fill) { return *JobSecret::FromText(std::string(40, fill), "test"); }

TEST(RecordWindowsTest, WindowsCoverTheRecordInOrderAndNeverCrossASlot) {
  const std::vector<RecordWindow> w = RecordWindows(10'000, 4096, 3000);
  uint64_t at = 0;
  for (const RecordWindow& x : w) {
    EXPECT_EQ(x.offset, at);
    EXPECT_LE(x.bytes, 3000u);
    EXPECT_GT(x.bytes, 0u);
    EXPECT_EQ(x.offset / 4096, (x.offset + x.bytes - 1) / 4096) << "crosses a slot at " << x.offset;
    at += x.bytes;
  }
  EXPECT_EQ(at, 10'000u);
  // 3000 + 1096 (slot end) + 3000 + 1096 + 1808.
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[1].bytes, 1096u);
  EXPECT_TRUE(RecordWindows(0, 4096, 3000).empty());
  EXPECT_EQ(RecordWindows(4096 * 3, 4096, uint64_t{4} << 20).size(), 3u) << "one per slot";
}

TEST(PlaceWindowTest, AWindowLiesInsideOneGrantedSlotOfTheRecord) {
  const std::vector<SlotId> slots{SlotId(7), SlotId(3)};
  auto second = PlaceWindow(slots, 4096, 6000, 4096 + 10, 100);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->slot, SlotId(3));
  EXPECT_EQ(second->offset_in_slot, 10u);
  EXPECT_FALSE(PlaceWindow(slots, 4096, 6000, 4000, 200).ok()) << "crosses a slot";
  EXPECT_FALSE(PlaceWindow(slots, 4096, 6000, 5900, 200).ok()) << "passes the record";
  EXPECT_FALSE(PlaceWindow(slots, 4096, 6000, 0, 0).ok()) << "empty";
  EXPECT_FALSE(PlaceWindow(slots, 4096, 20'000, 8192, 10).ok()) << "past the grant's slots";
  EXPECT_FALSE(PlaceWindow(slots, 4096, 6000, UINT64_MAX, 2).ok()) << "an offset that wraps";
}

TEST(SessionGrantsTest, OnlyOpenPutsAreWrittenAndOnlyHeldClaimsRead) {
  auto arena = Arena::Create("grants-test", 4096, 8, HugePages::kNever);
  ASSERT_TRUE(arena.ok());
  SessionGrants grants(**arena);
  const SessionId s(1);
  const std::vector<std::byte> bytes = Pattern(100, 3);
  const PoolSlotWrite w{.request_id = 1, .put = PutId(5), .offset = 4096, .bytes = 100};
  EXPECT_EQ(grants.Write(s, w, bytes).code(), StatusCode::kNotFound) << "untracked session";
  grants.OpenSession(s);
  EXPECT_EQ(grants.Write(s, w, bytes).code(), StatusCode::kNotFound) << "no such put";

  PoolPut put;
  put.put.bytes = 5000;
  grants.Note(s, put,
              PoolPutAnswer{.request_id = 0,
                            .status = Status::Ok(),
                            .put = PutId(5),
                            .slots = {SlotId(2), SlotId(6)},
                            .progress_epoch = 0});
  ASSERT_TRUE(grants.Write(s, w, bytes).ok());
  EXPECT_EQ(std::vector<std::byte>((*arena)->Slot(SlotId(6)).begin(),
                                   (*arena)->Slot(SlotId(6)).begin() + 100),
            bytes);
  EXPECT_EQ(
      grants
          .Write(s, PoolSlotWrite{.request_id = 2, .put = PutId(5), .offset = 4090, .bytes = 100},
                 bytes)
          .code(),
      StatusCode::kInvalidArgument)
      << "crosses a slot";
  EXPECT_EQ(grants.Write(s, w, std::span(bytes).first(50)).code(), StatusCode::kInvalidArgument)
      << "not the size it announced";
  grants.Note(s, PoolCommit{.request_id = 0, .put = PutId(5), .checksum = 0},
              PoolDone{.request_id = 0, .status = Status::Ok(), .progress_epoch = 0});
  EXPECT_EQ(grants.Write(s, w, bytes).code(), StatusCode::kNotFound) << "committed: closed";

  const PoolSlotRead r{
      .request_id = 3, .claim = ClaimId(9), .record = 0, .offset = 0, .bytes = 100};
  EXPECT_EQ(grants.Read(s, r).status().code(), StatusCode::kNotFound);
  grants.Note(
      s, PoolClaim{},
      PoolClaimAnswer{
          .request_id = 0,
          .status = Status::Ok(),
          .claim = ClaimId(9),
          .budget_ms = 0,
          .records = {{.key = testing::Key(64), .bytes = 100, .checksum = 0, .slots = {SlotId(6)}}},
          .progress_epoch = 0});
  auto read = grants.Read(s, r);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(std::vector<std::byte>(read->begin(), read->end()), bytes);
  PoolSlotRead beyond = r;
  beyond.record = 1;
  EXPECT_EQ(grants.Read(s, beyond).status().code(), StatusCode::kInvalidArgument);
  grants.EndSession(s);
  EXPECT_EQ(grants.Read(s, r).status().code(), StatusCode::kNotFound) << "the session ended";
  EXPECT_EQ(grants.sessions(), 0u);
}

class PoolDataChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTestDir("strata-pool-data");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    server_.reset();
    (void)::unlink(arena_path().c_str());
    (void)::unlink((arena_path() + ".generation").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string arena_path() const { return dir_ + "/arena"; }
  // The pooled-store tests' manager (64 KiB slots) on TCP; `named`: with an arena file.
  void StartManager(bool named) {
    PoolServerOptions o = pooled_test::ManagerOptions(dir_);
    if (named) o.arena_path = arena_path();
    o.tcp_host = "127.0.0.1";
    o.tcp_port = 0;
    o.job_secret = Secret('s');
    auto server = PoolServer::Start(o, /*generation=*/5);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  std::string Address() const { return "tcp://127.0.0.1:" + std::to_string(server_->tcp_port()); }
  PoolClientOptions Remote(const std::string& gpu) const {
    PoolClientOptions o = testing::ClientOptions(Address(), gpu);
    o.job_secret = Secret('s');
    o.data_path = PoolDataPath::kChannel;
    return o;
  }
  PoolClientOptions Local(const std::string& gpu) const {
    return testing::ClientOptions(dir_ + "/pool.sock", gpu);
  }
  // Another data connection of the session `accepted` granted (what a test
  // drives by hand), naming `token` (default: the session's) and proving
  // the secret of `secret`.
  Result<std::unique_ptr<RemoteSlots>> DataConnection(const PoolHelloAccept& accepted,
                                                      std::optional<DataToken> token = {},
                                                      char secret = 's') const {
    return RemoteSlots::Open({.address = *ParsePoolAddress(Address()),
                              .job_secret = Secret(secret),
                              .tls = nullptr,
                              .instance = accepted.instance,
                              .token = token.value_or(*accepted.data_token),
                              .slot_bytes = accepted.slot_bytes,
                              .slot_count = accepted.slot_count,
                              .window_bytes = accepted.window_bytes,
                              .window_credits = accepted.window_credits,
                              .bound = std::chrono::milliseconds(5'000)});
  }
  Result<std::unique_ptr<RemoteSlots>> ExtraConnection(const PoolClient& client,
                                                       std::optional<DataToken> token = {},
                                                       char secret = 's') const {
    return DataConnection(client.accepted(), token, secret);
  }

  std::string dir_;
  std::unique_ptr<PoolServer> server_;
};

TEST_F(PoolDataChannelTest, ARemoteInstancePutsAndClaimsByteExactThroughTheChannel) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  EXPECT_FALSE((*remote)->maps_arena());
  ASSERT_TRUE((*remote)->accepted().data_token.has_value());
  EXPECT_TRUE((*remote)->accepted().arena_path.empty());
  EXPECT_EQ((*remote)->accepted().window_bytes, kPoolWindowBytesMax);
  EXPECT_EQ((*remote)->accepted().window_credits, kPoolWindowCreditsDefault);
  auto local = PoolClient::Connect(Local("GPU-local"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();

  // The remote instance puts a chain of two (the root over four slots and a
  // partial one); the local one claims it out of the mapped arena.
  const std::vector<Token> tokens = Tokens(300, 11);
  const PrefixHistory history(tokens);
  const std::vector<std::byte> root = Pattern(3 * kSlotBytes + 123, 5);
  const std::vector<std::byte> tail = Pattern(kSlotBytes / 3, 6);
  const PoolClient::PutItem items[] = {
      {history.key_at(128), std::nullopt, history.bucket_digest(128), root, PutKind::kCascade},
      {history.key_at(256), history.key_at(128), history.bucket_digest(256), tail,
       PutKind::kCascade}};
  for (const Status& s : (*remote)->PutChain(items)) ASSERT_TRUE(s.ok()) << s.ToString();
  auto chain = (*local)->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok() && chain->has_value()) << chain.status().ToString();
  auto copied = (*local)->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  ASSERT_EQ(copied->size(), 2u);
  EXPECT_EQ((*copied)[0], root);
  EXPECT_EQ((*copied)[1], tail);

  // And the other way: the local instance puts, the remote one claims.
  const std::vector<Token> other = Tokens(200, 900);
  const PrefixHistory other_history(other);
  const std::vector<std::byte> record = Pattern(2 * kSlotBytes, 9);
  ASSERT_TRUE((*local)
                  ->Put(other_history.key_at(192), std::nullopt, other_history.bucket_digest(192),
                        record, PutKind::kCascade)
                  .ok());
  auto other_chain = (*remote)->Lookup(other, 0, other.size());
  ASSERT_TRUE(other_chain.ok() && other_chain->has_value()) << other_chain.status().ToString();
  auto claimed = (*remote)->ClaimCopy(**other_chain);
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ(claimed->front(), record);

  const PoolDataCounts d = server_->Stats().data;
  EXPECT_EQ(d.connections, 2u) << "one for puts, one for claims";
  EXPECT_EQ(d.bytes_written, root.size() + tail.size());
  EXPECT_EQ(d.bytes_read, record.size());
  EXPECT_EQ(d.windows_written, 5u) << "one per slot the records fill";
  EXPECT_EQ(d.windows_refused, 0u);
}

TEST_F(PoolDataChannelTest, ARecordCorruptedInTheArenaFailsTheRemoteClaimsChecksum) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  auto local = PoolClient::Connect(Local("GPU-local"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  const std::vector<Token> tokens = Tokens(100, 3);
  const PrefixHistory history(tokens);
  ASSERT_TRUE((*local)
                  ->Put(history.key_at(64), std::nullopt, history.bucket_digest(64),
                        Pattern(kSlotBytes + 7, 1), PutKind::kCascade)
                  .ok());
  auto chain = (*remote)->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok() && chain->has_value());
  // Every slot of the small arena gets one flipped byte (the record's among them).
  for (uint32_t s = 0; s < (*local)->arena().slot_count(); ++s) {
    (*local)->arena().Slot(SlotId(s))[5] ^= std::byte{0x40};
  }
  auto claimed = (*remote)->ClaimCopy(**chain);
  ASSERT_FALSE(claimed.ok());
  EXPECT_EQ(claimed.status().code(), StatusCode::kCorruption) << claimed.status().ToString();
  EXPECT_EQ(server_->Stats().catalog.claims_in_flight, 0u) << "released after the failed copy";
}

TEST_F(PoolDataChannelTest, ADataConnectionWithAWrongTokenOrSecretIsRefusedAndCounted) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  DataToken wrong = *(*remote)->accepted().data_token;
  wrong[0] ^= 1;
  auto forged = ExtraConnection(**remote, wrong);
  ASSERT_FALSE(forged.ok());
  EXPECT_EQ(forged.status().code(), StatusCode::kFailedPrecondition) << forged.status().ToString();
  EXPECT_EQ(testing::RejectionsWithin(*server_, "data_token", 1), 1u);
  auto no_secret = ExtraConnection(**remote, std::nullopt, 't');
  ASSERT_FALSE(no_secret.ok()) << "another job's secret";
  EXPECT_EQ(testing::RejectionsWithin(*server_, "data_job_secret", 1), 1u);
  EXPECT_TRUE(ExtraConnection(**remote).ok()) << "the right token and secret";
}

TEST_F(PoolDataChannelTest, AWindowOfNoOpenPutOrHeldClaimIsRefusedAndTheConnectionStaysInStep) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  auto extra = ExtraConnection(**remote);
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  HashPipeline hash;
  const std::vector<std::byte> bytes = Pattern(3 * kSlotBytes, 2);
  const std::vector<SlotId> slots{SlotId(1), SlotId(2), SlotId(3)};
  for (int round = 0; round < 2; ++round) {
    auto put = (*extra)->CopyIn(PutId(777), slots, bytes, hash);
    ASSERT_FALSE(put.ok());
    EXPECT_EQ(put.status().code(), StatusCode::kNotFound) << put.status().ToString();
    std::vector<std::byte> out;
    const ClaimedRecord r{
        .key = testing::Key(64), .bytes = 100, .checksum = 0, .slots = {SlotId(1)}};
    const Status claim = (*extra)->CopyOut(ClaimId(778), 0, r, out, hash);
    EXPECT_EQ(claim.code(), StatusCode::kNotFound) << claim.ToString();
  }
  const PoolDataCounts d = server_->Stats().data;
  // Each put's three windows go out within the credits before the first
  // refusal is read; the claim's record is one window.
  EXPECT_EQ(d.windows_refused, 8u);
  EXPECT_EQ(d.connections_dropped, 0u);
  EXPECT_EQ(d.bytes_written, 0u);
}

TEST_F(PoolDataChannelTest, EndingTheSessionEndsItsDataConnectionsAndItsToken) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  auto extra = ExtraConnection(**remote);
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  const PoolHelloAccept accepted = (*remote)->accepted();
  // The same instance connects again: its new session replaces the old one.
  auto again = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  HashPipeline hash;
  const std::vector<std::byte> bytes = Pattern(100, 2);
  auto put = (*extra)->CopyIn(PutId(1), std::vector<SlotId>{SlotId(0)}, bytes, hash);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), StatusCode::kUnavailable) << put.status().ToString();
  // The next copy opens the connection again, which the ended session's
  // token no longer does.
  auto reopened = (*extra)->CopyIn(PutId(1), std::vector<SlotId>{SlotId(0)}, bytes, hash);
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), StatusCode::kFailedPrecondition)
      << reopened.status().ToString();
  // The old token opens nothing; the new one does.
  auto stale = DataConnection(accepted);
  EXPECT_FALSE(stale.ok());
  EXPECT_NE(*accepted.data_token, *(*again)->accepted().data_token);
  EXPECT_TRUE(ExtraConnection(**again).ok());
}

TEST_F(PoolDataChannelTest, APendingPutThatWentWithItsParentTakesNoMoreWindows) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  auto local = PoolClient::Connect(Local("GPU-local"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  const std::vector<Token> tokens = Tokens(300, 21);
  const PrefixHistory history(tokens);
  // The local instance's own record (it goes with its session) ...
  ASSERT_TRUE((*local)
                  ->Put(history.key_at(128), std::nullopt, history.bucket_digest(128),
                        Pattern(kSlotBytes, 1), PutKind::kOwn)
                  .ok());
  // ... and the remote one's child put under it, granted, not yet written.
  const std::vector<std::byte> child = Pattern(kSlotBytes, 2);
  auto sent = (*remote)->SendPut({history.key_at(256), history.key_at(128),
                                  history.bucket_digest(256), child, PutKind::kCascade});
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  ASSERT_TRUE((*remote)->WaitAnswer(*sent, std::chrono::seconds(5)).ok());
  std::optional<PoolMessage> answer = (*remote)->TakeAnswer(*sent);
  ASSERT_TRUE(answer.has_value());
  const auto* grant = std::get_if<PoolPutAnswer>(&*answer);
  ASSERT_NE(grant, nullptr);
  ASSERT_TRUE(grant->status.ok()) << grant->status.ToString();
  // The parent's session ends: the parent and the pending child go, and the
  // child's slot may be granted to the next put.
  local->reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server_->Stats().catalog.sessions > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(server_->Stats().catalog.sessions, 1u);
  auto extra = ExtraConnection(**remote);
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  HashPipeline hash;
  auto late = (*extra)->CopyIn(grant->put, grant->slots, child, hash);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kNotFound) << late.status().ToString();
  EXPECT_EQ(server_->Stats().data.bytes_written, 0u);
}

TEST_F(PoolDataChannelTest, ASessionHasAtMostFourDataConnections) {
  StartManager(/*named=*/false);
  auto remote = PoolClient::Connect(Remote("GPU-remote"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  auto third = ExtraConnection(**remote);
  auto fourth = ExtraConnection(**remote);
  ASSERT_TRUE(third.ok() && fourth.ok());
  auto fifth = ExtraConnection(**remote);
  ASSERT_FALSE(fifth.ok());
  EXPECT_NE(fifth.status().message().find("data connections"), std::string::npos)
      << fifth.status().ToString();
  EXPECT_EQ(testing::RejectionsWithin(*server_, "data_crowded", 1), 1u);
}

TEST_F(PoolDataChannelTest, WithoutAnArenaFileTcpInstancesUseTheChannelOnly) {
  StartManager(/*named=*/false);
  PoolClientOptions arena = Remote("GPU-a");
  arena.data_path = PoolDataPath::kArena;
  auto refused = PoolClient::Connect(arena);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--arena-file"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(testing::RejectionsWithin(*server_, "no_arena_file", 1), 1u);
  // "auto" on the manager's host asks for the arena's file first, and for
  // the data channel once the manager has none.
  PoolClientOptions automatic = Remote("GPU-b");
  automatic.data_path = PoolDataPath::kAuto;
  auto fell_back = PoolClient::Connect(automatic);
  ASSERT_TRUE(fell_back.ok()) << fell_back.status().ToString();
  EXPECT_FALSE((*fell_back)->maps_arena());
  EXPECT_EQ(testing::RejectionsWithin(*server_, "no_arena_file", 2), 2u);
}

TEST_F(PoolDataChannelTest, OnLoopbackAutoMapsTheArenaFileAndTheForcedChannelDoesNot) {
  StartManager(/*named=*/true);
  PoolClientOptions automatic = Remote("GPU-a");
  automatic.data_path = PoolDataPath::kAuto;
  auto mapped = PoolClient::Connect(automatic);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_TRUE((*mapped)->maps_arena()) << "the manager is on this host";
  EXPECT_EQ((*mapped)->accepted().arena_path, arena_path());
  auto forced = PoolClient::Connect(Remote("GPU-b"));
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_FALSE((*forced)->maps_arena());
}

}  // namespace
}  // namespace strata::pool
