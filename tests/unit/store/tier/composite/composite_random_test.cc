// Seeded randomized test of the composite store: conversations, branches,
// GPU evictions, full disks, I/O errors, expiry and restarts (with and
// without a shutdown drain) drive a real composite store through the
// synthetic runtime, which checks every restored byte. After every step the
// store's invariants are checked (again as over the direct transport,
// options.direct): memory is a subset of disk, residence
// states match disk states, rows agree, and when idle no pin, user or slot
// is left over (pool slots in use == slots held by records).
//
// A failure prints its seed; STRATA_TEST_SEED=<seed> replays that run's
// choices (thread timing still varies), STRATA_TEST_OPS=<n> sets its length.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <random>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "tests/unit/store/tier/composite/composite_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::CompositeRig;
using testing::FaultFileSystem;
using testing::NowMs;
using testing::RigOptions;
using testing::ScratchDir;

constexpr uint64_t kDefaultSeeds = 3;
constexpr uint64_t kDefaultOps = 120;
constexpr auto kBound = 30s;
constexpr uint64_t kMaxAgeMs = 3'600'000;

std::optional<uint64_t> EnvNumber(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::strtoull(v, nullptr, 10);
}

class RandomRun {
 public:
  // `direct`: as over the direct transport (fan-out on store, restores of chains on
  // disk straight from the files, memory warmed through publication).
  RandomRun(uint64_t seed, const std::string& dir, bool direct)
      : rng_(seed), dir_(dir), planes_(*PresetGeometry("tiny", 2, 1024, 16)) {
    options_.store.direct = direct;
    options_.warm_slots = Pick(24, 160);
    options_.intake_slots = Pick(24, 48);
    const uint64_t record = RecordFileBytes(RecordLayout(planes_.geometry()), {.tail_pages = 12});
    options_.store.disk_limit_bytes = record * Pick(6, 40);
    options_.store.max_age_ms = kMaxAgeMs;
    options_.store.spill_retry_ms = 500;
  }

  void Run(uint64_t ops) {
    ASSERT_NO_FATAL_FAILURE(Open());
    if (::testing::Test::IsSkipped()) return;
    for (uint64_t i = 0; i < ops; ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      ASSERT_NO_FATAL_FAILURE(Step());
      ASSERT_NO_FATAL_FAILURE(Settle());
    }
    EXPECT_EQ(rt_->stats().mismatches, 0u);
    Close();
  }

  uint64_t host_hits() const { return host_hits_; }

