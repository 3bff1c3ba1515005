#include "coordinator/pool/slot_table.h"

#include <string>

namespace strata::pool {

SlotTable::SlotTable(uint32_t slot_count) : slots_(slot_count) {
  free_.reserve(slot_count);
  for (uint32_t i = slot_count; i > 0; --i) free_.push_back(SlotId(i - 1));
}

std::optional<std::vector<SlotId>> SlotTable::Take(uint32_t count) {
  if (count > free_.size()) return std::nullopt;
  std::vector<SlotId> taken(free_.end() - count, free_.end());
  free_.resize(free_.size() - count);
  for (SlotId s : taken) slots_[s.value].state = State::kOwned;
  return taken;
}

Status SlotTable::CheckRange(SlotId slot) const {
  if (slot.value >= slots_.size()) {
    return Status::InvalidArgument("slot " + std::to_string(slot.value) + " out of range");
  }
  return Status::Ok();
}

Status SlotTable::Hold(SlotId slot) {
  if (Status s = CheckRange(slot); !s.ok()) return s;
  Slot& sl = slots_[slot.value];
  if (sl.state != State::kOwned) {
    return Status::FailedPrecondition("slot " + std::to_string(slot.value) + " is not owned");
  }
  ++sl.holds;
  return Status::Ok();
}

Status SlotTable::Unhold(SlotId slot) {
  if (Status s = CheckRange(slot); !s.ok()) return s;
  Slot& sl = slots_[slot.value];
  if (sl.holds == 0) {
    return Status::FailedPrecondition("slot " + std::to_string(slot.value) + " is not held");
  }
  if (--sl.holds == 0 && sl.state == State::kRetired) {
    --retired_held_;
    sl.state = State::kFree;
    free_.push_back(slot);
  }
  return Status::Ok();
}

Status SlotTable::Retire(std::span<const SlotId> slots) {
  for (SlotId slot : slots) {
    if (Status s = CheckRange(slot); !s.ok()) return s;
    if (slots_[slot.value].state != State::kOwned) {
      return Status::FailedPrecondition("slot " + std::to_string(slot.value) +
                                        " retired but not owned");
    }
  }
  for (SlotId slot : slots) {
    Slot& sl = slots_[slot.value];
    if (sl.holds > 0) {
      sl.state = State::kRetired;
      ++retired_held_;
    } else {
      sl.state = State::kFree;
      free_.push_back(slot);
    }
  }
  return Status::Ok();
}

bool SlotTable::IsHeld(SlotId slot) const {
  return slot.value < slots_.size() && slots_[slot.value].holds > 0;
}

bool SlotTable::IsFree(SlotId slot) const {
  return slot.value < slots_.size() && slots_[slot.value].state == State::kFree;
}

Status SlotTable::CheckInvariants() const {
  std::vector<uint8_t> listed(slots_.size(), 0);
  for (SlotId s : free_) {
    if (s.value >= slots_.size() || listed[s.value]++ != 0) {
      return Status::Internal("free list names slot " + std::to_string(s.value) + " badly");
    }
  }
  uint32_t retired_held = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& sl = slots_[i];
    if ((sl.state == State::kFree) != (listed[i] != 0)) {
      return Status::Internal("slot " + std::to_string(i) + " free state and list disagree");
    }
    if (sl.state == State::kFree && sl.holds != 0) {
      return Status::Internal("free slot " + std::to_string(i) + " is held");
    }
    if (sl.state == State::kRetired) {
      if (sl.holds == 0) return Status::Internal("retired slot " + std::to_string(i) + " unheld");
      ++retired_held;
    }
  }
  if (retired_held != retired_held_) return Status::Internal("retired-held count is wrong");
  return Status::Ok();
}

}  // namespace strata::pool
