// The manager's answers to pool messages, without I/O: Hello checks and the
// session it opens, then one answer per request from the catalog. The server
// (pool_server.h) reads the frames and the clock and sends what this returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_messages.h"

namespace strata::pool {

// What the manager tells every instance about itself.
struct ManagerIdentity {
  std::string pool_name;    // --name: salts scopes and instance ids
  uint64_t generation = 0;  // the arena's; differs after every manager start
  uint64_t slot_bytes = 0;
  uint32_t slot_count = 0;
};

struct HelloAccepted {
  SessionId session;
  PoolHelloAccept accept;  // sent with the arena's fd
};

// Checks a Hello (protocol version, instance sources, page size, planes) and
// opens the instance's session; the reject's reason names the first problem.
std::variant<HelloAccepted, PoolHelloReject> AcceptHello(PoolCatalog& catalog,
                                                         const ManagerIdentity& manager,
                                                         const PoolHello& hello, uint64_t now_ms);

// The answer to one request of an open session; nullopt for a message that
// is not a request (a Hello again, an answer): the server closes the link.
std::optional<PoolMessage> AnswerRequest(PoolCatalog& catalog, SessionId session,
                                         const PoolMessage& request, uint64_t now_ms);

}  // namespace strata::pool
