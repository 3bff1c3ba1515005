# The attach channel: a runtime process <-> its rank's `strata rank`, over an
# owner-only Unix socket (docs/wire.md, "Attach channel"; docs/embedding.md).
# One Envelope per frame, framed like the record links (wire/frame_reader.h).
# Checked on receipt by attach/client/attach_codec.cc; limits are the named
# constants in attach/client/attach_messages.h. Add fields with new ordinals only.
@0x9af82443803c0e00;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::attach_schema");

# A token-prefix endpoint. digest: exactly 16 bytes.
struct Key {
  consumed @0 :UInt64;
  digest @1 :Data;
}

enum AllocationGroup {
  kvPages @0;
  stateRows @1;
}

# One of the runtime's sized allocations (store/record/geometry.h). Exactly
# one memfd per allocation travels with the Hello frame (SCM_RIGHTS), in the
# order the allocations are listed, ranks in order; with planeHandle =
# cudaIpc no fd travels and each allocation carries its IPC handle instead.
struct Allocation {
  name @0 :Text;
  group @1 :AllocationGroup;
  unitBytes @2 :UInt64;
  count @3 :UInt64;
  # cudaIpc only: the cuIpcGetMemHandle bytes (exactly 64) of the cudaMalloc
  # block holding the plane, and the plane's offset in that block. Empty / 0
  # otherwise.
  ipcHandle @4 :Data;
  ipcOffset @5 :UInt64;
}

struct RankAllocations {
  allocations @0 :List(Allocation);
}

enum StateMode {
  ordinary @0;
  learnedSpeculation @1;
  copySpeculation @2;
}

# Runtime -> strata, first frame.
# What each allocation's fd is: a memfd, or a CUDA VMM allocation exported
# with cuMemExportToShareableHandle as a POSIX file descriptor; or (cudaIpc)
# no fd travels: each Allocation carries a legacy CUDA IPC handle.
enum PlaneHandle {
  memfd @0;
  cudaVmmFd @1;
  cudaIpc @2;
}

struct Hello {
  protocolVersion @0 :UInt32;
  runtimeId @1 :Text;          # the runtime's own name for itself (logs)
  modelIdentity @2 :Text;      # must equal the rank's configured identity
  stateMode @3 :StateMode;
  pageTokens @4 :UInt32;
  ranks @5 :List(RankAllocations);
  planeHandle @6 :PlaneHandle;
  # Only to a peer's `strata rank` started with cluster.rendezvous = "attach":
  # where rank zero's rendezvous listens ("host:port") and the job secret,
  # as rank zero's HelloAccept gave them to rank zero's runtime. Empty: none.
  rendezvousAddress @7 :Text;
  jobSecret @8 :Data;
}

struct HelloAccept {
  protocolVersion @0 :UInt32;
  # From rank zero's `strata rank` started with cluster.rendezvous = "attach":
  # its rendezvous address ("host:port") and the job secret, for the runtime
  # to publish to the peers' runtimes. Empty otherwise.
  rendezvousAddress @1 :Text;
  jobSecret @2 :Data;
}

# The reason names the first difference; the server closes after sending it.
struct HelloReject {
  reason @0 :Text;
}

# Protocol 2: lookups in two steps (docs/pool.md, "Lookups"). `begin`
# when a request arrives starts its ticket under this request id and gets
# no result; `admit` at admission answers for the ticket begun as `begun`
# (the same history); `lookup` is the one-step lookup.
enum LookupStep {
  lookup @0;
  begin @1;
  admit @2;
}

struct LookupRequest {
  requestId @0 :UInt64;
  tokens @1 :List(UInt32);     # the request's whole history
  residentTokens @2 :UInt64;
  before @3 :UInt64;
  step @4 :LookupStep;
  begun @5 :UInt64;            # admit: the begin's request id
}

# Runtime -> strata: the ticket begun as `begun` is done (prefill started,
# or the request went away). Unknown ids are ignored.
struct EndLookup {
  begun @0 :UInt64;
}

# Protocol 3: runtime -> strata, the state of the ticket begun as `begun`
# (HostStore::TicketStatus): what a late answer's one retry of admission is
# decided on (docs/pool.md, "Lookups"). A TicketStatusResult follows.
struct TicketStatusRequest {
  requestId @0 :UInt64;
  begun @1 :UInt64;
}

enum TicketState {
  none @0;       # no such ticket (never begun, ended, or no pool)
  pending @1;    # the manager has not answered yet
  ready @2;      # answered (or its connection was lost: then with nothing)
}

struct TicketStatusResult {
  requestId @0 :UInt64;
  state @1 :TicketState;
  poolConsumed @2 :UInt64;       # ready: the pooled endpoint (0: none)
  admittedConsumed @3 :UInt64;   # what the last admission answered (0: nothing)
  admissions @4 :UInt32;         # admissions so far
  answeredLate @5 :Bool;         # the first admission went on without the answer
  retryUsed @6 :Bool;            # the one late retry is spent
}

