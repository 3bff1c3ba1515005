// The put queue (put_queue.h) against the manager's service in-process, over
// its real socket: a put refused while the arena is taken waits parked and
// goes, byte-exact, once the manager made progress (learned through its
// progress probe); a lost connection puts the record in flight again on the
// next one; a record larger than the arena is abandoned as oversize; the
// byte budget abandons the oldest parked chains; a demotion's copy reports
// its outcomes and is no drop when given up. Every wait is for an
// answer, bounded; the clock the gates read is passed by hand.
#include "coordinator/pool/put_queue.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "coordinator/pool/pool_server.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

using namespace std::chrono_literals;
using testing::Pattern;
using testing::Tokens;

constexpr uint64_t kSlotBytes = 64 * 1024;
constexpr uint64_t kSlots = 32;

class PutQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-putq-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    PoolServerOptions options;
    options.name = "shared";
    options.socket_path = dir_ + "/pool.sock";
    options.slot_bytes = kSlotBytes;
    options.slot_count = kSlots;
    options.huge_pages = HugePages::kNever;
    auto server = PoolServer::Start(options, /*generation=*/3);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    socket_path_ = options.socket_path;
  }
  void TearDown() override {
    server_.reset();
    ::rmdir(dir_.c_str());
  }

  std::unique_ptr<PoolClient> Connect(const std::string& gpu) {
    auto c = PoolClient::Connect(testing::ClientOptions(socket_path_, gpu));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // A one-record chain ending at `consumed` tokens of `history`.
  static std::vector<ParkedRecord> Chain(const PrefixHistory& history, uint64_t consumed,
                                         uint64_t bytes, uint8_t seed) {
    std::vector<ParkedRecord> chain;
    chain.push_back(ParkedRecord{.key = history.key_at(consumed),
                                 .parent = std::nullopt,
                                 .bucket_digest = history.bucket_digest(consumed),
                                 .image = Pattern(bytes, seed)});
    return chain;
  }

  // Advances `q` on `client`'s answers at `now_ms` until `done` holds,
  // waiting only for answers (at most 10 s in all).
  template <typename Done>
  static bool Drive(PutQueue& q, PoolClient& client, uint64_t now_ms, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      if (!client.Pump().ok() || !q.Advance(client, now_ms).ok()) return false;
      if (done()) return true;
      if (std::optional<uint64_t> id = q.awaited()) {
        if (!client.WaitAnswer(*id, 100ms).ok()) return false;
      } else {
        std::this_thread::sleep_for(1ms);  // a probe's answer is not awaited by id
      }
    }
    return true;
  }

  // The record `key` as another instance claims it.
  std::vector<std::byte> ClaimedBy(PoolClient& c, std::span<const Token> tokens) {
    auto chain = c.Lookup(tokens, 0, tokens.size());
    if (!chain.ok() || !chain->has_value()) return {};
    auto copied = c.ClaimCopy(**chain);
    return copied.ok() && copied->size() == 1 ? copied->front() : std::vector<std::byte>{};
  }

  std::string dir_;
  std::string socket_path_;
  std::unique_ptr<PoolServer> server_;
};

