// strata_sim: runs the seeded simulation (simulation.h) over a range of
// seeds, or replays one seed with its event trace. Exits 1 when any seed
// breaks an invariant, naming the seed and the command that replays it.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "tests/sim/simulation.h"

namespace {

using Clock = std::chrono::steady_clock;

void PrintSummary(const strata::sim::SimCounts& c, double seconds, uint64_t failures) {
  std::printf(
      "strata_sim: %llu seeds, %llu failed, %.1f s\n"
      "  steps %llu, jobs %llu submitted (%llu ok, %llu failed, %llu refused busy), frames %llu\n"
      "  transport stops %llu, restarts %llu, records checked identical %llu\n"
      "  faults %llu: link resets %llu, rank kills %llu, half-open links %llu, stalled readers "
      "%llu, delay spikes %llu, disk full %llu, EIO %llu, damaged records %llu, hostile messages "
      "%llu\n",
      static_cast<unsigned long long>(c.seeds), static_cast<unsigned long long>(failures), seconds,
      static_cast<unsigned long long>(c.steps), static_cast<unsigned long long>(c.jobs_submitted),
      static_cast<unsigned long long>(c.jobs_ok), static_cast<unsigned long long>(c.jobs_failed),
      static_cast<unsigned long long>(c.submits_refused), static_cast<unsigned long long>(c.frames),
      static_cast<unsigned long long>(c.stops), static_cast<unsigned long long>(c.restarts),
      static_cast<unsigned long long>(c.records_checked),
      static_cast<unsigned long long>(c.faults()), static_cast<unsigned long long>(c.link_resets),
      static_cast<unsigned long long>(c.rank_kills),
      static_cast<unsigned long long>(c.half_open_links), static_cast<unsigned long long>(c.stalls),
      static_cast<unsigned long long>(c.delay_spikes), static_cast<unsigned long long>(c.disk_full),
      static_cast<unsigned long long>(c.io_errors),
      static_cast<unsigned long long>(c.damaged_records),
      static_cast<unsigned long long>(c.hostile_messages));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Seeded simulation of rank zero's coordinator with its peer ranks over a simulated "
      "network and disks; checks the invariants of docs/reliability.md after every step."};
  uint64_t first = 1;
  uint64_t seeds = 1000;
  std::optional<uint64_t> replay;
  double time_limit = 0;
  strata::sim::SimOptions options;
  bool planted = false;
  app.add_option("--first-seed", first, "First seed of the range")->capture_default_str();
  app.add_option("--seeds", seeds, "How many seeds to run")->capture_default_str();
  app.add_option("--seed", replay, "Replay this one seed, printing its event trace");
  app.add_option("--sessions", options.sessions, "Sessions per seed (each ends in a restart)")
      ->capture_default_str();
  app.add_option("--steps", options.steps_per_session, "Steps per session")->capture_default_str();
  app.add_option("--time-limit", time_limit,
                 "Stop starting new seeds after this many seconds (0: no limit)");
  app.add_flag("--trace", options.trace, "Print every event of every seed");
  app.add_flag("--planted-bug", planted,
               "Peers run serving rules that answer jobs before their disk finished them "
               "(shows the checks catch it)");
  CLI11_PARSE(app, argc, argv);
  if (planted) options.planted_bug = strata::sim::PlantedBug::kAnswerBeforeFinished;
  spdlog::set_level(spdlog::level::off);  // the transport's own logs; the trace says what happened
  if (replay) {
    first = *replay;
    seeds = 1;
    options.trace = true;
  }

  strata::sim::SimCounts total;
  uint64_t failures = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress = start;
  for (uint64_t i = 0; i < seeds; ++i) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (time_limit > 0 && elapsed >= time_limit) {
      std::printf("strata_sim: time limit reached after %llu seeds\n",
                  static_cast<unsigned long long>(i));
      break;
    }
    options.seed = first + i;
    const strata::sim::SimReport r = strata::sim::RunSimulation(options);
    total.Add(r.counts);
    if (!r.violation.ok()) {
      ++failures;
      std::printf("FAILED %s\n  replay: strata_sim --seed %llu%s\n", r.violation.message().c_str(),
                  static_cast<unsigned long long>(options.seed), planted ? " --planted-bug" : "");
      if (!options.trace) {
        for (const std::string& line : r.trace_tail) std::printf("    %s\n", line.c_str());
      }
    }
    if (Clock::now() - last_progress > std::chrono::seconds(10)) {
      last_progress = Clock::now();
      std::printf("strata_sim: %llu/%llu seeds, %llu failed\n",
                  static_cast<unsigned long long>(i + 1), static_cast<unsigned long long>(seeds),
                  static_cast<unsigned long long>(failures));
      std::fflush(stdout);
    }
  }
  PrintSummary(total, std::chrono::duration<double>(Clock::now() - start).count(), failures);
  return failures == 0 ? 0 : 1;
}