enum Tier {
  memory @0;
  disk @1;
}

struct Hit {
  endpoint @0 :Key;
  chain @1 :List(Key);
  skipPages @2 :UInt64;
  pages @3 :UInt64;
  bytes @4 :UInt64;
  tokensGained @5 :UInt64;
  tier @6 :Tier;
  pooled @7 :Bool;  # the pool supplies it (HostHit::pooled): costed at the pool's rate
}

struct LookupResult {
  requestId @0 :UInt64;
  found @1 :Bool;
  hit @2 :Hit;                 # meaningful when found
}

struct FetchRequest {
  hit @0 :Hit;                 # as a LookupResult returned it
  ticket @1 :UInt64;
  pageIds @2 :List(UInt32);
  rowSlot @3 :UInt32;
}

struct StoreRequest {
  checkpointId @0 :UInt64;
  key @1 :Key;
  parent @2 :Key;              # absent: no parent
  bucket @3 :Data;             # exactly 16 bytes
  chain @4 :List(UInt32);
  tailPages @5 :UInt32;
  rowSlot @6 :UInt32;
  # Protocol 5: the runtime's generation of this checkpoint at its key
  # (PublishedCheckpoint::generation; what an export request names).
  generation @7 :UInt64;
}

enum StoreOutcome {
  queued @0;
  present @1;
  deferred @2;
  retry @3;
  oversize @4;
  disabled @5;
}

# Strata's answer to one StoreRequest (HostStore::Store's return value).
struct StoreAnswer {
  checkpointId @0 :UInt64;
  outcome @1 :StoreOutcome;
}

enum EventKind {
  stored @0;
  storeFailed @1;
  fetched @2;
  fetchFailed @3;
  stopped @4;
  exportRequested @5;  # protocol 5
  exportEnded @6;      # protocol 5
}

# A StoreEvent (store/tier/host_store.h). statusCode: a StatusCode value.
struct Event {
  kind @0 :EventKind;
  checkpointId @1 :UInt64;
  ticket @2 :UInt64;
  key @3 :Key;
  statusCode @4 :UInt8;
  errorText @5 :Text;
  bytes @6 :UInt64;
  # Protocol 5, exportRequested / exportEnded (docs/embedding.md section 5):
  # the export, and for a request the checkpoint's generation and the chain
  # page it starts at (bytes: the staging reserved for it).
  exportId @7 :UInt64;
  generation @8 :UInt64;
  startPage @9 :UInt64;
}

# Protocol 5: runtime -> strata, the answer to an exportRequested event
# (HostStore::ExportPinned): the pinned pages from startPage on, in chain
# order, and the endpoint's row slot.
struct ExportPinned {
  exportId @0 :UInt64;
  startPage @1 :UInt64;
  pages @2 :List(UInt32);
  rowSlot @3 :UInt32;
}

enum ExportRefusal {
  notFound @0;
  generationChanged @1;
  chainGap @2;
  noHeadroom @3;
}

# Protocol 5: runtime -> strata, an exportRequested it did not pin
# (HostStore::ExportRefused).
struct ExportRefused {
  exportId @0 :UInt64;
  reason @1 :ExportRefusal;
}

# Protocol 4: runtime -> strata, the checkpoints the runtime retired since
# its last Evicted, oldest first (HostStore::Evicted; docs/embedding.md
# section 5), sent before its next other store request. generation: the
# checkpoint's, as the runtime numbers them at that key.
struct EvictionNotice {
  key @0 :Key;
  generation @1 :UInt64;
}

struct Evicted {
  notices @0 :List(EvictionNotice);
}

# Strata -> runtime after a Close: every copy into the runtime's planes has
# finished; the server has unmapped them and closes the socket.
struct CloseDone {
  statusCode @0 :UInt8;
  errorText @1 :Text;
}

struct Envelope {
  union {
    hello @0 :Hello;
    helloAccept @1 :HelloAccept;
    helloReject @2 :HelloReject;
    lookup @3 :LookupRequest;
    lookupResult @4 :LookupResult;
    fetch @5 :FetchRequest;
    store @6 :StoreRequest;
    storeAnswer @7 :StoreAnswer;
    event @8 :Event;
    close @9 :Void;
    closeDone @10 :CloseDone;
    endLookup @11 :EndLookup;
    ticketStatus @12 :TicketStatusRequest;
    ticketStatusResult @13 :TicketStatusResult;
    evicted @14 :Evicted;
    # Protocol 4: the runtime's bounded notice queue dropped notices since its
    # last Evicted (HostStore::EvictionsLost).
    evictionsLost @15 :Void;
    exportPinned @16 :ExportPinned;
    exportRefused @17 :ExportRefused;
  }
}
