// Applying the join agreement (coordinator/agreement.h) to one rank's record
// directory: unlink the records it drops, truncate the rows it drops, then
// rescan and check that the directory holds exactly what was agreed. Runs on
// the rank's owner thread before it serves any job (its disk thread idle).
#pragma once

#include <vector>

#include "store/record/record_file.h"
#include "store/tier/local_disk.h"
#include "wire/messages.h"

namespace strata {

// `verdicts` holds one entry per record of disk.scan(). Errors name the
// record: a verdict for a record this rank did not summarize, a summarized
// record without a verdict, an unlink or truncate that failed, or a rescan
// that disagrees with the verdicts.
Status ApplyAgreement(LocalDisk& disk, const std::vector<wire::AgreementEntry>& verdicts,
                      Durability durability);

}  // namespace strata
