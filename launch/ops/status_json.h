// The /status document: rank, world size, health, peers with their link
// state, store stats and job latency summaries, as JSON (docs/operations.md).
#pragma once

#include <string>

#include "launch/ops/ops_snapshot.h"

namespace strata {

// Pure: `health` is the endpoint's verdict on `snapshot`. A null snapshot
// (nothing published yet) renders only `healthy` and `reason`.
std::string RenderStatusJson(const OpsSnapshot* snapshot, const Health& health);

}  // namespace strata
