// The attach channel's messages as plain C++ values (wire/attach.capnp holds
// their encoding; attach_codec.h converts). A runtime attaches with a Hello
// that carries its planes' fds, then makes HostStore calls as requests and
// reads their results as events (docs/wire.md, "Attach channel").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "store/base/prefix_history.h"
#include "store/base/status.h"
#include "store/record/fingerprint.h"
#include "store/record/geometry.h"
#include "store/tier/export_hooks.h"
#include "store/tier/host_store.h"
#include "store/transfer/plane_importer.h"

namespace strata::attach {

// 2: lookups in two steps (LookupStep, EndLookup); 3: a ticket's status
// (TicketStatusRequest, TicketStatusResult); 4: eviction notices
// (EvictedNotices, EvictionsLost); 5: exports (a store request's generation,
// the kExportRequested / kExportEnded events, ExportPinnedReply,
// ExportRefusedReply).
inline constexpr uint32_t kAttachProtocolVersion = 5;
// Limits checked on decode (and on encode, so a sender learns first).
inline constexpr size_t kAttachFrameBytesMax = size_t{32} << 20;
inline constexpr size_t kAttachRanksMax = 64;
inline constexpr size_t kAttachAllocationsPerRankMax = 1024;
inline constexpr size_t kAttachTextBytesMax = 4096;
inline constexpr size_t kAttachTokensMax = size_t{4} << 20;
inline constexpr size_t kAttachChainMax = size_t{1} << 20;
inline constexpr size_t kAttachNoticesMax = size_t{1} << 16;  // per Evicted

// Rank zero's rendezvous as the attach channel carries it (cluster.rendezvous
// = "attach"): rank zero's HelloAccept gives it to rank zero's runtime, each
// peer's runtime hands it to its rank in the Hello. Empty: none.
struct AttachRendezvous {
  std::string address;  // "host:port" of rank zero's rendezvous
  std::string secret;   // the job secret's bytes (never logged)
  bool empty() const { return address.empty() && secret.empty(); }
};

// Runtime -> strata, first frame; one fd per allocation rides with it, ranks
// in order, allocations in the listed order (or, for kCudaIpc, one IPC
// handle per allocation in that order, and no fd). Every allocation is the
// runtime's own (MemoryOwner::kLocal): a peer's memory is not shared here.
struct AttachHello {
  uint32_t protocol_version = kAttachProtocolVersion;
  std::string runtime_id;
  std::string model_identity;
  StateMode state_mode = StateMode::kOrdinary;
  uint32_t page_tokens = 0;
  std::vector<std::vector<SizedAllocation>> ranks;         // [rank] -> allocations
  PlaneHandleKind plane_handle = PlaneHandleKind::kMemfd;  // what every fd is
  // kCudaIpc only (no fd travels then): one per allocation, in the fds' order.
  std::vector<IpcPlane> ipc_planes;
  AttachRendezvous rendezvous{};  // to a peer's rank only
};

struct HelloAccept {
  uint32_t protocol_version = kAttachProtocolVersion;
  AttachRendezvous rendezvous{};  // from rank zero's rank only
};

struct HelloReject {
  std::string reason;
};

// A lookup's step (HostStore::BeginLookup, LookupFor, Lookup).
enum class LookupStep : unsigned char {
  kLookup,  // one step: a LookupResult follows
  kBegin,   // a ticket begun under request_id: no result
  kAdmit,   // admission for the ticket begun as `begun`: a LookupResult follows
};

struct LookupRequest {
  uint64_t request_id = 0;
  std::vector<Token> tokens;
  uint64_t resident_tokens = 0;
  uint64_t before = 0;
  LookupStep step = LookupStep::kLookup;
  uint64_t begun = 0;  // kAdmit
};

// The ticket begun as `begun` ends.
struct EndLookup {
  uint64_t begun = 0;
};

struct LookupResult {
  uint64_t request_id = 0;
  std::optional<HostHit> hit;
};

// The state of the ticket begun as `begun` (HostStore::TicketStatus); a
// TicketStatusResult under request_id follows.
struct TicketStatusRequest {
  uint64_t request_id = 0;
  uint64_t begun = 0;
};

struct TicketStatusResult {
  uint64_t request_id = 0;
  LookupTicketStatus status;  // state kNone: no such ticket
};

struct FetchRequest {
  HostHit hit;
  InboundTicket ticket;
};

struct StoreRequest {
  PublishedCheckpoint checkpoint;
};

struct StoreAnswer {
  uint64_t checkpoint_id = 0;
  StoreOutcome outcome = StoreOutcome::kDisabled;
};

// The checkpoints the runtime retired since its last Evicted, oldest first
// (HostStore::Evicted); at most kAttachNoticesMax per message.
struct EvictedNotices {
  std::vector<EvictionNotice> notices;
};

// The runtime's notice queue dropped notices (HostStore::EvictionsLost).
struct EvictionsLost {};

// The runtime's answers to a kExportRequested event (HostStore::ExportPinned,
// HostStore::ExportRefused); the rank's store takes them, no reply.
struct ExportPinnedReply {
  ExportId export_id;
  ExportDescription description;  // at most kAttachChainMax pages
};
struct ExportRefusedReply {
  ExportId export_id;
  ExportRefusal reason = ExportRefusal::kNotFound;
};

struct CloseRequest {};

struct CloseDone {
  Status status;
};

using AttachMessage =
    std::variant<AttachHello, HelloAccept, HelloReject, LookupRequest, LookupResult, FetchRequest,
                 StoreRequest, StoreAnswer, StoreEvent, CloseRequest, CloseDone, EndLookup,
                 TicketStatusRequest, TicketStatusResult, EvictedNotices, EvictionsLost,
                 ExportPinnedReply, ExportRefusedReply>;

// Every rank's allocations: the number of fds a Hello carries.
size_t AllocationCount(const AttachHello& hello);

}  // namespace strata::attach