 private:
  uint64_t Pick(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  uint64_t Now() const { return NowMs() + clock_offset_ms_; }

  void Open() {
    rig_ = std::make_unique<CompositeRig>(dir_, planes_, fs_, options_);
    if (rig_->status.code() == StatusCode::kFailedPrecondition)
      GTEST_SKIP() << rig_->status.message();
    ASSERT_TRUE(rig_->status.ok()) << rig_->status.ToString();
    SyntheticRuntimeOptions ro;
    ro.seed = 7;  // the same token streams across restarts: old records hit
    rt_ = std::make_unique<SyntheticRuntime>(planes_, rig_->store.get(), ro);
    conversations_ = 0;
  }

  void Close() {
    if (rt_ && rig_ && rig_->store) {
      const StoreStats st = rig_->store->Stats();
      std::fprintf(
          stderr,
          "  life: turns %llu hits %llu stored %llu failed %llu | queued %llu deferred "
          "%llu retry %llu | mem stored %llu evicted %llu | disk stored %llu evicted "
          "%llu expired %llu io %llu fsfull %llu | fan-out writes %llu\n",
          (unsigned long long)rt_->stats().turns, (unsigned long long)rt_->stats().host_hits,
          (unsigned long long)rt_->stats().stored, (unsigned long long)rt_->stats().store_failed,
          (unsigned long long)st.store_queued, (unsigned long long)st.store_deferred,
          (unsigned long long)st.store_retry, (unsigned long long)st.memory.stored_total,
          (unsigned long long)st.memory.evicted_total, (unsigned long long)st.disk.stored_total,
          (unsigned long long)st.disk.evicted_total, (unsigned long long)st.disk.expired_total,
          (unsigned long long)st.disk.dropped_io_total, (unsigned long long)st.fs_full_retries,
          (unsigned long long)st.fanout_writes);
    }
    if (rt_) host_hits_ += rt_->stats().host_hits;
    rt_.reset();
    rig_.reset();  // closes (and drains, if configured)
  }

  void Turn(uint32_t c) {
    Result<TurnReport> t = rt_->Turn(c, Pick(1, 1200));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }

  void Step() {
    if (full_steps_ > 0 && --full_steps_ == 0) fs_.fail_errno = 0;
    const uint64_t dice = Pick(0, 99);
    if (conversations_ == 0 || dice < 15) {
      rt_->NewConversation();
      ++conversations_;
      Turn(static_cast<uint32_t>(conversations_ - 1));
    } else if (dice < 55) {
      Turn(static_cast<uint32_t>(Pick(0, conversations_ - 1)));
    } else if (dice < 65) {
      const auto parent = static_cast<uint32_t>(Pick(0, conversations_ - 1));
      rt_->Branch(parent, Pick(0, rt_->conversation_tokens(parent)));
      ++conversations_;
      Turn(static_cast<uint32_t>(conversations_ - 1));
    } else if (dice < 78) {
      rt_->EvictGpu();
    } else if (dice < 86) {
      fs_.fail_errno = ENOSPC;  // the disk is full for a few steps
      full_steps_ = Pick(1, 3);
    } else if (dice < 88) {
      fs_.fail_errno = EIO;  // one step of failing writes
      Turn(static_cast<uint32_t>(Pick(0, conversations_ - 1)));
      ASSERT_TRUE(rt_->WaitForStores().ok());
      ASSERT_TRUE(rig_->store->WaitIdle(Now(), kBound));
      fs_.fail_errno = 0;
    } else if (dice < 90) {
      clock_offset_ms_ += 2 * kMaxAgeMs;  // everything unused expires
    } else if (dice < 95) {
      clock_offset_ms_ += options_.store.spill_retry_ms;  // backoffs run out
    } else {
      const uint64_t mode = Pick(0, 2);
      options_.store.drain.mode = mode == 0   ? ShutdownDrain::Mode::kOff
                                  : mode == 1 ? ShutdownDrain::Mode::kUntilDone
                                              : ShutdownDrain::Mode::kBounded;
      options_.store.drain.write_limit = std::chrono::milliseconds(Pick(0, 50));
      ASSERT_TRUE(rt_->WaitForStores().ok());
      Close();
      fs_.fail_errno = 0;
      full_steps_ = 0;
      ASSERT_NO_FATAL_FAILURE(Open());
    }
  }

  void Settle() {
    const Status stores = rt_->WaitForStores();
    ASSERT_TRUE(stores.ok()) << stores.ToString();
    ASSERT_TRUE(rig_->store->WaitIdle(Now(), kBound));
    ASSERT_EQ(rt_->stats().mismatches, 0u);
    Status inv = rig_->store->CheckInvariants();
    ASSERT_TRUE(inv.ok()) << inv.ToString();
    const StoreStats s = rig_->store->Stats();
    ASSERT_EQ(s.slots_in_use, rig_->pool->used_slots());
    ASSERT_EQ(rig_->pool->free_slots() + rig_->pool->used_slots(), rig_->pool->total_slots());
    ASSERT_LE(rig_->store->disk().used_bytes(), options_.store.disk_limit_bytes);
  }

  std::mt19937_64 rng_;
  std::string dir_;
  HostPlanes planes_;
  FaultFileSystem fs_;
  RigOptions options_;
  std::unique_ptr<CompositeRig> rig_;
  std::unique_ptr<SyntheticRuntime> rt_;
  uint64_t conversations_ = 0;
  uint64_t clock_offset_ms_ = 0;
  uint64_t full_steps_ = 0;  // steps left with a full disk
  uint64_t host_hits_ = 0;
};

void RunSeeds(bool direct) {
  std::optional<uint64_t> replay = EnvNumber("STRATA_TEST_SEED");
  const uint64_t ops = EnvNumber("STRATA_TEST_OPS").value_or(kDefaultOps);
  std::vector<uint64_t> seeds;
  if (replay) {
    seeds.push_back(*replay);
  } else {
    for (uint64_t s = 1; s <= kDefaultSeeds; ++s) seeds.push_back(s);
  }
  uint64_t hits = 0;
  for (uint64_t seed : seeds) {
    std::fprintf(stderr, "composite random test: seed %llu (replay: STRATA_TEST_SEED=%llu)\n",
                 static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (replay: STRATA_TEST_SEED=" + std::to_string(seed) + ")");
    ScratchDir dir;
    RandomRun run(seed, dir.path(), direct);
    run.Run(ops);
    if (::testing::Test::HasFailure() || ::testing::Test::IsSkipped()) return;
    hits += run.host_hits();
  }
  EXPECT_GT(hits, 0u);  // the run exercised restores
}

TEST(CompositeRandomTest, InvariantsHoldAndEveryRestoredByteIsExact) { RunSeeds(false); }

TEST(CompositeRandomTest, OverTheDirectPathInvariantsHoldAndEveryRestoredByteIsExact) {
  RunSeeds(true);
}

}  // namespace
}  // namespace strata
