// The record files of one rank's record directory, as the qualification
// compares them across ranks (qualification.h, RecordListings).
#pragma once

#include <string>
#include <vector>

#include "store/base/status.h"

namespace strata {

// "name size" of every *.ckpt file directly in `dir`, sorted.
Result<std::vector<std::string>> ListRecordFiles(const std::string& dir);

}  // namespace strata
