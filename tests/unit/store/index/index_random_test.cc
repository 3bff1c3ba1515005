// Seeded randomized test: thousands of operations on PrefixIndex and on the
// brute-force ReferenceIndex, comparing every answer, every decision and the
// whole state after each step. A failure prints its seed;
// STRATA_TEST_SEED=<seed> replays exactly that run (STRATA_TEST_OPS=<n>
// changes its length).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "store/index/index.h"
#include "tests/unit/store/index/index_reference.h"
#include "tests/unit/store/index/index_test_util.h"

namespace strata {
namespace {

using namespace index_test;  // NOLINT(google-build-using-namespace)

constexpr uint64_t kDefaultSeeds = 12;
constexpr uint64_t kDefaultOps = 2500;
constexpr size_t kHistories = 8;
constexpr size_t kHighWater = 160;  // evict down to kLowWater past this many records
constexpr size_t kLowWater = 120;

std::optional<uint64_t> EnvNumber(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::strtoull(text, nullptr, 10);
}

std::vector<IndexEntry> SortedEntries(const PrefixIndex& index) {
  std::vector<IndexEntry> entries = index.Entries();
  std::sort(entries.begin(), entries.end(),
            [](const IndexEntry& a, const IndexEntry& b) { return a.key < b.key; });
  return entries;
}

std::vector<RemovedRecord> SortedByKey(std::vector<RemovedRecord> v) {
  std::sort(v.begin(), v.end(),
            [](const RemovedRecord& a, const RemovedRecord& b) { return a.key < b.key; });
  return v;
}

class RandomRun {
 public:
  explicit RandomRun(uint64_t seed)
      : rng_(seed), pt_(std::array<uint32_t, 3>{64, 128, 256}[seed % 3]), index_(pt_), ref_(pt_) {
    std::vector<std::vector<Token>> tokens{Tokens(1200, rng_())};
    for (size_t i = 1; i < kHistories; ++i) {
      const std::vector<Token>& from = tokens[Pick(i)];
      size_t shared = Pick(from.size() + 1);
      tokens.push_back(Fork(from, shared, 200 + Pick(1000), rng_()));
    }
    for (const std::vector<Token>& t : tokens) histories_.emplace_back(t);
  }

  uint64_t hits() const { return hits_; }

  void Run(uint64_t ops) {
    for (uint64_t op = 0; op < ops; ++op) {
      SCOPED_TRACE("operation " + std::to_string(op));
      Step();
      if (::testing::Test::HasFatalFailure()) return;
      Status invariants = index_.CheckInvariants();
      ASSERT_TRUE(invariants.ok()) << invariants.ToString();
      ASSERT_EQ(SortedEntries(index_), ref_.Entries());
    }
  }

 private:
  uint64_t Pick(uint64_t n) { return rng_() % n; }
  bool Chance(uint32_t percent) { return Pick(100) < percent; }
  const PrefixHistory& AnyHistory() { return histories_[Pick(histories_.size())]; }

  PrefixKey AnyKey() {
    std::vector<PrefixKey> keys = ref_.Keys();
    if (keys.empty() || Chance(5)) return AnyHistory().key_at(1 + Pick(100));  // likely absent
    return keys[Pick(keys.size())];
  }

  TransferState AnyState() {
    uint64_t r = Pick(100);
    if (r < 35) return TransferState::kInFlight;
    if (r < 45) return TransferState::kParked;
    if (r < 55) return TransferState::kSpilling;
    return TransferState::kReady;
  }

  StateSet AnyRestorable() {
    switch (Pick(4)) {
      case 0: return kReadyOnly;
      case 1: return {TransferState::kParked, TransferState::kSpilling, TransferState::kReady};
      case 2:
        return {TransferState::kInFlight, TransferState::kParked, TransferState::kSpilling,
                TransferState::kReady};
      default: return {};
    }
  }

  PrefixIndex::Predicate AnyPredicate() {
    switch (Pick(5)) {
      case 0: return kAny;
      case 1: return [](const IndexEntry& e) { return e.state == TransferState::kReady; };
      case 2: return [](const IndexEntry& e) { return e.key.digest[0] % 3 != 0; };
      case 3: return [](const IndexEntry& e) { return e.row == RowPresence::kPageOnly; };
      default: return [](const IndexEntry& e) { return e.child_count > 0; };  // compaction only
    }
  }

