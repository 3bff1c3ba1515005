// A rank's scanned record as the scan summary it sends at join (seed 2.14,
// docs/wire.md): key, parent, the header's agreement digest, row presence and
// size. Pure.
#pragma once

#include "store/base/status.h"
#include "store/record/record_scan.h"
#include "wire/messages.h"

namespace strata {

Result<wire::ScanRecord> SummarizeRecord(const ScannedRecord& record);

}  // namespace strata
