// A seeded random sequence of turns, export requests (good, stale, with
// another generation, past the chain, too large for their staging), ends,
// second ends and evictions, against the synthetic runtime and a real
// PooledStore. After every step: every pin is accounted for by an open
// export (no pin leaked, none released twice), an evicted checkpoint was
// never exported, and a pinned one was never evicted.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "store/base/splitmix.h"
#include "tests/unit/launch/runtime/export_rig.h"

namespace strata::testing {
namespace {

constexpr int kSteps = 400;
constexpr uint64_t kSeeds = 4;

using Holding = std::pair<PrefixKey, uint64_t>;  // key, generation

struct Model {
  std::map<ExportId, Holding> open;  // pinned, not finished by the relay
  std::set<ExportId> finished;       // FinishExport called
  std::set<Holding> evicted;         // seen gone from the GPU cache
  std::set<Holding> resident;        // as of the last check
  uint64_t rejected_requests = 0;    // too large for their staging
};

void CheckInvariants(ExportRig& rig, Model& m, uint64_t step) {
  SCOPED_TRACE("step " + std::to_string(step));
  std::set<Holding> now;
  std::map<Holding, uint32_t> pins;
  for (const GpuCheckpointInfo& c : rig.runtime->ListGpuCheckpoints()) {
    now.insert({c.key, c.generation});
    pins[{c.key, c.generation}] = c.pins;
  }
  for (const Holding& h : m.resident) {
    if (now.count(h) == 0) m.evicted.insert(h);
  }
  m.resident = now;
  // Each open export holds its checkpoint; no other pin is left (the
  // publications drained and restores are over).
  std::map<Holding, uint32_t> expected;
  for (const auto& [id, h] : m.open) {
    ASSERT_NE(rig.pooled->open_export(id), nullptr);
    ASSERT_EQ(m.evicted.count(h), 0u) << "a pinned checkpoint was evicted";
    ++expected[h];
  }
  for (const auto& [h, n] : pins) {
    const uint32_t want = expected.count(h) != 0 ? expected[h] : 0;
    ASSERT_EQ(n, want) << h.first.ToFileStem();
  }
  const RuntimeStats& s = rig.runtime->stats();
  ASSERT_EQ(rig.runtime->export_pins(), m.open.size());
  ASSERT_EQ(s.exports_pinned, s.exports_ended + rig.runtime->export_pins());
  const pool::ExportLedgerCounts& ledger = rig.pooled->pool_stats().exports;
  ASSERT_EQ(ledger.pinned + ledger.rejected, s.exports_pinned);
  ASSERT_EQ(ledger.ended, s.exports_ended);
  ASSERT_EQ(ledger.rejected, m.rejected_requests);
}

void RunSeed(uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  ExportRig rig(96, /*eviction_notices_max=*/8);
  Model m;
  uint64_t state = seed;
  auto below = [&](uint64_t n) { return SplitMix64(state) % n; };
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<GpuCheckpointInfo> held = rig.runtime->ListGpuCheckpoints();
    const uint64_t action = below(10);
    if (action < 3 || held.empty()) {
      // A new conversation of 1..10 pages; the first sets the next step to 10.
      const uint64_t tokens = step == 0 ? 640 : 64 * (1 + below(10));
      ASSERT_TRUE(rig.runtime->Turn(rig.runtime->NewConversation(), tokens).ok());
      ASSERT_TRUE(rig.runtime->WaitForStores().ok());
    } else if (action < 6) {
      const GpuCheckpointInfo& c = held[below(held.size())];
      const uint64_t variant = below(4);
      const uint64_t start = below(c.chain_pages + 1);
      if (variant == 0) {  // another generation
        EXPECT_EQ(rig.pooled->open_export(rig.Request(c.key, c.generation + 7, start)), nullptr);
      } else if (variant == 1) {  // past the chain
        EXPECT_EQ(rig.pooled->open_export(rig.Request(c, c.chain_pages + 1 + below(3))), nullptr);
      } else if (variant == 2) {  // too large for its staging: pinned, handed back
        const uint64_t pinned_before = rig.runtime->stats().exports_pinned;
        const ExportId id = rig.Request(c, start, /*staging_bytes=*/1);
        EXPECT_EQ(rig.pooled->open_export(id), nullptr);
        if (rig.runtime->stats().exports_pinned != pinned_before) ++m.rejected_requests;
      } else {  // a good request; refused only for headroom
        const uint64_t refused_before = rig.Refused(ExportRefusal::kNoHeadroom);
        const ExportId id = rig.Request(c, start);
        if (rig.pooled->open_export(id) != nullptr) {
          m.open.emplace(id, Holding{c.key, c.generation});
        } else {
          EXPECT_EQ(rig.Refused(ExportRefusal::kNoHeadroom), refused_before + 1);
        }
      }
    } else if (action < 7 && !m.evicted.empty()) {  // a stale checkpoint
      auto it = m.evicted.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(below(m.evicted.size())));
      EXPECT_EQ(rig.pooled->open_export(rig.Request(it->first, it->second, 0)), nullptr);
    } else if (action < 9 && !m.open.empty()) {  // the relay's copies drained
      auto it = m.open.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(below(m.open.size())));
      ASSERT_TRUE(rig.pooled->FinishExport(it->first).ok());
      m.finished.insert(it->first);
      m.open.erase(it);
    } else if (action < 9 && !m.finished.empty()) {  // a second end
      EXPECT_EQ(rig.pooled->FinishExport(*m.finished.begin()).code(), StatusCode::kNotFound);
    } else {
      rig.runtime->EvictGpu();
    }
    rig.runtime->PollOnce();  // ends reported now are handled here
    CheckInvariants(rig, m, static_cast<uint64_t>(step));
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(rig.runtime->stats().exports_pinned, 0u);
  EXPECT_GT(rig.runtime->stats().exports_ended, 0u);
  EXPECT_GT(rig.runtime->stats().gpu_evictions, 0u);
  EXPECT_GT(rig.pooled->pool_stats().eviction_notices, 0u);
}

TEST(SyntheticRuntimeExportsRandomTest, PinsAndReleasesBalance) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    RunSeed(seed);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace strata::testing
