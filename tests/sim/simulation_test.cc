// The seeded simulation in the test suite: a bounded sweep of seeds (the
// long runs are `strata_sim --seeds N`), determinism, and proof that the
// invariants catch a planted bug and that a failing seed replays.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tests/sim/simulation.h"

namespace strata::sim {
namespace {

// Seeds per sweep block; STRATA_SIM_SEEDS overrides (per block).
uint64_t SeedsPerBlock() {
  const char* env = std::getenv("STRATA_SIM_SEEDS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 500;
}

class SimulationSweep : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override { spdlog::set_level(spdlog::level::off); }
  void TearDown() override { spdlog::set_level(spdlog::level::info); }
};

TEST_P(SimulationSweep, EveryInvariantHoldsForEverySeed) {
  const uint64_t n = SeedsPerBlock();
  const uint64_t first = 1 + GetParam() * 100000;
  SimCounts total;
  for (uint64_t seed = first; seed < first + n; ++seed) {
    SimOptions options;
    options.seed = seed;
    const SimReport r = RunSimulation(options);
    total.Add(r.counts);
    if (!r.violation.ok()) {
      std::string tail;
      for (const std::string& line : r.trace_tail) tail += "  " + line + "\n";
      FAIL() << r.violation.message() << "\nreplay: strata_sim --seed " << seed << "\n" << tail;
    }
  }
  // The sweep must have exercised what it claims to check.
  EXPECT_EQ(total.seeds, n);
  EXPECT_GT(total.jobs_ok, n);
  EXPECT_GT(total.jobs_failed, 0u);
  EXPECT_GT(total.stops, 0u);
  EXPECT_GT(total.link_resets + total.rank_kills, 0u);
  EXPECT_GT(total.disk_full + total.io_errors, 0u);
  EXPECT_GT(total.records_checked, 0u);
  std::printf(
      "%llu seeds: %llu jobs, %llu stops, %llu faults, %llu records checked\n",
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(total.jobs_submitted),
      static_cast<unsigned long long>(total.stops), static_cast<unsigned long long>(total.faults()),
      static_cast<unsigned long long>(total.records_checked));
}

INSTANTIATE_TEST_SUITE_P(Blocks, SimulationSweep, ::testing::Values(0, 1, 2, 3));

TEST(SimulationTest, TheSameSeedRunsTheSameWay) {
  spdlog::set_level(spdlog::level::off);
  for (uint64_t seed : {7u, 1234u}) {
    SimOptions options;
    options.seed = seed;
    const SimReport a = RunSimulation(options);
    const SimReport b = RunSimulation(options);
    EXPECT_EQ(a.trace_tail, b.trace_tail) << "seed " << seed;
    EXPECT_EQ(a.counts.steps, b.counts.steps);
    EXPECT_EQ(a.counts.jobs_ok, b.counts.jobs_ok);
    EXPECT_EQ(a.counts.frames, b.counts.frames);
  }
  spdlog::set_level(spdlog::level::info);
}

// Peers whose serving rules answer a job before their disk finished it
// (planted_bug_rules.h): rank zero then reports jobs whose copies still run,
// which the invariants must catch.
TEST(SimulationTest, TheInvariantsCatchAPlantedBug) {
  spdlog::set_level(spdlog::level::off);
  uint64_t caught = 0;
  std::string first;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SimOptions options;
    options.seed = seed;
    options.planted_bug = PlantedBug::kAnswerBeforeFinished;
    const SimReport r = RunSimulation(options);
    if (!r.violation.ok()) {
      ++caught;
      if (first.empty()) first = r.violation.message();
    }
  }
  spdlog::set_level(spdlog::level::info);
  EXPECT_GE(caught, 10u) << "the planted bug went unnoticed in most seeds";
  EXPECT_NE(first.find("seed "), std::string::npos) << first;
}

// A failing seed prints itself and the command that replays it, and the
// replay fails the same way.
TEST(SimulationTest, AFailingSeedReplaysFromItsCommand) {
  auto run = [](const std::string& args, int& status) {
    const std::string command = std::string(STRATA_SIM_BINARY) + " " + args + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::string out;
    std::array<char, 4096> buf{};
    while (pipe && fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
    status = pclose(pipe.release());
    return out;
  };
  int status = 0;
  const std::string sweep = run("--planted-bug --first-seed 1 --seeds 5", status);
  EXPECT_NE(status, 0) << sweep;
  const size_t at = sweep.find("replay: strata_sim --seed ");
  ASSERT_NE(at, std::string::npos) << sweep;
  const uint64_t seed = std::strtoull(sweep.c_str() + at + 26, nullptr, 10);
  const std::string failed_line = sweep.substr(
      sweep.find("FAILED "), sweep.find('\n', sweep.find("FAILED ")) - sweep.find("FAILED "));

  const std::string replay = run("--planted-bug --seed " + std::to_string(seed), status);
  EXPECT_NE(status, 0) << replay;
  EXPECT_NE(replay.find(failed_line), std::string::npos)
      << "the replay of seed " << seed << " did not fail the same way:\n"
      << failed_line << "\n---\n"
      << replay.substr(0, 4000);
  EXPECT_NE(replay.find("VIOLATION"), std::string::npos) << "the replay printed no trace";
}

}  // namespace
}  // namespace strata::sim
