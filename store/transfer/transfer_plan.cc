#include "store/transfer/transfer_plan.h"

namespace strata {

std::vector<TransferJob> PlanTransfers(TransferDirection direction,
                                       const std::vector<HostPageSource>& pages,
                                       const std::vector<PageId>& page_ids,
                                       const std::optional<HostRowSource>& row,
                                       std::optional<StateSlot> row_slot) {
  STRATA_ASSERT(pages.size() == page_ids.size(), "one host page per device page id");
  std::vector<TransferJob> jobs;
  for (size_t i = 0; i < pages.size(); ++i) {
    if (jobs.empty() || jobs.back().page_ids.size() == kMaxWindowPages ||
        jobs.back().replicated_pages != pages[i].replicated) {
      TransferJob j;
      j.direction = direction;
      j.replicated_pages = pages[i].replicated;
      jobs.push_back(std::move(j));
    }
    jobs.back().page_ids.push_back(page_ids[i]);
    jobs.back().page_records.push_back(pages[i].record);
  }
  if (row && row_slot) {
    if (jobs.empty()) {
      TransferJob j;
      j.direction = direction;
      jobs.push_back(std::move(j));
    }
    jobs.back().row_slot = row_slot;
    jobs.back().row_pieces = row->pieces;
    jobs.back().replicated_row = row->replicated;
  }
  return jobs;
}

}  // namespace strata
