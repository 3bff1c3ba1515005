// SessionGrants: what the data connections of the manager's data-channel
// sessions may touch (docs/pool.md, "The data channel"): each session's open
// puts (their slots and record bytes) and held claims (their records), as
// its control connection's answers granted them. The manager's thread notes
// every exchange of such a session (Note) and ends a session's grants when it
// ends or is replaced; data connections' threads resolve their windows here.
//
// A window is written into the arena under this table's lock, so once
// EndSession returned no write of that session lands (its slots may then be
// reused). Reads are resolved under the lock and copied out after: a slot
// reused meanwhile fails the claim's checksum, as it would for an instance
// reading the mapped arena.
//
// Thread: any (one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_messages.h"
#include "store/base/mutex.h"
#include "store/base/status.h"

namespace strata::pool {

// Where window [offset, offset + bytes) of a record laid across `slots` of
// `slot_bytes` lies: one slot and the offset in it. kInvalidArgument when the
// window is empty, passes the record's end, or crosses a slot's end. Pure.
struct WindowPlace {
  SlotId slot;
  uint64_t offset_in_slot = 0;
};
Result<WindowPlace> PlaceWindow(std::span<const SlotId> slots, uint64_t slot_bytes,
                                uint64_t record_bytes, uint64_t offset, uint64_t bytes);

class SessionGrants {
 public:
  explicit SessionGrants(const Arena& arena) : arena_(arena) {}

  // Starts tracking `session` (a data-channel session); until then, and
  // after EndSession, every window of it is refused.
  void OpenSession(SessionId session);
  // Records what answer `answer` to `request` granted or ended (a put's
  // grant, commit or abort; a claim's grant or release) for a tracked session.
  void Note(SessionId session, const PoolMessage& request, const PoolMessage& answer);
  // Forgets the session: no window of it is written after this returns.
  void EndSession(SessionId session);
  // Forgets every open put for which `writable` says false (the catalog's
  // PutWritable: a put whose record went with its parent): no window of it
  // is written after this returns. The manager's thread calls it after every
  // catalog change, before it can grant the freed slots again.
  void DropUnwritable(const std::function<bool(SessionId, PutId)>& writable);

  // Writes `bytes` as window `w` of one of the session's open puts.
  // kNotFound: no such open put (or the session ended); kInvalidArgument:
  // the window lies outside the grant (PlaceWindow) or its size is not w.bytes.
  Status Write(SessionId session, const PoolSlotWrite& w, std::span<const std::byte> bytes);
  // The arena's bytes of window `r` of one of the session's held claims.
  // kNotFound / kInvalidArgument as for Write (a record index out of range).
  Result<std::span<const std::byte>> Read(SessionId session, const PoolSlotRead& r) const;

  size_t sessions() const;

 private:
  struct OpenPut {
    std::vector<SlotId> slots;
    uint64_t bytes = 0;
  };
  struct Grants {
    std::map<uint64_t, OpenPut> puts;                       // by PutId
    std::map<uint64_t, std::vector<ClaimedRecord>> claims;  // by ClaimId
  };

  const Arena& arena_;
  mutable Mutex mu_;
  std::map<uint64_t, Grants> sessions_ GUARDED_BY(mu_);  // by SessionId
};

}  // namespace strata::pool
