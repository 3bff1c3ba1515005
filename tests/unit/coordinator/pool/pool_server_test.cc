// The manager's service in-process, over its real Unix socket: one client puts
// a record into the arena and another claims it byte-exact; a chain put
// (pipelined) commits every record, skips one already pooled and stops at a
// refusal; a client with a different scope shares nothing; a bad Hello is
// rejected with its reason.
#include "coordinator/pool/pool_server.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "coordinator/pool/pool_client.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotBytes = 64 * 1024;

using testing::Pattern;
using testing::Tokens;

class PoolServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-pool-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    PoolServerOptions options;
    options.name = "shared";
    options.socket_path = dir_ + "/pool.sock";
    options.slot_bytes = kSlotBytes;
    options.slot_count = 32;
    options.huge_pages = HugePages::kNever;
    auto server = PoolServer::Start(options, /*generation=*/77);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    socket_path_ = options.socket_path;
  }
  void TearDown() override {
    server_.reset();
    ::rmdir(dir_.c_str());
  }

  PoolClientOptions Options(const std::string& gpu, uint8_t layout_tag) const {
    return testing::ClientOptions(socket_path_, gpu, layout_tag);
  }

  std::unique_ptr<PoolClient> Connect(const std::string& gpu, uint8_t layout_tag = 1) {
    auto c = PoolClient::Connect(Options(gpu, layout_tag));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::string dir_;
  std::string socket_path_;
  std::unique_ptr<PoolServer> server_;
};

