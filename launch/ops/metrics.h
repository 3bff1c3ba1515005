// Prometheus text exposition (format 0.0.4) of an OpsSnapshot: every
// StoreStats field, job latency histograms and per-peer link state. Names
// start with `strata_`; counters end in `_total`; per-tier fields carry
// tier="memory|disk". docs/operations.md lists every metric.
#pragma once

#include <string>

#include "launch/ops/ops_snapshot.h"

namespace strata {

// The content type /metrics answers with.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Pure: the same snapshot and health render to the same text. `health` is
// what /healthz answers at this scrape (EvaluateHealth), exported as
// strata_healthy so alerts can see a failing /healthz.
std::string RenderMetrics(const OpsSnapshot& snapshot, const Health& health);

// "0.00005", "2.5", "10": microseconds as decimal seconds, exact.
std::string MicrosAsSeconds(uint64_t micros);

}  // namespace strata
