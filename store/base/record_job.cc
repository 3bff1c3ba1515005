#include "store/base/record_job.h"

#include <string>

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

Status CheckDeviceRecordJob(const RecordJob& job, uint64_t page_tokens) {
  const uint64_t pt = page_tokens;
  if (job.kind == RecordJobKind::kStore) {
    const uint64_t tail = job.key.consumed / pt - (job.parent ? job.parent->consumed / pt : 0);
    if (job.tail_pages != tail || job.page_ids.size() != tail) {
      return Status::InvalidArgument("store of " + job.key.ToFileStem() + " names " +
                                     std::to_string(job.page_ids.size()) + " pages, its tail is " +
                                     std::to_string(tail));
    }
    if (job.replicated_pages || job.replicated_row) {
      return Status::InvalidArgument("a store from device planes writes the per-rank layout");
    }
  }
  if (job.kind == RecordJobKind::kFetch &&
      (job.first_page > job.tail_pages || job.page_ids.size() != job.tail_pages - job.first_page)) {
    return Status::InvalidArgument("fetch of " + job.key.ToFileStem() + " names " +
                                   std::to_string(job.page_ids.size()) + " destination pages for " +
                                   std::to_string(job.tail_pages - job.first_page));
  }
  return Status::Ok();
}

}  // namespace strata
