#include "coordinator/pool/session_grants.h"

#include <cstring>
#include <string>

namespace strata::pool {

Result<WindowPlace> PlaceWindow(std::span<const SlotId> slots, uint64_t slot_bytes,
                                uint64_t record_bytes, uint64_t offset, uint64_t bytes) {
  if (bytes == 0 || slot_bytes == 0) return Status::InvalidArgument("an empty window");
  if (offset > record_bytes || bytes > record_bytes - offset) {
    return Status::InvalidArgument("window [" + std::to_string(offset) + ", +" +
                                   std::to_string(bytes) + ") passes the record's " +
                                   std::to_string(record_bytes) + " bytes");
  }
  const uint64_t index = offset / slot_bytes;
  const uint64_t in_slot = offset % slot_bytes;
  if (index >= slots.size() || bytes > slot_bytes - in_slot) {
    return Status::InvalidArgument("window [" + std::to_string(offset) + ", +" +
                                   std::to_string(bytes) + ") crosses a slot of " +
                                   std::to_string(slot_bytes) + " bytes or lies past the grant's " +
                                   std::to_string(slots.size()) + " slots");
  }
  return WindowPlace{.slot = slots[index], .offset_in_slot = in_slot};
}

void SessionGrants::OpenSession(SessionId session) {
  MutexLock lock(mu_);
  sessions_[session.value];
}

void SessionGrants::EndSession(SessionId session) {
  MutexLock lock(mu_);
  sessions_.erase(session.value);
}

void SessionGrants::DropUnwritable(const std::function<bool(SessionId, PutId)>& writable) {
  MutexLock lock(mu_);
  for (auto& entry : sessions_) {
    const SessionId session(entry.first);
    std::erase_if(entry.second.puts,
                  [&](const auto& p) { return !writable(session, PutId(p.first)); });
  }
}

size_t SessionGrants::sessions() const {
  MutexLock lock(mu_);
  return sessions_.size();
}

void SessionGrants::Note(SessionId session, const PoolMessage& request, const PoolMessage& answer) {
  MutexLock lock(mu_);
  auto it = sessions_.find(session.value);
  if (it == sessions_.end()) return;
  Grants& g = it->second;
  if (const auto* put = std::get_if<PoolPut>(&request)) {
    const auto* a = std::get_if<PoolPutAnswer>(&answer);
    if (a != nullptr && a->status.ok()) {
      g.puts[a->put.value] = OpenPut{.slots = a->slots, .bytes = put->put.bytes};
    }
  } else if (const auto* commit = std::get_if<PoolCommit>(&request)) {
    g.puts.erase(commit->put.value);
  } else if (const auto* abort = std::get_if<PoolAbort>(&request)) {
    g.puts.erase(abort->put.value);
  } else if (std::holds_alternative<PoolClaim>(request)) {
    const auto* a = std::get_if<PoolClaimAnswer>(&answer);
    if (a != nullptr && a->status.ok()) g.claims[a->claim.value] = a->records;
  } else if (const auto* release = std::get_if<PoolRelease>(&request)) {
    g.claims.erase(release->claim.value);
  }
}

Status SessionGrants::Write(SessionId session, const PoolSlotWrite& w,
                            std::span<const std::byte> bytes) {
  if (bytes.size() != w.bytes) return Status::InvalidArgument("a window of the wrong size");
  MutexLock lock(mu_);
  auto s = sessions_.find(session.value);
  if (s == sessions_.end()) return Status::NotFound("the session ended");
  auto p = s->second.puts.find(w.put.value);
  if (p == s->second.puts.end()) {
    return Status::NotFound("put " + std::to_string(w.put.value) + " is not open");
  }
  STRATA_ASSIGN_OR_RETURN(const WindowPlace place, PlaceWindow(p->second.slots, arena_.slot_bytes(),
                                                               p->second.bytes, w.offset, w.bytes));
  if (place.slot.value >= arena_.slot_count())
    return Status::InvalidArgument("a slot past the arena");
  std::memcpy(arena_.Slot(place.slot).data() + place.offset_in_slot, bytes.data(), bytes.size());
  return Status::Ok();
}

Result<std::span<const std::byte>> SessionGrants::Read(SessionId session,
                                                       const PoolSlotRead& r) const {
  MutexLock lock(mu_);
  auto s = sessions_.find(session.value);
  if (s == sessions_.end()) return Status::NotFound("the session ended");
  auto c = s->second.claims.find(r.claim.value);
  if (c == s->second.claims.end()) {
    return Status::NotFound("claim " + std::to_string(r.claim.value) + " is not held");
  }
  if (r.record >= c->second.size()) {
    return Status::InvalidArgument("record " + std::to_string(r.record) + " of a claim of " +
                                   std::to_string(c->second.size()));
  }
  const ClaimedRecord& record = c->second[r.record];
  STRATA_ASSIGN_OR_RETURN(const WindowPlace place, PlaceWindow(record.slots, arena_.slot_bytes(),
                                                               record.bytes, r.offset, r.bytes));
  if (place.slot.value >= arena_.slot_count())
    return Status::InvalidArgument("a slot past the arena");
  return std::span<const std::byte>(arena_.Slot(place.slot).subspan(place.offset_in_slot, r.bytes));
}

}  // namespace strata::pool