TEST_F(PoolServerTest, HelloTellsTheNameGenerationAndArena) {
  auto a = Connect("GPU-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->accepted().pool_name, "shared");
  EXPECT_EQ(a->accepted().generation, 77u);
  EXPECT_EQ(a->accepted().slot_bytes, kSlotBytes);
  EXPECT_EQ(a->accepted().slot_count, 32u);
  const std::vector<std::string> gpus{"GPU-a"};
  EXPECT_EQ(a->accepted().instance, ComputeInstanceId("shared", gpus));
}

TEST_F(PoolServerTest, OneClientPutsAnotherClaimsByteExact) {
  auto a = Connect("GPU-a");
  auto b = Connect("GPU-b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<Token> tokens = Tokens(300, 11);
  const PrefixHistory history(tokens);
  const std::vector<std::byte> record = Pattern(3 * kSlotBytes + 123, 5);
  ASSERT_TRUE(a->Put(history.key_at(256), std::nullopt, history.bucket_digest(256), record,
                     PutKind::kCascade)
                  .ok());
  auto chain = b->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_TRUE(chain->has_value());
  ASSERT_EQ((*chain)->size(), 1u);
  EXPECT_EQ((*chain)->back(), history.key_at(256));
  auto copied = b->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  ASSERT_EQ(copied->size(), 1u);
  EXPECT_EQ(copied->front(), record);
}

TEST_F(PoolServerTest, ClaimIntoReusesBuffersAndChecksEveryByte) {
  auto a = Connect("GPU-a");
  auto b = Connect("GPU-b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<Token> tokens = Tokens(128, 21);
  const PrefixHistory history(tokens);
  const std::vector<std::byte> record = Pattern(2 * kSlotBytes + 77, 9);
  ASSERT_TRUE(a->Put(history.key_at(128), std::nullopt, history.bucket_digest(128), record,
                     PutKind::kCascade)
                  .ok());
  const std::vector<PrefixKey> chain{history.key_at(128)};
  std::vector<std::vector<std::byte>> buffers;
  ASSERT_TRUE(b->ClaimInto(chain, buffers).ok());
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(buffers[0], record);
  const std::byte* first = buffers[0].data();
  buffers[0][5] = std::byte{0};  // the next claim overwrites every byte
  ASSERT_TRUE(b->ClaimInto(chain, buffers).ok());
  EXPECT_EQ(buffers[0].data(), first) << "a buffer of the record's size is reused";
  EXPECT_EQ(buffers[0], record);

  // One byte flipped in one of the record's slots (the only bytes in the
  // arena that start like its tail): the fused check sees it, and the claim
  // is still released (the next one is admitted).
  bool flipped = false;
  for (uint32_t s = 0; s < b->arena().slot_count() && !flipped; ++s) {
    std::span<std::byte> slot = b->arena().Slot(SlotId(s));
    if (std::equal(record.begin() + 2 * kSlotBytes, record.end(), slot.begin())) {
      slot[76] ^= std::byte{1};
      flipped = true;
    }
  }
  ASSERT_TRUE(flipped) << "the record's last slot was found";
  EXPECT_EQ(b->ClaimInto(chain, buffers).code(), StatusCode::kCorruption);
  EXPECT_EQ(b->ClaimCopy(chain).status().code(), StatusCode::kCorruption)
      << "the failed claim was released: the next one is admitted and checked too";
}

// A chain of `n` records of 64 tokens each (the fixture's page), parents
// first, over `bytes[k]`.
std::vector<PoolClient::PutItem> ChainItems(const PrefixHistory& history,
                                            const std::vector<std::vector<std::byte>>& bytes) {
  std::vector<PoolClient::PutItem> items;
  for (size_t k = 0; k < bytes.size(); ++k) {
    const uint64_t end = (k + 1) * 64;
    items.push_back(PoolClient::PutItem{
        .key = history.key_at(end),
        .parent = k == 0 ? std::nullopt : std::optional<PrefixKey>(history.key_at(end - 64)),
        .bucket_digest = history.bucket_digest(end),
        .bytes = bytes[k],
        .kind = PutKind::kCascade});
  }
  return items;
}

TEST_F(PoolServerTest, AChainPutCommitsEveryRecordAndSkipsOnePooledAlready) {
  auto a = Connect("GPU-a");
  auto b = Connect("GPU-b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<Token> tokens = Tokens(256, 31);
  const PrefixHistory history(tokens);
  const std::vector<std::vector<std::byte>> bytes{Pattern(2 * kSlotBytes + 5, 1),
                                                  Pattern(kSlotBytes, 2),
                                                  Pattern(3 * kSlotBytes - 9, 3), Pattern(100, 4)};
  const std::vector<PoolClient::PutItem> items = ChainItems(history, bytes);
  // B pools the first two records itself: A's chain put finds them there.
  const std::vector<Status> first = b->PutChain(std::span(items).first(2));
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(first[0].ok() && first[1].ok()) << first[0].ToString() << first[1].ToString();

  const std::vector<Status> outcomes = a->PutChain(items);
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_EQ(outcomes[0].code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(outcomes[1].code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(outcomes[2].ok()) << outcomes[2].ToString();
  EXPECT_TRUE(outcomes[3].ok()) << outcomes[3].ToString();
  auto chain = b->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_TRUE(chain->has_value());
  ASSERT_EQ((*chain)->size(), 4u);
  auto copied = b->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(*copied, bytes) << "every record byte-exact, in chain order";
  EXPECT_EQ(server_->Stats().slots_free, 32u - 8u) << "3 + 1 + 3 + 1 slots, none leaked";
}

TEST_F(PoolServerTest, AChainPutStopsAtARefusalAndKeepsTheRecordsBeforeIt) {
  auto a = Connect("GPU-a");
  ASSERT_NE(a, nullptr);
  const std::vector<Token> tokens = Tokens(256, 41);
  const PrefixHistory history(tokens);
  // The third record needs 33 slots of an arena of 32: refused at its grant,
  // while the second is being copied (its grant was asked for first).
  const std::vector<std::vector<std::byte>> bytes{Pattern(kSlotBytes + 1, 1),
                                                  Pattern(2 * kSlotBytes, 2),
                                                  Pattern(32 * kSlotBytes + 1, 3), Pattern(100, 4)};
  const std::vector<PoolClient::PutItem> items = ChainItems(history, bytes);
  const std::vector<Status> outcomes = a->PutChain(items);
  ASSERT_EQ(outcomes.size(), 3u) << "the record after the refusal is not tried";
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].ToString();
  EXPECT_TRUE(outcomes[1].ok()) << outcomes[1].ToString();
  EXPECT_EQ(outcomes[2].code(), StatusCode::kInvalidArgument);
  auto chain = a->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_TRUE(chain->has_value());
  const std::vector<PrefixKey> want{history.key_at(64), history.key_at(128)};
  EXPECT_EQ(**chain, want) << "the committed records stay pooled";
  auto copied = a->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  ASSERT_EQ(copied->size(), 2u);
  EXPECT_EQ((*copied)[1], bytes[1]);
  EXPECT_EQ(server_->Stats().slots_free, 32u - 4u) << "2 + 2 slots, none leaked";
  // The connection is still usable. The refused record's child alone is
  // refused too: a record holds only its tail, so it is never filed without
  // its parent (it would be a root of the wrong length).
  const std::vector<Status> rest = a->PutChain(std::span(items).last(1));
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].code(), StatusCode::kNotFound) << rest[0].ToString();
  EXPECT_EQ(server_->Stats().slots_free, 32u - 4u) << "nothing taken for it";
  const std::vector<Status> again = a->PutChain(std::span(items).first(2));
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].code(), StatusCode::kAlreadyExists) << "held records answer so";
}

TEST_F(PoolServerTest, ADifferentScopeSharesNothing) {
  auto a = Connect("GPU-a", 1);
  auto c = Connect("GPU-c", 2);  // another layout fingerprint
  ASSERT_NE(a, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(a->accepted().scope, c->accepted().scope);
  const std::vector<Token> tokens = Tokens(128, 3);
  const PrefixHistory history(tokens);
  ASSERT_TRUE(a->Put(history.key_at(128), std::nullopt, history.bucket_digest(128),
                     Pattern(kSlotBytes, 1), PutKind::kCascade)
                  .ok());
  auto chain = c->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_FALSE(chain->has_value());
  const std::vector<PrefixKey> guessed{history.key_at(128)};
  EXPECT_EQ(c->ClaimCopy(guessed).status().code(), StatusCode::kNotFound)
      << "a key from another scope cannot be claimed either";
}

TEST_F(PoolServerTest, OwnRecordsLeaveWithTheConnectionCascadedStay) {
  const std::vector<Token> own_tokens = Tokens(128, 1000);
  const std::vector<Token> cascaded_tokens = Tokens(128, 2000);
  const PrefixHistory own(own_tokens);
  const PrefixHistory cascaded(cascaded_tokens);
  {
    auto a = Connect("GPU-a");
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(a->Put(own.key_at(128), std::nullopt, own.bucket_digest(128), Pattern(100, 1),
                       PutKind::kOwn)
                    .ok());
    ASSERT_TRUE(a->Put(cascaded.key_at(128), std::nullopt, cascaded.bucket_digest(128),
                       Pattern(100, 2), PutKind::kCascade)
                    .ok());
  }  // A exits: its connection closes
  auto b = Connect("GPU-b");
  ASSERT_NE(b, nullptr);
  // A's close was readable before B connected, so the manager's poll round
  // that answers B's Hello also reads A's end: B's first lookup comes later.
  auto gone = b->Lookup(own_tokens, 0, own_tokens.size());
  ASSERT_TRUE(gone.ok());
  const bool own_gone = !gone->has_value();
  EXPECT_TRUE(own_gone) << "A's own record left with its session";
  auto chain = b->Lookup(cascaded_tokens, 0, cascaded_tokens.size());
  ASSERT_TRUE(chain.ok());
  ASSERT_TRUE(chain->has_value()) << "A exited and B still restores the cascaded record";
  auto copied = b->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok());
  EXPECT_EQ(copied->front(), Pattern(100, 2));
}

TEST_F(PoolServerTest, RejectsABadHelloWithItsReason) {
  PoolClientOptions o = Options("GPU-a", 1);
  o.hello.page_tokens = 0;
  auto c = PoolClient::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("zero page tokens"), std::string::npos)
      << c.status().ToString();
  o = Options("GPU-a", 1);
  o.hello.protocol_version = 99;
  EXPECT_EQ(PoolClient::Connect(o).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(PoolServerTest, NoManagerIsUnavailable) {
  PoolClientOptions o = Options("GPU-a", 1);
  o.socket_path = dir_ + "/nobody.sock";
  EXPECT_EQ(PoolClient::Connect(o).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace strata::pool
