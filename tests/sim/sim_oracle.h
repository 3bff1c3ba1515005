// The join agreement's intersection rule (coordinator/agreement.h), written
// again from its statement, independently of Agree(), for the simulation to
// check Agree() against: a record is kept when every rank holds it with the
// same header digest and its parent is kept; a kept record keeps its row
// only when every rank holds the row.
#pragma once

#include <set>
#include <vector>

#include "store/base/prefix_key.h"
#include "tests/sim/sim_disk.h"

namespace strata::sim {

struct ExpectedAgreement {
  std::set<PrefixKey> kept;
  std::vector<std::set<PrefixKey>> deletes;    // by rank
  std::vector<std::set<PrefixKey>> truncates;  // by rank
};

// `ranks[r]` is rank r's files.
ExpectedAgreement IntersectionRule(const std::vector<const SimFiles*>& ranks);

}  // namespace strata::sim
