# The pool channel: an instance <-> the pool manager (`strata pool`, seed
# 2.15), over a Unix socket on the manager's host or TCP (docs/pool.md, "Protocol").
# One Envelope per frame, framed like the record links (wire/frame_reader.h).
# Checked on receipt by coordinator/pool/pool_codec.cc; limits are the named
# constants in coordinator/pool/pool_messages.h. Add fields with new ordinals only.
@0xfd85a8ffc463aa22;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::pool_schema");

# A token-prefix endpoint. digest: exactly 16 bytes.
struct Key {
  consumed @0 :UInt64;
  digest @1 :Data;
}

struct RankPlanes {
  unitBytes @0 :List(UInt64);  # the row plane, then the page planes by name
}

# Instance -> manager, first frame.
struct Hello {
  protocolVersion @0 :UInt32;
  instanceSources @1 :List(Text);  # GPU UUIDs, or one configured id
  modelIdentity @2 :Data;          # 32 bytes (store/record/fingerprint.h)
  layout @3 :Data;                 # 16 bytes: the layout fingerprint
  ranks @4 :List(RankPlanes);
  pageTokens @5 :UInt32;
  # Over TCP: HMAC-SHA256 of the job secret over the Challenge's nonce
  # (coordinator/pool/pool_hello_proof.h): 32 bytes; empty on a Unix socket.
  proof @6 :Data;
  # Over TCP: 16 bytes the manager's HelloAccept proof covers.
  clientNonce @7 :Data;
  # Protocol 5, over TCP: move the records through the data channel (the
  # instance maps no arena: another host), not the arena's file.
  dataChannel @8 :Bool;
}

# Manager -> instance, the first frame of a TCP connection: the nonce its
# Hello must prove the job secret over.
struct Challenge {
  nonce @0 :Data;  # 16 bytes
}

# Manager -> instance. On a Unix socket the arena's fd travels with this
# frame (SCM_RIGHTS); over TCP, arenaPath names the arena's file, which an
# instance on the manager's host maps by path.
struct HelloAccept {
  protocolVersion @0 :UInt32;
  poolName @1 :Text;
  generation @2 :UInt64;   # the arena's; a new one after a manager restart
  scope @3 :Data;          # 16 bytes: ScopeId
  instance @4 :Data;       # 16 bytes: InstanceId
  slotBytes @5 :UInt64;
  slotCount @6 :UInt32;
  arenaPath @7 :Text;  # over TCP only
  # Over TCP: the manager's HMAC-SHA256 of the job secret over both nonces
  # and this answer (pool_hello_proof.h), checked before the file is mapped.
  proof @8 :Data;
  # Protocol 5, when the Hello asked for the data channel (arenaPath is then
  # empty): the session's transfer token (16 bytes) a data connection names,
  # the largest window one SlotWrite or SlotData carries, and the windows an
  # instance may have outstanding on one data connection.
  dataToken @9 :Data;
  windowBytes @10 :UInt64;
  windowCredits @11 :UInt32;
}

# The reason names the first problem; the manager closes after sending it.
struct HelloReject {
  reason @0 :Text;
}

# Every answer carries the request's id and its outcome.
struct Outcome {
  requestId @0 :UInt64;
  statusCode @1 :UInt8;    # a StatusCode value; 0 is OK
  errorText @2 :Text;
  progressEpoch @3 :UInt64;  # the manager's progress count when it answered
}

struct LookupRequest {
  requestId @0 :UInt64;
  tokens @1 :List(UInt32);  # the request's whole history
  residentTokens @2 :UInt64;
  before @3 :UInt64;        # inclusive
}

struct LookupAnswer {
  outcome @0 :Outcome;
  chain @1 :List(Key);      # ascending; empty when nothing matched
  # Protocol 3: what sizes the restore before any claim (the instance's
  # inbound pages). The consumed tokens of the first chain record's parent
  # (0: a root), and each chain record's tail pages, in chain order.
  baseConsumed @2 :UInt64;
  tailPages @3 :List(UInt32);
}

enum PutKind {
  cascade @0;
  own @1;
}

struct PutRequest {
  requestId @0 :UInt64;
  key @1 :Key;
  parent @2 :Key;           # absent: a root record
  bucket @3 :Data;          # 16 bytes
  bytes @4 :UInt64;
  obsoleteChecksum @5 :UInt64;  # protocol 1 only; since 2 zero, ignored (the commit carries it)
  kind @6 :PutKind;
}

struct PutAnswer {
  outcome @0 :Outcome;
  put @1 :UInt64;
  slots @2 :List(UInt32);   # write the bytes across them in order
}

struct CommitRequest {
  requestId @0 :UInt64;
  put @1 :UInt64;
  checksum @2 :UInt64;      # XXH3-64 of the record's bytes as written into its slots
}