TEST_F(PutQueueTest, ARefusedPutWaitsParkedAndGoesByteExactAfterTheManagersProgress) {
  auto a = Connect("GPU-a");
  auto blocker = Connect("GPU-t");
  auto b = Connect("GPU-b");
  ASSERT_TRUE(a && blocker && b);
  // The blocker holds a grant of the whole arena (pinned until it ends).
  const std::vector<Token> other = Tokens(128, 900);
  const PrefixHistory other_history(other);
  auto held = blocker->SendPut(PoolClient::PutItem{.key = other_history.key_at(64),
                                                   .parent = std::nullopt,
                                                   .bucket_digest = other_history.bucket_digest(64),
                                                   .bytes = Pattern(kSlots * kSlotBytes, 1),
                                                   .kind = PutKind::kCascade});
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(blocker->WaitAnswer(*held, 10s).ok());
  std::optional<PoolMessage> grant = blocker->TakeAnswer(*held);
  ASSERT_TRUE(grant && std::get<PoolPutAnswer>(*grant).status.ok());

  const std::vector<Token> tokens = Tokens(128, 7);
  const PrefixHistory history(tokens);
  PutQueue q(kPutQueueBytesDefault);
  q.Park(Chain(history, 64, 2 * kSlotBytes + 5, 3));
  const std::vector<std::byte> image = Pattern(2 * kSlotBytes + 5, 3);
  ASSERT_TRUE(Drive(q, *a, 0, [&] { return !q.stats().refusals.empty(); }));
  EXPECT_EQ(q.stats().refusals.at("busy"), 1u);
  EXPECT_EQ(q.stats().parked_records, 1u);
  EXPECT_FALSE(q.awaited().has_value()) << "a refused put waits for its gate";

  // Time alone does not reopen it, and nothing is asked before the probe is due.
  ASSERT_TRUE(q.Advance(*a, kPutBackoffMs - 1).ok());
  EXPECT_EQ(q.stats().probes, 0u);
  EXPECT_EQ(q.stats().retries, 0u);

  // The manager makes progress (the grant ends); the probe learns of it.
  auto aborted = blocker->SendAbort(std::get<PoolPutAnswer>(*grant).put);
  ASSERT_TRUE(aborted.ok());
  ASSERT_TRUE(blocker->WaitAnswer(*aborted, 10s).ok());
  ASSERT_TRUE(Drive(q, *a, kPutBackoffMs, [&] { return q.stats().accepted == 1; }));
  EXPECT_EQ(q.stats().probes, 1u);
  EXPECT_EQ(q.stats().retries, 1u);
  EXPECT_EQ(q.stats().parked_records, 0u);
  EXPECT_EQ(q.stats().parked_bytes, 0u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(ClaimedBy(*b, tokens), image);
}

TEST_F(PutQueueTest, ALostConnectionPutsTheRecordInFlightAgainOnTheNextOne) {
  auto a = Connect("GPU-a");
  auto b = Connect("GPU-b");
  ASSERT_TRUE(a && b);
  const std::vector<Token> tokens = Tokens(128, 40);
  const PrefixHistory history(tokens);
  PutQueue q(kPutQueueBytesDefault);
  q.Park(Chain(history, 64, kSlotBytes + 17, 8));
  ASSERT_TRUE(q.Advance(*a, 0).ok());
  ASSERT_TRUE(q.awaited().has_value()) << "the grant request went out";
  // The connection goes before the answer is read (its session's puts end).
  q.Lost();
  a.reset();
  EXPECT_FALSE(q.awaited().has_value());
  auto again = Connect("GPU-a");
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(Drive(q, *again, 0, [&] { return q.empty(); }));
  EXPECT_EQ(q.stats().accepted, 1u);
  EXPECT_EQ(ClaimedBy(*b, tokens), Pattern(kSlotBytes + 17, 8));
}

TEST_F(PutQueueTest, ARecordLargerThanTheArenaIsAbandonedAsOversizeAtOnce) {
  auto a = Connect("GPU-a");
  ASSERT_NE(a, nullptr);
  const PrefixHistory history(Tokens(128, 60));
  PutQueue q(kPutQueueBytesDefault);
  q.Park(Chain(history, 64, (kSlots + 1) * kSlotBytes, 2));
  ASSERT_TRUE(Drive(q, *a, 0, [&] { return q.empty(); }));
  EXPECT_EQ(q.stats().abandoned.at("oversize"), 1u);
  EXPECT_EQ(q.stats().accepted, 0u);
  EXPECT_EQ(q.stats().parked_records, 0u);
  EXPECT_EQ(q.stats().retries, 0u);
}

TEST_F(PutQueueTest, ACopysOutcomesAreReportedAndAGivenUpCopyIsNoDrop) {
  auto a = Connect("GPU-a");
  ASSERT_NE(a, nullptr);
  const PrefixHistory history(Tokens(256, 61));
  PutQueue q(kPutQueueBytesDefault);
  q.Park(Chain(history, 64, kSlotBytes + 3, 4), /*copy=*/true);
  q.Park(Chain(history, 128, (kSlots + 1) * kSlotBytes, 5), /*copy=*/true);  // too large
  ASSERT_TRUE(Drive(q, *a, 0, [&] { return q.empty(); }));
  std::vector<PrefixKey> accepted;
  std::vector<PrefixKey> given_up;
  q.TakeCopyOutcomes(accepted, given_up);
  EXPECT_EQ(accepted, std::vector<PrefixKey>{history.key_at(64)});
  EXPECT_EQ(given_up, std::vector<PrefixKey>{history.key_at(128)});
  EXPECT_EQ(q.stats().copies_given_up, 1u);
  EXPECT_EQ(q.abandoned_total(), 0u) << "the tier still holds a given-up copy";
  q.TakeCopyOutcomes(accepted, given_up);
  EXPECT_EQ(accepted.size(), 1u) << "each outcome is reported once";

  // A copy larger than the whole budget is given up at once.
  PutQueue small(100);
  small.Park(Chain(history, 192, 101, 6), /*copy=*/true);
  std::vector<PrefixKey> none;
  std::vector<PrefixKey> gone;
  small.TakeCopyOutcomes(none, gone);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(gone, std::vector<PrefixKey>{history.key_at(192)});
  EXPECT_EQ(small.abandoned_total(), 0u);
}

TEST(PutQueueBudgetTest, NewChainsAbandonTheOldestParkedOnesAndOversizeOnesGoAtOnce) {
  const PrefixHistory history(Tokens(512, 1));
  const auto chain = [&](uint64_t consumed, std::vector<uint64_t> sizes) {
    std::vector<ParkedRecord> c;
    for (uint64_t bytes : sizes) {
      c.push_back(ParkedRecord{.key = history.key_at(consumed),
                               .parent = std::nullopt,
                               .bucket_digest = history.bucket_digest(consumed),
                               .image = std::vector<std::byte>(bytes)});
      consumed += 64;
    }
    return c;
  };
  PutQueue q(100);
  q.Park(chain(64, {40}));
  q.Park(chain(128, {40}));
  q.Park(chain(192, {40}));  // 120 > 100: the oldest goes
  EXPECT_EQ(q.stats().abandoned.at("queue"), 1u);
  EXPECT_EQ(q.stats().parked_records, 2u);
  EXPECT_EQ(q.stats().parked_bytes, 80u);
  q.Park(chain(256, {30, 30}));  // 140 > 100: one more chain goes, counted once
  EXPECT_EQ(q.stats().abandoned.at("queue"), 2u);
  EXPECT_EQ(q.stats().parked_records, 3u);
  EXPECT_EQ(q.stats().parked_bytes, 100u);
  q.Park(chain(320, {101}));  // never fits: nothing parked is given up for it
  EXPECT_EQ(q.stats().abandoned.at("oversize"), 1u);
  EXPECT_EQ(q.stats().parked_records, 3u);
  EXPECT_EQ(q.abandoned_total(), 3u);
  q.AbandonAll("unshared");
  EXPECT_EQ(q.stats().abandoned.at("unshared"), 2u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.stats().parked_bytes, 0u);
}

}  // namespace
}  // namespace strata::pool
