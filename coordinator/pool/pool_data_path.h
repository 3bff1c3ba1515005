// How an instance over TCP reaches the manager's slots (docs/pool.md, "The
// data channel"; --prefix-cache-pool-data). A Unix socket always passes the
// arena's fd.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::pool {

enum class PoolDataPath : uint8_t {
  kAuto,     // the arena's file when the manager is on this host, else the data channel
  kArena,    // the arena's file (the manager must be on this host)
  kChannel,  // the data channel, even on one host (what tests and benchmarks force)
};

// "auto", "arena", "tcp".
constexpr std::string_view PoolDataPathName(PoolDataPath path) {
  switch (path) {
    case PoolDataPath::kAuto: return "auto";
    case PoolDataPath::kArena: return "arena";
    case PoolDataPath::kChannel: return "tcp";
  }
  return "auto";
}

// The path `name` names; nullopt for anything else.
constexpr std::optional<PoolDataPath> ParsePoolDataPath(std::string_view name) {
  for (PoolDataPath p : {PoolDataPath::kAuto, PoolDataPath::kArena, PoolDataPath::kChannel}) {
    if (name == PoolDataPathName(p)) return p;
  }
  return std::nullopt;
}

}  // namespace strata::pool
