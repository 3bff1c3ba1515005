// A named arena (seed 2.15, "Registrations survive a manager restart when the
// generation, paths and sizes are unchanged"; docs/pool.md): the arena's
// memory in a file that outlives the manager (on tmpfs such as /dev/shm, or
// hugetlbfs), with a stamp beside it (`PATH.generation`) naming its
// generation and sizes. A manager restarted on the same path with the same
// sizes reopens the same memory under the same generation, so an instance
// that registered its mapping (GPU planes) keeps it and goes on sharing; the
// restarted manager's index starts empty all the same (what the slots held
// is not trusted). Other sizes, or a missing or unreadable stamp, start a
// new generation over zeroed memory.
//
// The file must be a regular file of this user with no group or other
// access (it is created 0600); anything else is refused, never reused.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "coordinator/pool/arena.h"

namespace strata::pool {

// What the stamp file holds.
struct ArenaStamp {
  uint64_t generation = 0;
  uint64_t slot_bytes = 0;
  uint32_t slot_count = 0;
  friend bool operator==(const ArenaStamp&, const ArenaStamp&) = default;
};

// One line: "strata-pool-arena 1 <generation, 16 hex> <slot bytes> <slot count>\n".
std::string FormatArenaStamp(const ArenaStamp& stamp);
// nullopt for anything but exactly that line (a torn or foreign stamp).
std::optional<ArenaStamp> ParseArenaStamp(std::string_view text);

struct NamedArena {
  std::unique_ptr<Arena> arena;
  uint64_t generation = 0;
  bool reopened = false;  // the same memory and generation as the last manager's
};

// Opens (or creates) the arena at `path`. Reuses its generation when the
// stamp matches the sizes and the file holds exactly them; otherwise zeroes
// the file to the sizes and stamps it with `fresh_generation`.
// kFailedPrecondition naming the problem for a file that is not ours.
Result<NamedArena> OpenNamedArena(const std::string& path, uint64_t slot_bytes, uint32_t slot_count,
                                  uint64_t fresh_generation);

}  // namespace strata::pool
