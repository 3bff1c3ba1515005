#include "store/base/record_job.h"

namespace strata {

std::string_view RecordJobKindName(RecordJobKind kind) {
  switch (kind) {
    case RecordJobKind::kStore: return "store";
    case RecordJobKind::kFetch: return "fetch";
    case RecordJobKind::kTruncate: return "truncate";
    case RecordJobKind::kUnlink: return "unlink";
  }
  return "unknown";
}

}  // namespace strata
