// strata_pool_sim: runs the pool simulation (pool_sim.h) over a range of
// seeds, or replays one seed with its event trace. Exits 1 when any seed
// breaks an invariant, naming the seed and the command that replays it.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "tests/sim/pool/pool_sim.h"

namespace {

using Clock = std::chrono::steady_clock;
using strata::pool::sim::PoolPlantedBug;

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

void PrintSummary(const strata::pool::sim::PoolSimCounts& c, double seconds, uint64_t failures) {
  std::printf(
      "strata_pool_sim: %llu seeds, %llu failed, %.1f s\n"
      "  steps %llu, puts %llu committed (%llu refused busy), claims %llu granted\n"
      "  restores %llu checked equal, %llu refused by their checksum, %llu claims failed by the "
      "manager\n"
      "  faults: instance crashes %llu, manager restarts %llu, damaged slots %llu; evictions "
      "%llu\n"
      "  lookups %llu: %llu waited inside the grace, %llu admitted without the answer, %llu late "
      "retries, %llu tickets failed with their connection\n",
      U(c.seeds), U(failures), seconds, U(c.steps), U(c.puts_committed), U(c.puts_refused),
      U(c.claims_granted), U(c.restores_ok), U(c.restores_refused), U(c.claims_failed),
      U(c.instance_crashes), U(c.manager_restarts), U(c.slots_damaged), U(c.evictions),
      U(c.lookups), U(c.lookups_waited), U(c.lookups_local), U(c.late_retries),
      U(c.tickets_failed));
  std::printf(
      "  exports: %llu holdings announced, %llu asked of a holder, %llu claims granted after "
      "the holder's commit, %llu refused (stale holdings; %llu eviction notices lost), %llu "
      "waiting claims failed (%llu exports past their deadline)\n",
      U(c.holdings), U(c.exports_started), U(c.exports_relayed), U(c.exports_refused),
      U(c.notices_lost), U(c.exports_failed), U(c.exports_expired));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Seeded simulation of the pool manager and two instances with crashes, restarts, refused "
      "puts, stalled claims and damaged slots; checks the invariants of docs/reliability.md "
      "after every step."};
  uint64_t first = 1;
  uint64_t seeds = 1000;
  std::optional<uint64_t> replay;
  std::string planted = "none";
  strata::pool::sim::PoolSimOptions options;
  app.add_option("--first-seed", first, "First seed of the range")->capture_default_str();
  app.add_option("--seeds", seeds, "How many seeds to run")->capture_default_str();
  app.add_option("--seed", replay, "Replay this one seed, printing its event trace");
  app.add_option("--steps", options.steps, "Steps per seed")->capture_default_str();
  app.add_flag("--trace", options.trace, "Print every event of every seed");
  app.add_option("--planted-bug", planted,
                 "Run deliberately wrong instance rules (shows the checks catch them)")
      ->check(CLI::IsMember(
          {"none", "release-before-copy", "skip-checksum", "use-pending-ticket", "evict-pinned"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  for (PoolPlantedBug bug : {PoolPlantedBug::kReleaseBeforeCopy, PoolPlantedBug::kSkipChecksum,
                             PoolPlantedBug::kUsePendingTicket, PoolPlantedBug::kEvictPinned}) {
    if (planted == strata::pool::sim::PoolPlantedBugName(bug)) options.planted_bug = bug;
  }
  if (replay) {
    first = *replay;
    seeds = 1;
    options.trace = true;
  }
  strata::pool::sim::PoolSimCounts total;
  uint64_t failures = 0;
  const Clock::time_point start = Clock::now();
  for (uint64_t i = 0; i < seeds; ++i) {
    options.seed = first + i;
    const strata::pool::sim::PoolSimReport r = strata::pool::sim::RunPoolSimulation(options);
    total.Add(r.counts);
    if (r.violation.ok()) continue;
    ++failures;
    std::printf("FAILED %s\n  replay: strata_pool_sim --seed %llu --planted-bug %s\n",
                r.violation.message().c_str(), U(options.seed), planted.c_str());
    if (!options.trace) {
      for (const std::string& line : r.trace_tail) std::printf("    %s\n", line.c_str());
    }
  }
  PrintSummary(total, std::chrono::duration<double>(Clock::now() - start).count(), failures);
  return failures == 0 ? 0 : 1;
}
