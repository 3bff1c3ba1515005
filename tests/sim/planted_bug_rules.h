// Deliberately wrong serving rules, for the simulation's own tests: each
// derives from the production ServingRules (rank_agent/serving_rules.h) and
// breaks one rule, and the simulation's invariants must report a violation
// when its peers run it (SimulationTest.TheInvariantsCatchAPlantedBug,
// `strata_sim --planted-bug`). Production code never sees these classes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "rank_agent/serving_rules.h"

namespace strata::sim {

enum class PlantedBug : uint8_t {
  kNone,  // the production rules
  // A job is answered OK as soon as it is accepted (submitted or held),
  // before its disk finished it; its real completion is then not answered.
  // Rank zero reports jobs whose copies still run.
  kAnswerBeforeFinished,
};
std::string_view PlantedBugName(PlantedBug bug);

// The rules a simulated peer runs: ServingRules itself for kNone.
std::unique_ptr<ServingRules> MakeServingRules(PlantedBug bug, RankId rank, size_t held_jobs_max);

}  // namespace strata::sim