  // Endpoints the model holds on history h, ascending.
  std::vector<uint64_t> RecordsOn(const PrefixHistory& h) {
    std::vector<uint64_t> out;
    for (const PrefixKey& k : ref_.Keys()) {
      if (k.consumed <= h.size() && h.key_at(k.consumed) == k) out.push_back(k.consumed);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  void Step() {
    if (ref_.size() > kHighWater) return EvictDown();
    uint64_t r = Pick(1000);
    if (r < 400) return Insert();
    if (r < 600) return Lookup();
    if (r < 680) return SetState();
    if (r < 760) return Pin();
    if (r < 830) return Unpin();
    if (r < 890) return Touch();
    if (r < 950) return Evict();
    if (r < 985) return Expire();
    if (r < 997) return Remove();
    return Restart();
  }

  void Insert() {
    const PrefixHistory& h = AnyHistory();
    std::vector<uint64_t> on_h = RecordsOn(h);
    uint64_t c = 1 + Pick(h.size());
    if (!on_h.empty() && Chance(50)) {
      c = std::min<uint64_t>(h.size(), on_h[Pick(on_h.size())] + 1 + Pick(300));
    }
    NewRecord rec = RecordAt(h, c, std::nullopt, AnyState(),
                             Chance(90) ? RowPresence::kPresent : RowPresence::kPageOnly);
    rec.location = NodeLocation(rng_());
    std::vector<uint64_t> below;
    for (uint64_t p : on_h) {
      if (p < c) below.push_back(p);
    }
    uint64_t how = Pick(100);
    if (how < 60 && !below.empty()) {
      rec.parent = h.key_at(below.back());
    } else if (how < 80 && !below.empty()) {
      rec.parent = h.key_at(below[Pick(below.size())]);
    } else if (how < 90) {
      rec.parent = h.key_at(Pick(c));
    } else if (how < 91) {
      rec.parent = h.key_at(c);  // not shorter: rejected
    }
    uint64_t now = Advance();
    Result<InsertResult> got = index_.Insert(rec, now);
    Result<InsertResult> want = ref_.Insert(rec, now);
    ASSERT_EQ(got.status().code(), want.status().code()) << got.status().ToString();
    if (!got.ok()) return;
    EXPECT_EQ(got->outcome, want->outcome);
    EXPECT_EQ(got->tail_page_count, want->tail_page_count);
    EXPECT_EQ(got->root, want->root);
    EXPECT_EQ(got->state, want->state);
    EXPECT_EQ(got->parent_row_dropped, want->parent_row_dropped);
  }

  void Lookup() {
    const PrefixHistory& h = AnyHistory();
    uint64_t a = Chance(30) ? 0 : Pick(h.size() + 1);
    uint64_t max_consumed = Chance(50) ? h.size() : a + Pick(h.size() + 100 - a);
    StateSet restorable = AnyRestorable();
    std::optional<LookupHit> got = index_.Lookup(h, a, max_consumed, restorable);
    std::optional<LookupHit> want = ref_.Lookup(h, a, max_consumed, restorable);
    ASSERT_EQ(got.has_value(), want.has_value()) << "a " << a << " max " << max_consumed;
    if (!got) return;
    ASSERT_EQ(ChainCounts(*got), ChainCounts(*want));
    ASSERT_EQ(*got, *want);
    ASSERT_EQ(got->restore_page_count(), got->endpoint().consumed / pt_ - a / pt_);
    ++hits_;
  }

  void SetState() {
    PrefixKey key = AnyKey();
    TransferState state = AnyState();
    Result<std::optional<RowDrop>> got = index_.SetState(key, state);
    Result<std::optional<RowDrop>> want = ref_.SetState(key, state);
    ASSERT_EQ(got.status().code(), want.status().code());
    if (got.ok()) {
      EXPECT_EQ(*got, *want);
    }
  }

  void Pin() {
    PrefixKey key = AnyKey();
    ASSERT_EQ(index_.Pin(key).code(), ref_.Pin(key).code());
  }

  void Unpin() {
    PrefixKey key = AnyKey();
    Result<std::optional<RowDrop>> got = index_.Unpin(key);
    Result<std::optional<RowDrop>> want = ref_.Unpin(key);
    ASSERT_EQ(got.status().code(), want.status().code());
    if (got.ok()) {
      EXPECT_EQ(*got, *want);
    }
  }

  void Touch() {
    PrefixKey key = AnyKey();
    uint64_t now = Advance();
    ASSERT_EQ(index_.Touch(key, now).code(), ref_.Touch(key, now).code());
  }

  void Evict() {
    PrefixIndex::Predicate evictable = AnyPredicate();
    EvictionDecision got = index_.EvictOne(evictable);
    EvictionDecision want = ref_.EvictOne(evictable);
    ASSERT_EQ(got.removed, want.removed);
    ASSERT_EQ(got.compacted, want.compacted);
  }

  void EvictDown() {
    while (ref_.size() > kLowWater) {
      EvictionDecision got = index_.EvictOne(kAny);
      EvictionDecision want = ref_.EvictOne(kAny);
      ASSERT_EQ(got.removed, want.removed);
      ASSERT_EQ(got.compacted, want.compacted);
      if (got.empty()) return;  // everything pinned
    }
  }

  void Expire() {
    now_ += Chance(50) ? PrefixIndex::kExpirySweepIntervalMs : Pick(30'000);
    uint64_t max_age = std::array<uint64_t, 4>{20'000, 200'000, 1'000'000, 5'000'000}[Pick(4)];
    PrefixIndex::Predicate droppable = AnyPredicate();
    ExpirySweep got = index_.Expire(now_, max_age, droppable);
    ExpirySweep want = ref_.Expire(now_, max_age, droppable);
    ASSERT_EQ(got.ran, want.ran);
    ASSERT_EQ(got.expired_leaves, want.expired_leaves);
    ASSERT_EQ(got.removed, want.removed);
  }

  void Remove() {
    PrefixKey key = AnyKey();
    Result<std::vector<RemovedRecord>> got = index_.Remove(key);
    Result<std::vector<RemovedRecord>> want = ref_.Remove(key);
    ASSERT_EQ(got.status().code(), want.status().code());
    if (got.ok()) {
      ASSERT_EQ(SortedByKey(*got), SortedByKey(*want));
    }
  }

  // A restart: only committed (kReady) records survive, rebuilt from scratch.
  void Restart() {
    std::vector<CommittedRecord> records = ref_.Committed();
    std::shuffle(records.begin(), records.end(), rng_);
    index_ = PrefixIndex(pt_);
    Result<LoadReport> got = index_.LoadCommitted(records);
    LoadReport want = ref_.Load(records);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->rejected.empty());
    std::sort(got->orphans.begin(), got->orphans.end());
    ASSERT_EQ(got->orphans, want.orphans);
    ASSERT_EQ(SortedByKey(got->pruned), want.pruned);
  }

  uint64_t Advance() { return now_ += Pick(3'000); }

  std::mt19937_64 rng_;
  uint32_t pt_;
  std::vector<PrefixHistory> histories_;
  PrefixIndex index_;
  ReferenceIndex ref_;
  uint64_t now_ = 0;
  uint64_t hits_ = 0;
};

TEST(IndexRandomTest, MatchesBruteForceReference) {
  std::optional<uint64_t> replay = EnvNumber("STRATA_TEST_SEED");
  uint64_t ops = EnvNumber("STRATA_TEST_OPS").value_or(kDefaultOps);
  std::vector<uint64_t> seeds;
  if (replay) {
    seeds.push_back(*replay);
  } else {
    for (uint64_t s = 1; s <= kDefaultSeeds; ++s) seeds.push_back(s);
  }
  uint64_t hits = 0;
  for (uint64_t seed : seeds) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (replay: STRATA_TEST_SEED=" + std::to_string(seed) + ")");
    RandomRun run(seed);
    run.Run(ops);
    if (HasFailure()) {
      std::fprintf(stderr, "index random test failed: replay with STRATA_TEST_SEED=%llu\n",
                   static_cast<unsigned long long>(seed));
      return;
    }
    hits += run.hits();
  }
  // The workload must exercise lookups that hit, not only misses.
  EXPECT_GT(hits, seeds.size() * ops / 50);
}

}  // namespace
}  // namespace strata
