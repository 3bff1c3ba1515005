// Splits a checkpoint's pages and row into TransferJobs: windows of at most
// kMaxWindowPages pages, split again wherever the host side's replicated flag
// changes (a chain can mix packed and per-rank records); the row rides with
// the last job. Pure logic.
#pragma once

#include <optional>
#include <vector>

#include "store/transfer/transfers.h"

namespace strata {

// The host side of one page: its page record (a slot, or one share inside a
// packed slot) and whether it holds one replicated share.
struct HostPageSource {
  uint8_t* record = nullptr;
  bool replicated = false;
};

struct HostRowSource {
  std::vector<HostPiece> pieces;
  bool replicated = false;
};

// Jobs moving `pages[i]` <-> device `page_ids[i]` and, if given, `row` <->
// device `row_slot`, in `direction`. Job ids are assigned by the caller.
// Requires pages.size() == page_ids.size().
std::vector<TransferJob> PlanTransfers(TransferDirection direction,
                                       const std::vector<HostPageSource>& pages,
                                       const std::vector<PageId>& page_ids,
                                       const std::optional<HostRowSource>& row,
                                       std::optional<StateSlot> row_slot);

}  // namespace strata
