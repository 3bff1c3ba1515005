// The pool simulation in the test suite: a bounded sweep of seeds (the long
// runs are `strata_pool_sim --seeds N`), determinism, and proof that the
// invariants catch each planted bug and that a failing seed replays.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>

#include "tests/sim/pool/pool_sim.h"

namespace strata::pool::sim {
namespace {

// Seeds per sweep block; STRATA_POOL_SIM_SEEDS overrides (per block).
uint64_t SeedsPerBlock() {
  const char* env = std::getenv("STRATA_POOL_SIM_SEEDS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 500;
}

class PoolSimulationSweep : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolSimulationSweep, EveryInvariantHoldsForEverySeed) {
  const uint64_t n = SeedsPerBlock();
  const uint64_t first = 1 + GetParam() * 100000;
  PoolSimCounts total;
  for (uint64_t seed = first; seed < first + n; ++seed) {
    PoolSimOptions options;
    options.seed = seed;
    const PoolSimReport r = RunPoolSimulation(options);
    total.Add(r.counts);
    if (!r.violation.ok()) {
      std::string tail;
      for (const std::string& line : r.trace_tail) tail += "  " + line + "\n";
      FAIL() << r.violation.message() << "\nreplay: strata_pool_sim --seed " << seed << "\n"
             << tail;
    }
  }
  // The sweep must have exercised what it claims to check.
  EXPECT_EQ(total.seeds, n);
  EXPECT_GT(total.restores_ok, n);
  EXPECT_GT(total.restores_refused, 0u);
  EXPECT_GT(total.puts_refused, 0u);
  EXPECT_GT(total.claims_failed, 0u);
  EXPECT_GT(total.instance_crashes, 0u);
  EXPECT_GT(total.manager_restarts, 0u);
  EXPECT_GT(total.evictions, 0u);
  EXPECT_GT(total.lookups_waited, 0u);
  EXPECT_GT(total.lookups_local, 0u);
  EXPECT_GT(total.late_retries, 0u);
  EXPECT_GT(total.tickets_failed, 0u);
  EXPECT_GT(total.holdings, 0u);
  EXPECT_GT(total.exports_started, 0u);
  EXPECT_GT(total.exports_relayed, 0u);
  EXPECT_GT(total.exports_refused, 0u);
  EXPECT_GT(total.exports_failed, 0u);
  EXPECT_GT(total.notices_lost, 0u);
  EXPECT_GT(total.exports_expired, 0u);
  std::printf("%llu seeds: %llu restores, %llu refused, %llu claims failed, %llu puts refused\n",
              static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(total.restores_ok),
              static_cast<unsigned long long>(total.restores_refused),
              static_cast<unsigned long long>(total.claims_failed),
              static_cast<unsigned long long>(total.puts_refused));
}

INSTANTIATE_TEST_SUITE_P(Blocks, PoolSimulationSweep, ::testing::Values(0, 1));

TEST(PoolSimulationTest, TheSameSeedRunsTheSameWay) {
  for (uint64_t seed : {7u, 1234u}) {
    PoolSimOptions options;
    options.seed = seed;
    const PoolSimReport a = RunPoolSimulation(options);
    const PoolSimReport b = RunPoolSimulation(options);
    EXPECT_EQ(a.trace_tail, b.trace_tail) << "seed " << seed;
    EXPECT_EQ(a.counts.steps, b.counts.steps);
    EXPECT_EQ(a.counts.restores_ok, b.counts.restores_ok);
    EXPECT_EQ(a.counts.puts_committed, b.counts.puts_committed);
  }
}

struct PlantedCase {
  PoolPlantedBug bug;
  const char* name;      // the ctest name's suffix
  const char* expected;  // a phrase of the violation the bug must cause
};
// gtest prints parameters in ctest names: the bug's name, not the bytes.
void PrintTo(const PlantedCase& c, std::ostream* os) { *os << PoolPlantedBugName(c.bug); }

class PoolSimulationPlanted : public ::testing::TestWithParam<PlantedCase> {};

// Each planted bug breaks the invariant it targets in most seeds.
TEST_P(PoolSimulationPlanted, TheInvariantsCatchIt) {
  uint64_t caught = 0;
  std::string first;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PoolSimOptions options;
    options.seed = seed;
    options.planted_bug = GetParam().bug;
    const PoolSimReport r = RunPoolSimulation(options);
    if (r.violation.ok()) continue;
    ++caught;
    if (first.empty()) first = r.violation.message();
  }
  EXPECT_GE(caught, 10u) << PoolPlantedBugName(GetParam().bug) << " went unnoticed in most seeds";
  EXPECT_NE(first.find("seed "), std::string::npos) << first;
  EXPECT_NE(first.find(GetParam().expected), std::string::npos) << first;
}

INSTANTIATE_TEST_SUITE_P(
    Bugs, PoolSimulationPlanted,
    ::testing::Values(
        PlantedCase{PoolPlantedBug::kReleaseBeforeCopy, "ReleaseBeforeCopy", "copy of claim"},
        PlantedCase{PoolPlantedBug::kSkipChecksum, "SkipChecksum",
                    "with bytes other than those put"},
        PlantedCase{PoolPlantedBug::kUsePendingTicket, "UsePendingTicket",
                    "pool candidates of a pending ticket"},
        PlantedCase{PoolPlantedBug::kEvictPinned, "EvictPinned", "under an export copy"}),
    [](const ::testing::TestParamInfo<PlantedCase>& info) { return std::string(info.param.name); });

// A failing seed prints itself and the command that replays it, and the
// replay fails the same way.
TEST(PoolSimulationTest, AFailingSeedReplaysFromItsCommand) {
  auto run = [](const std::string& args, int& status) {
    const std::string command = std::string(STRATA_POOL_SIM_BINARY) + " " + args + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::string out;
    std::array<char, 4096> buf{};
    while (pipe && fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
    status = pclose(pipe.release());
    return out;
  };
  int status = 0;
  const std::string sweep = run("--planted-bug skip-checksum --first-seed 1 --seeds 10", status);
  EXPECT_NE(status, 0) << sweep;
  const std::string marker = "replay: strata_pool_sim --seed ";
  const size_t at = sweep.find(marker);
  ASSERT_NE(at, std::string::npos) << sweep;
  const uint64_t seed = std::strtoull(sweep.c_str() + at + marker.size(), nullptr, 10);
  const size_t failed_at = sweep.find("FAILED ");
  const std::string failed_line = sweep.substr(failed_at, sweep.find('\n', failed_at) - failed_at);

  const std::string replay =
      run("--planted-bug skip-checksum --seed " + std::to_string(seed), status);
  EXPECT_NE(status, 0) << replay;
  EXPECT_NE(replay.find(failed_line), std::string::npos)
      << "the replay of seed " << seed << " did not fail the same way:\n"
      << failed_line << "\n---\n"
      << replay.substr(0, 4000);
  EXPECT_NE(replay.find("VIOLATION"), std::string::npos) << "the replay printed no trace";
}

}  // namespace
}  // namespace strata::pool::sim
