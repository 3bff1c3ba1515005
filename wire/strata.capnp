# Strata's rank-to-rank protocol: one Envelope per frame (docs/wire.md).
# Every field below is checked on receipt by wire/codec.cc; limits are the
# named constants in wire/messages.h. Add fields with new ordinals only.
@0x8640598002375460;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::schema");

# A token-prefix endpoint (store/base/prefix_key.h). digest: exactly 16 bytes.
struct PrefixKey {
  consumed @0 :UInt64;
  digest @1 :Data;
}

# A Status code (store/base/status.h) carried by completions.
enum Outcome {
  ok @0;
  corruption @1;
  ioError @2;
  invalidArgument @3;
  notFound @4;
  alreadyExists @5;
  busy @6;
  fsFull @7;
  unavailable @8;
  failedPrecondition @9;
  aborted @10;
  internal @11;
}

# Peer -> rank zero, first frame on a link.
struct Hello {
  protocolVersion @0 :UInt32;
  nonce @1 :Data;               # exactly 16 bytes, from the rendezvous
  rank @2 :UInt32;              # below worldSize
  worldSize @3 :UInt32;
  layoutFingerprint @4 :Data;   # exactly 16 bytes: this rank's layout
  diskLimitBytes @5 :UInt64;
  hasDiskStore @6 :Bool;
}

struct HelloAccept {
  protocolVersion @0 :UInt32;
}

struct HelloReject {
  reason @0 :Text;
}

# One record file a peer's scan kept.
struct ScanRecord {
  key @0 :PrefixKey;
  parent @1 :PrefixKey;         # absent for a record without a parent
  headerDigest @2 :Data;        # 16 bytes; header without fingerprint and row checksum
  rowPresent @3 :Bool;
  sizeBytes @4 :UInt64;
}

# Peer -> rank zero after HelloAccept; sent in chunks, `last` on the final one.
struct ScanSummary {
  records @0 :List(ScanRecord);
  last @1 :Bool;
}

enum Verdict {
  keep @0;
  truncate @1;                  # keep the pages, drop the row segment
  delete @2;
}

struct AgreementEntry {
  key @0 :PrefixKey;
  verdict @1 :Verdict;
}

# Rank zero -> peer: one verdict per summarized record; in chunks, `last` on the final one.
struct Agreement {
  entries @0 :List(AgreementEntry);
  last @1 :Bool;
}

# Peer -> rank zero once its files match the agreement (or it failed to get there).
struct AgreementApplied {
  outcome @0 :Outcome;
  errorText @1 :Text;
}

enum JobKind {
  store @0;
  fetch @1;
  truncate @2;
  unlink @3;
}

# Rank zero -> peer: run this record job (store/tier/disk_transport.h RecordJob)
# on the peer's own transport: the file "<key stem>.ckpt" in the peer's record
# directory, the same page ids and state slot as rank zero's own job.
struct Job {
  id @0 :UInt64;
  kind @1 :JobKind;
  key @2 :PrefixKey;
  parent @3 :PrefixKey;         # store: absent for a record without a parent
  bucket @4 :Data;              # 16 bytes; store: the header's bucket digest
  tailPages @5 :UInt32;         # page records in the file
  pageIds @6 :List(UInt32);     # store: the file's pages; fetch: pages [firstPage, tailPages)
  firstPage @7 :UInt32;         # fetch
  rowSlot :union {
    none @8 :Void;
    slot @9 :UInt32;
  }
  replicatedPages @10 :Bool;
  replicatedRow @11 :Bool;
  hostData @12 :Bool;           # the bytes travel as JobData; no page ids, no slot
  hostRow @13 :Bool;            # host data: the row segment follows the pages
}

# Either way: a chunk of a host-data job's bytes (store: rank zero -> peer
# before the Job; fetch: peer -> rank zero before its JobDone), in order.
struct JobData {
  id @0 :UInt64;
  offset @1 :UInt64;
  total @2 :UInt64;
  data @3 :Data;
}

# Peer -> rank zero: one per Job.
struct JobDone {
  id @0 :UInt64;
  rank @1 :UInt32;
  outcome @2 :Outcome;
  errorText @3 :Text;
  filesystemFull @4 :Bool;
  bytes @5 :UInt64;
}

# Rank zero -> peer: accept no new job, finish the accepted ones.
struct Drain {}

# Peer -> rank zero: every accepted job finished and the transport drained (or not).
struct Drained {
  outcome @0 :Outcome;
  errorText @1 :Text;
}

# Either side: the sender is closing the link on purpose.
struct Close {
  reason @0 :Text;
}

struct Heartbeat {
  sequence @0 :UInt64;
}

struct Envelope {
  union {
    hello @0 :Hello;
    helloAccept @1 :HelloAccept;
    helloReject @2 :HelloReject;
    scanSummary @3 :ScanSummary;
    agreement @4 :Agreement;
    agreementApplied @5 :AgreementApplied;
    job @6 :Job;
    jobDone @7 :JobDone;
    drain @8 :Drain;
    drained @9 :Drained;
    close @10 :Close;
    heartbeat @11 :Heartbeat;
    jobData @12 :JobData;
  }
}
