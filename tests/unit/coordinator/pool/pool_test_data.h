// Test data shared by the pool's unit tests: token runs, keys and byte
// patterns, and a wait for the manager's published rejection counts.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_server.h"
#include "store/base/prefix_history.h"

namespace strata::pool::testing {

// A fresh directory /tmp/PREFIX-XXXXXX for one test; empty when none could
// be made.
inline std::string MakeTestDir(const std::string& prefix) {
  std::string path = "/tmp/" + prefix + "-XXXXXX";
  return ::mkdtemp(path.data()) != nullptr ? path : std::string();
}

// The catalog tests' scope of pool "test-pool" (another tag: another layout).
inline PoolScope CatalogScope(uint8_t layout_tag) {
  PoolScope s;
  s.pool_name = "test-pool";
  s.layout[0] = layout_tag;
  s.rank_plane_bytes = {{1024, 2048}};
  return s;
}

// `count` consecutive tokens from `seed`.
inline std::vector<Token> Tokens(uint32_t count, uint32_t seed) {
  std::vector<Token> t(count);
  std::iota(t.begin(), t.end(), seed);
  return t;
}

// A client of the manager at `socket_path` as instance `gpu`, in the scope
// of layout `layout_tag` (another tag: another scope).
inline PoolClientOptions ClientOptions(const std::string& socket_path, const std::string& gpu,
                                       uint8_t layout_tag = 1) {
  PoolClientOptions o;
  o.socket_path = socket_path;
  o.hello.instance_sources = {gpu};
  o.hello.model_identity[0] = 9;
  o.hello.layout[0] = layout_tag;
  o.hello.rank_plane_bytes = {{1024, 4096, 4096}};
  o.hello.page_tokens = 64;
  return o;
}

// A key ending `consumed` tokens in, its digest told apart by that count.
inline PrefixKey Key(uint64_t consumed) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = static_cast<uint8_t>(consumed);
  return k;
}

// `bytes` bytes of a pattern that differs per `seed`.
inline std::vector<std::byte> Pattern(uint64_t bytes, uint8_t seed) {
  std::vector<std::byte> b(bytes);
  for (uint64_t i = 0; i < bytes; ++i) b[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return b;
}

// strata_pool_hellos_rejected_total{reason} as the manager publishes it
// (after the sweep that counted it), once it reaches `n` or after 10 s.
inline uint64_t RejectionsWithin(const PoolServer& server, const std::string& reason, uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const PoolManagerStats s = server.Stats();
    const auto it = s.traffic.hellos_rejected.find(reason);
    const uint64_t got = it == s.traffic.hellos_rejected.end() ? 0 : it->second;
    if (got >= n || std::chrono::steady_clock::now() > deadline) return got;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace strata::pool::testing
