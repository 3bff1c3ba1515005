// SimRandom: the simulation's only source of randomness, a splitmix64
// stream (store/base/splitmix.h), so a seed replays the same run on every
// machine.
#pragma once

#include "store/base/splitmix.h"

namespace strata::sim {

using SimRandom = SplitMixRandom;

}  // namespace strata::sim