struct AbortRequest {
  requestId @0 :UInt64;
  put @1 :UInt64;
}

struct ClaimRequest {
  requestId @0 :UInt64;
  chain @1 :List(Key);      # a LookupAnswer's chain
}

struct ClaimedRecord {
  key @0 :Key;
  bytes @1 :UInt64;
  checksum @2 :UInt64;
  slots @3 :List(UInt32);
}

struct ClaimAnswer {
  outcome @0 :Outcome;
  claim @1 :UInt64;
  budgetMs @2 :UInt64;      # the manager's deadline, from the claim's start
  records @3 :List(ClaimedRecord);
}

struct ReleaseRequest {
  requestId @0 :UInt64;
  claim @1 :UInt64;
}

# The data channel (protocol 5): a second TCP connection of a session that
# asked for it, opened after HelloAccept. Its first frame (after the
# Challenge, and TLS when configured) is DataHello; the manager answers
# dataAccept (an Outcome, request id 0) or closes. Then SlotWrite and
# SlotRead, each answered in order: `done` and SlotData. A SlotWrite's and
# a SlotData's `bytes` raw bytes follow their frame on the stream.
struct DataHello {
  instance @0 :Data;   # 16 bytes: HelloAccept.instance
  token @1 :Data;      # 16 bytes: HelloAccept.dataToken
  # 32 bytes: HMAC-SHA256 of the job secret over "strata-pool-data-v1", the
  # Challenge's nonce, the instance and the token (pool_hello_proof.h).
  proof @2 :Data;
}

# Bytes [offset, offset + bytes) of an open put's record, within one of its
# slots (offset / slotBytes names the slot of the grant).
struct SlotWrite {
  requestId @0 :UInt64;
  put @1 :UInt64;
  offset @2 :UInt64;
  bytes @3 :UInt64;
}

# Bytes [offset, offset + bytes) of record `record` (its index in the claim
# answer) of a held claim, within one of its slots.
struct SlotRead {
  requestId @0 :UInt64;
  claim @1 :UInt64;
  record @2 :UInt32;
  offset @3 :UInt64;
  bytes @4 :UInt64;
}

# The answer to SlotRead: `bytes` raw bytes follow (0 when it failed).
struct SlotData {
  outcome @0 :Outcome;
  bytes @1 :UInt64;
}

# Protocol 6: a checkpoint the instance's runtime holds in its planes (GPU
# or host) and can export (seed 2.15, "Exports").
struct Holding {
  key @0 :Key;
  generation @1 :UInt64;  # the runtime's generation of it
  bucket @2 :Data;        # 16 bytes: history.bucket_digest(key.consumed)
}

# Protocol 6: the instance's holdings changed; answered with done.
struct AnnounceRequest {
  requestId @0 :UInt64;
  reset @1 :Bool;               # first forget every holding announced before
  held @2 :List(Holding);       # new holdings
  withdrawn @3 :List(Holding);  # retired ones (their bucket is not read)
  # What an export of this instance moves per page and for the row (the
  # record layout's page record and row segment bytes).
  pageRecordBytes @4 :UInt64;
  rowSegmentBytes @5 :UInt64;
}

# Protocol 6, manager to instance, unasked: another instance claimed a
# holding of this one. Copy the chain's pages from `startPage` on and the
# row, as a record image (key, parent, bucket), into put `put`'s slots and
# commit it; abort the put to refuse.
struct ExportAsk {
  put @0 :UInt64;
  key @1 :Key;
  generation @2 :UInt64;
  parent @3 :Key;       # absent: a root record (startPage 0)
  bucket @4 :Data;      # 16 bytes
  startPage @5 :UInt64;
  bytes @6 :UInt64;     # the image's bytes: the staging reserved
  slots @7 :List(UInt32);
}

struct Envelope {
  union {
    hello @0 :Hello;
    helloAccept @1 :HelloAccept;
    helloReject @2 :HelloReject;
    lookup @3 :LookupRequest;
    lookupAnswer @4 :LookupAnswer;
    put @5 :PutRequest;
    putAnswer @6 :PutAnswer;
    commit @7 :CommitRequest;
    abort @8 :AbortRequest;
    claim @9 :ClaimRequest;
    claimAnswer @10 :ClaimAnswer;
    release @11 :ReleaseRequest;
    done @12 :Outcome;      # the answer to commit, abort and release
    challenge @13 :Challenge;
    dataHello @14 :DataHello;
    dataAccept @15 :Outcome;
    slotWrite @16 :SlotWrite;
    slotRead @17 :SlotRead;
    slotData @18 :SlotData;
    announce @19 :AnnounceRequest;
    exportAsk @20 :ExportAsk;
  }
}
