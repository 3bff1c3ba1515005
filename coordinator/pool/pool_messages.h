// The pool channel's messages (wire/pool.capnp) as plain C++ values, with the
// limits the codec checks on receipt. No Cap'n Proto here (pool_codec.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_scope.h"
#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/nonce.h"
#include "store/base/prefix_history.h"
#include "store/base/status.h"

namespace strata::pool {

// 2: the commit carries the checksum (computed while the bytes are copied).
// 3: a lookup answer sizes its chain (base consumed, tail pages per record).
// 4: TCP control: Challenge, Hello.proof, HelloAccept.arenaPath.
// 5: the TCP data channel: Hello.dataChannel, HelloAccept's data token and
//    windows, DataHello / dataAccept, SlotWrite, SlotRead, SlotData.
// 6: exports: Announce (an instance's holdings), ExportAsk (the manager asks
//    a holder to copy one into a put of its own).
inline constexpr uint32_t kPoolProtocolVersion = 6;
inline constexpr size_t kPoolFrameBytesMax = size_t{32} << 20;
// The manager's cap on a connection's frames until its Hello is accepted:
// a Hello at its limits (64 sources of 4 KiB, 64 ranks of 1,024 planes) is
// under 1 MiB, and a stranger makes the manager allocate no more.
inline constexpr size_t kPoolHelloFrameBytesMax = size_t{1} << 20;
inline constexpr size_t kPoolTextBytesMax = 4096;
inline constexpr size_t kPoolSourcesMax = 64;  // GPU UUIDs of one instance
inline constexpr size_t kPoolRanksMax = 64;
inline constexpr size_t kPoolPlanesPerRankMax = 1024;
inline constexpr size_t kPoolTokensMax = size_t{4} << 20;
inline constexpr size_t kPoolChainMax = size_t{1} << 16;
inline constexpr size_t kPoolSlotsPerAnswerMax = size_t{1} << 20;
// The data channel's windows (seed 2.15): the most bytes one SlotWrite or
// SlotData carries, and how many a data connection may have outstanding.
inline constexpr uint64_t kPoolWindowBytesMax = uint64_t{4} << 20;
inline constexpr uint32_t kPoolWindowCreditsDefault = 16;
// Holdings one Announce carries (each list).
inline constexpr size_t kPoolHoldingsPerAnnounceMax = 4096;

// A session's transfer token: what its data connections name (secret: only
// the session's own control connection carried it).
using DataToken = std::array<uint8_t, 16>;

struct PoolHello {
  uint32_t protocol_version = kPoolProtocolVersion;
  std::vector<std::string> instance_sources;  // GPU UUIDs, or one configured id
  NamespaceIdentity model_identity{};
  LayoutFingerprint layout{};
  std::vector<std::vector<uint64_t>> rank_plane_bytes;
  uint32_t page_tokens = 0;
  // Over TCP, the job-secret proof over the Challenge (pool_hello_proof.h),
  // and the nonce the manager's own proof must cover.
  std::optional<HelloProof> proof;
  std::optional<Nonce> client_nonce;
  // Over TCP: records travel through the data channel (no arena mapped).
  bool data_channel = false;
};

// The first frame of a TCP connection, from the manager.
struct PoolChallenge {
  Nonce nonce{};
};

// Sent with the arena's fd on a Unix socket; over TCP it names the arena's
// file instead (a named arena: PoolServerOptions::arena_path).
struct PoolHelloAccept {
  uint32_t protocol_version = kPoolProtocolVersion;
  std::string pool_name;
  uint64_t generation = 0;
  ScopeId scope{};
  InstanceId instance{};
  uint64_t slot_bytes = 0;
  uint32_t slot_count = 0;
  std::string arena_path;           // over TCP only
  std::optional<HelloProof> proof;  // over TCP only: the manager's
  // When the Hello asked for the data channel: its token, window size and
  // credits (arena_path is then empty).
  std::optional<DataToken> data_token;
  uint64_t window_bytes = 0;
  uint32_t window_credits = 0;
};

struct PoolHelloReject {
  std::string reason;
};

struct PoolLookup {
  uint64_t request_id = 0;
  std::vector<Token> tokens;
  uint64_t resident_tokens = 0;
  uint64_t before = 0;
};

struct PoolLookupAnswer {
  uint64_t request_id = 0;
  Status status;
  std::vector<PrefixKey> chain;  // empty: no match
  uint64_t progress_epoch = 0;   // the manager's progress count (put_rules.h)
  // The consumed tokens of chain[0]'s parent (0: a root), and each chain
  // record's tail pages (one per key): what a restore of the chain moves
  // is sized from them before it is claimed (PooledHitOf).
  uint64_t base_consumed = 0;
  std::vector<uint32_t> tail_pages;
};

struct PoolPut {
  uint64_t request_id = 0;
  PutRequest put;
};

struct PoolPutAnswer {
  uint64_t request_id = 0;
  Status status;
  PutId put;
  std::vector<SlotId> slots;
  uint64_t progress_epoch = 0;  // the manager's progress count (put_rules.h)
};

struct PoolCommit {
  uint64_t request_id = 0;
  PutId put;
  uint64_t checksum = 0;  // XXH3-64 of the record's bytes as written into its slots
};

struct PoolAbort {
  uint64_t request_id = 0;
  PutId put;
};

struct PoolClaim {
  uint64_t request_id = 0;
  std::vector<PrefixKey> chain;
};

struct PoolClaimAnswer {
  uint64_t request_id = 0;
  Status status;
  ClaimId claim;
  uint64_t budget_ms = 0;
  std::vector<ClaimedRecord> records;
  uint64_t progress_epoch = 0;  // the manager's progress count (put_rules.h)
};

struct PoolRelease {
  uint64_t request_id = 0;
  ClaimId claim;
};

// The answer to commit, abort and release.
struct PoolDone {
  uint64_t request_id = 0;
  Status status;
  uint64_t progress_epoch = 0;  // the manager's progress count (put_rules.h)
};

// The data channel (pool.capnp): the first frame of a data connection.
struct PoolDataHello {
  InstanceId instance{};
  DataToken token{};
  HelloProof proof{};  // ProvePoolData (pool_hello_proof.h)
};

// The manager's answer to a DataHello.
struct PoolDataAccept {
  Status status;
};

// Bytes [offset, offset + bytes) of open put `put`'s record, inside one slot;
// the bytes follow the frame.
struct PoolSlotWrite {
  uint64_t request_id = 0;
  PutId put;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// Bytes [offset, offset + bytes) of record `record` of held claim `claim`,
// inside one slot.
struct PoolSlotRead {
  uint64_t request_id = 0;
  ClaimId claim;
  uint32_t record = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// The answer to a SlotRead: `bytes` follow the frame (0 unless OK).
struct PoolSlotData {
  uint64_t request_id = 0;
  Status status;
  uint64_t bytes = 0;
  uint64_t progress_epoch = 0;
};

// An instance's holdings changed (answered with PoolDone): `reset` first
// forgets every holding it announced before.
struct PoolAnnounce {
  uint64_t request_id = 0;
  bool reset = false;
  std::vector<Holding> held;
  std::vector<Holding> withdrawn;  // their buckets are not read
  ExportRecordSizes sizes{};       // what its exports move per page and for the row
};

// Unasked, manager to holder: copy the export into put `put`'s slots and
// commit it, or abort the put to refuse (ExportRequest, pool_catalog.h).
struct PoolExportAsk {
  ExportRequest ask;
};

using PoolMessage =
    std::variant<PoolHello, PoolHelloAccept, PoolHelloReject, PoolLookup, PoolLookupAnswer, PoolPut,
                 PoolPutAnswer, PoolCommit, PoolAbort, PoolClaim, PoolClaimAnswer, PoolRelease,
                 PoolDone, PoolChallenge, PoolDataHello, PoolDataAccept, PoolSlotWrite,
                 PoolSlotRead, PoolSlotData, PoolAnnounce, PoolExportAsk>;

// The request id a message carries (an answer's: the request it answers);
// nullopt for a message without one (Hello, Challenge, DataAccept).
inline std::optional<uint64_t> AnsweredRequest(const PoolMessage& message) {
  return std::visit(
      [](const auto& m) -> std::optional<uint64_t> {
        if constexpr (requires { m.request_id; }) return m.request_id;
        return std::nullopt;
      },
      message);
}

}  // namespace strata::pool
