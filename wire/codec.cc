#include "wire/codec.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include "wire/codec_support.h"
#include "wire/strata.capnp.h"

namespace strata::wire {
namespace {

namespace s = schema;
using codec::AsData;
using codec::AsText;
using codec::GetBytes;
using codec::GetKey;
using codec::GetText;
using codec::Invalid;
using codec::PutKey;

// ---- status <-> outcome ----------------------------------------------------

s::Outcome ToOutcome(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return s::Outcome::OK;
    case StatusCode::kCorruption: return s::Outcome::CORRUPTION;
    case StatusCode::kIoError: return s::Outcome::IO_ERROR;
    case StatusCode::kInvalidArgument: return s::Outcome::INVALID_ARGUMENT;
    case StatusCode::kNotFound: return s::Outcome::NOT_FOUND;
    case StatusCode::kAlreadyExists: return s::Outcome::ALREADY_EXISTS;
    case StatusCode::kBusy: return s::Outcome::BUSY;
    case StatusCode::kFsFull: return s::Outcome::FS_FULL;
    case StatusCode::kUnavailable: return s::Outcome::UNAVAILABLE;
    case StatusCode::kFailedPrecondition: return s::Outcome::FAILED_PRECONDITION;
    case StatusCode::kAborted: return s::Outcome::ABORTED;
    case StatusCode::kInternal: return s::Outcome::INTERNAL;
  }
  return s::Outcome::INTERNAL;
}

Result<StatusCode> FromOutcome(s::Outcome outcome, std::string_view field) {
  switch (outcome) {
    case s::Outcome::OK: return StatusCode::kOk;
    case s::Outcome::CORRUPTION: return StatusCode::kCorruption;
    case s::Outcome::IO_ERROR: return StatusCode::kIoError;
    case s::Outcome::INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case s::Outcome::NOT_FOUND: return StatusCode::kNotFound;
    case s::Outcome::ALREADY_EXISTS: return StatusCode::kAlreadyExists;
    case s::Outcome::BUSY: return StatusCode::kBusy;
    case s::Outcome::FS_FULL: return StatusCode::kFsFull;
    case s::Outcome::UNAVAILABLE: return StatusCode::kUnavailable;
    case s::Outcome::FAILED_PRECONDITION: return StatusCode::kFailedPrecondition;
    case s::Outcome::ABORTED: return StatusCode::kAborted;
    case s::Outcome::INTERNAL: return StatusCode::kInternal;
  }
  return Status::InvalidArgument(
      fmt::format("{}: unknown outcome {}", field, static_cast<unsigned>(outcome)));
}

// ---- encoding --------------------------------------------------------------

template <typename Builder>
void PutOutcome(Builder out, const Status& status) {
  out.setOutcome(ToOutcome(status.code()));
  out.setErrorText(AsText(status.message()));
}

Status Put(s::Envelope::Builder env, const Hello& m) {
  auto out = env.initHello();
  out.setProtocolVersion(m.protocol_version);
  out.setNonce(AsData(m.nonce));
  out.setRank(m.rank.value);
  out.setWorldSize(m.world_size);
  out.setLayoutFingerprint(AsData(m.layout_fingerprint));
  out.setDiskLimitBytes(m.disk_limit_bytes);
  out.setHasDiskStore(m.has_disk_store);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const HelloAccept& m) {
  env.initHelloAccept().setProtocolVersion(m.protocol_version);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const HelloReject& m) {
  env.initHelloReject().setReason(AsText(m.reason));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const ScanSummary& m) {
  auto out = env.initScanSummary();
  auto records = out.initRecords(static_cast<unsigned>(m.records.size()));
  for (unsigned i = 0; i < records.size(); ++i) {
    const ScanRecord& r = m.records[i];
    auto o = records[i];
    PutKey(o.initKey(), r.key);
    if (r.parent) PutKey(o.initParent(), *r.parent);
    o.setHeaderDigest(AsData(r.header_digest));
    o.setRowPresent(r.row_present);
    o.setSizeBytes(r.size_bytes);
  }
  out.setLast(m.last);
  return Status::Ok();
}

Result<s::Verdict> ToVerdict(Verdict verdict) {
  switch (verdict) {
    case Verdict::kKeep: return s::Verdict::KEEP;
    case Verdict::kTruncate: return s::Verdict::TRUNCATE;
    case Verdict::kDelete: return s::Verdict::DELETE;
  }
  return Status::InvalidArgument(
      fmt::format("Agreement verdict {} is unknown", static_cast<unsigned>(verdict)));
}

Status Put(s::Envelope::Builder env, const Agreement& m) {
  auto out = env.initAgreement();
  auto entries = out.initEntries(static_cast<unsigned>(m.entries.size()));
  for (unsigned i = 0; i < entries.size(); ++i) {
    PutKey(entries[i].initKey(), m.entries[i].key);
    STRATA_ASSIGN_OR_RETURN(s::Verdict verdict, ToVerdict(m.entries[i].verdict));
    entries[i].setVerdict(verdict);
  }
  out.setLast(m.last);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const AgreementApplied& m) {
  PutOutcome(env.initAgreementApplied(), m.status);
  return Status::Ok();
}

Result<s::JobKind> ToJobKind(RecordJobKind kind) {
  switch (kind) {
    case RecordJobKind::kStore: return s::JobKind::STORE;
    case RecordJobKind::kFetch: return s::JobKind::FETCH;
    case RecordJobKind::kTruncate: return s::JobKind::TRUNCATE;
    case RecordJobKind::kUnlink: return s::JobKind::UNLINK;
  }
  return Status::InvalidArgument(
      fmt::format("Job.kind {} is unknown", static_cast<unsigned>(kind)));
}

Status Put(s::Envelope::Builder env, const Job& m) {
  const RecordJob& j = m.record;
  auto out = env.initJob();
  out.setId(j.id.value);
  STRATA_ASSIGN_OR_RETURN(s::JobKind kind, ToJobKind(j.kind));
  out.setKind(kind);
  PutKey(out.initKey(), j.key);
  if (j.parent) PutKey(out.initParent(), *j.parent);
  out.setBucket(AsData(j.bucket));
  out.setTailPages(j.tail_pages);
  auto ids = out.initPageIds(static_cast<unsigned>(j.page_ids.size()));
  for (unsigned i = 0; i < ids.size(); ++i) ids.set(i, j.page_ids[i].value);
  out.setFirstPage(j.first_page);
  if (j.row_slot) {
    out.initRowSlot().setSlot(j.row_slot->value);
  } else {
    out.initRowSlot().setNone();
  }
  out.setReplicatedPages(j.replicated_pages);
  out.setReplicatedRow(j.replicated_row);
  out.setHostData(j.host_data);
  out.setHostRow(j.host_row);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const JobData& m) {
  auto out = env.initJobData();
  out.setId(m.id.value);
  out.setOffset(m.offset);
  out.setTotal(m.total);
  out.setData(
      capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(m.data.data()), m.data.size()));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const JobDone& m) {
  auto out = env.initJobDone();
  out.setId(m.id.value);
  out.setRank(m.rank.value);
  PutOutcome(out, m.status);
  out.setFilesystemFull(m.filesystem_full);
  out.setBytes(m.bytes);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const Drain&) {
  env.initDrain();
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const Drained& m) {
  PutOutcome(env.initDrained(), m.status);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const Close& m) {
  env.initClose().setReason(AsText(m.reason));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const Heartbeat& m) {
  env.initHeartbeat().setSequence(m.sequence);
  return Status::Ok();
}

// ---- decoding --------------------------------------------------------------

// A decoded outcome (Result<Status> would be ambiguous).
struct DecodedOutcome {
  Status status;
};

template <typename Reader>
Result<DecodedOutcome> GetOutcome(Reader in, std::string_view message) {
  STRATA_ASSIGN_OR_RETURN(StatusCode code, FromOutcome(in.getOutcome(), message));
  STRATA_ASSIGN_OR_RETURN(std::string text, GetText(in.getErrorText(), kTextBytesMax,
                                                    fmt::format("{}.error_text", message)));
  if (code == StatusCode::kOk) {
    if (!text.empty()) return Invalid(message, "an OK outcome carries error text");
    return DecodedOutcome{Status::Ok()};
  }
  return DecodedOutcome{Status(code, std::move(text))};
}

Result<Message> Get(s::Hello::Reader in) {
  Hello m;
  m.protocol_version = in.getProtocolVersion();
  STRATA_ASSIGN_OR_RETURN(m.nonce, GetBytes<16>(in.getNonce(), "Hello.nonce"));
  m.rank = RankId(in.getRank());
  m.world_size = in.getWorldSize();
  STRATA_ASSIGN_OR_RETURN(m.layout_fingerprint,
                          GetBytes<16>(in.getLayoutFingerprint(), "Hello.layout_fingerprint"));
  m.disk_limit_bytes = in.getDiskLimitBytes();
  m.has_disk_store = in.getHasDiskStore();
  return Message(m);
}

Result<Message> Get(s::ScanSummary::Reader in) {
  auto records = in.getRecords();
  if (records.size() > kScanRecordsPerFrameMax) {
    return Invalid("ScanSummary.records", fmt::format("{} records, at most {} per frame",
                                                      records.size(), kScanRecordsPerFrameMax));
  }
  ScanSummary m;
  m.records.reserve(records.size());
  for (unsigned i = 0; i < records.size(); ++i) {
    auto r = records[i];
    const std::string field = fmt::format("ScanSummary.records[{}]", i);
    ScanRecord out;
    STRATA_ASSIGN_OR_RETURN(out.key, GetKey(r.getKey(), field + ".key"));
    if (r.hasParent()) {
      STRATA_ASSIGN_OR_RETURN(out.parent, GetKey(r.getParent(), field + ".parent"));
    }
    STRATA_ASSIGN_OR_RETURN(out.header_digest,
                            GetBytes<16>(r.getHeaderDigest(), field + ".header_digest"));
    out.row_present = r.getRowPresent();
    out.size_bytes = r.getSizeBytes();
    m.records.push_back(out);
  }
  m.last = in.getLast();
  return Message(std::move(m));
}

Result<Verdict> GetVerdict(s::Verdict verdict, std::string_view field) {
  switch (verdict) {
    case s::Verdict::KEEP: return Verdict::kKeep;
    case s::Verdict::TRUNCATE: return Verdict::kTruncate;
    case s::Verdict::DELETE: return Verdict::kDelete;
  }
  return Invalid(field, fmt::format("unknown verdict {}", static_cast<unsigned>(verdict)));
}

Result<Message> Get(s::Agreement::Reader in) {
  auto entries = in.getEntries();
  if (entries.size() > kAgreementEntriesPerFrameMax) {
    return Invalid("Agreement.entries", fmt::format("{} entries, at most {} per frame",
                                                    entries.size(), kAgreementEntriesPerFrameMax));
  }
  Agreement m;
  m.entries.reserve(entries.size());
  for (unsigned i = 0; i < entries.size(); ++i) {
    auto e = entries[i];
    const std::string field = fmt::format("Agreement.entries[{}]", i);
    AgreementEntry out;
    STRATA_ASSIGN_OR_RETURN(out.key, GetKey(e.getKey(), field + ".key"));
    STRATA_ASSIGN_OR_RETURN(out.verdict, GetVerdict(e.getVerdict(), field + ".verdict"));
    m.entries.push_back(out);
  }
  m.last = in.getLast();
  return Message(std::move(m));
}

Result<RecordJobKind> GetJobKind(s::JobKind kind) {
  switch (kind) {
    case s::JobKind::STORE: return RecordJobKind::kStore;
    case s::JobKind::FETCH: return RecordJobKind::kFetch;
    case s::JobKind::TRUNCATE: return RecordJobKind::kTruncate;
    case s::JobKind::UNLINK: return RecordJobKind::kUnlink;
  }
  return Invalid("Job.kind", fmt::format("unknown kind {}", static_cast<unsigned>(kind)));
}

Result<Message> Get(s::Job::Reader in) {
  Job m;
  RecordJob& j = m.record;
  j.id = JobId(in.getId());
  STRATA_ASSIGN_OR_RETURN(j.kind, GetJobKind(in.getKind()));
  STRATA_ASSIGN_OR_RETURN(j.key, GetKey(in.getKey(), "Job.key"));
  if (in.hasParent()) {
    STRATA_ASSIGN_OR_RETURN(j.parent, GetKey(in.getParent(), "Job.parent"));
  }
  STRATA_ASSIGN_OR_RETURN(j.bucket, GetBytes<16>(in.getBucket(), "Job.bucket"));
  j.tail_pages = in.getTailPages();
  auto ids = in.getPageIds();
  if (ids.size() > kJobPageIdsMax) {
    return Invalid("Job.page_ids",
                   fmt::format("{} page ids, at most {} allowed", ids.size(), kJobPageIdsMax));
  }
  j.page_ids.reserve(ids.size());
  for (uint32_t id : ids) j.page_ids.emplace_back(id);
  j.first_page = in.getFirstPage();
  auto slot = in.getRowSlot();
  switch (slot.which()) {
    case s::Job::RowSlot::NONE: break;
    case s::Job::RowSlot::SLOT: j.row_slot = StateSlot(slot.getSlot()); break;
    default:
      return Invalid("Job.row_slot",
                     fmt::format("unknown variant {}", static_cast<unsigned>(slot.which())));
  }
  j.replicated_pages = in.getReplicatedPages();
  j.replicated_row = in.getReplicatedRow();
  j.host_data = in.getHostData();
  j.host_row = in.getHostRow();
  return Message(std::move(m));
}

Result<Message> Get(s::JobData::Reader in) {
  JobData m;
  m.id = JobId(in.getId());
  m.offset = in.getOffset();
  m.total = in.getTotal();
  const capnp::Data::Reader data = in.getData();
  if (data.size() > kJobDataChunkBytesMax) {
    return Invalid("JobData.data",
                   fmt::format("{} bytes, at most {} allowed", data.size(), kJobDataChunkBytesMax));
  }
  const auto* begin = reinterpret_cast<const std::byte*>(data.begin());
  m.data.assign(begin, begin + data.size());
  return Message(std::move(m));
}

Result<Message> Get(s::JobDone::Reader in) {
  JobDone m;
  m.id = JobId(in.getId());
  m.rank = RankId(in.getRank());
  STRATA_ASSIGN_OR_RETURN(DecodedOutcome outcome, GetOutcome(in, "JobDone"));
  m.status = std::move(outcome.status);
  m.filesystem_full = in.getFilesystemFull();
  m.bytes = in.getBytes();
  return Message(std::move(m));
}

Result<Message> Get(s::Envelope::Reader env) {
  using W = s::Envelope::Which;
  switch (env.which()) {
    case W::HELLO: return Get(env.getHello());
    case W::HELLO_ACCEPT: return Message(HelloAccept{env.getHelloAccept().getProtocolVersion()});
    case W::HELLO_REJECT: {
      STRATA_ASSIGN_OR_RETURN(auto reason, GetText(env.getHelloReject().getReason(), kTextBytesMax,
                                                   "HelloReject.reason"));
      return Message(HelloReject{std::move(reason)});
    }
    case W::SCAN_SUMMARY: return Get(env.getScanSummary());
    case W::AGREEMENT: return Get(env.getAgreement());
    case W::AGREEMENT_APPLIED: {
      STRATA_ASSIGN_OR_RETURN(auto outcome,
                              GetOutcome(env.getAgreementApplied(), "AgreementApplied"));
      return Message(AgreementApplied{std::move(outcome.status)});
    }
    case W::JOB: return Get(env.getJob());
    case W::JOB_DONE: return Get(env.getJobDone());
    case W::DRAIN: return Message(Drain{});
    case W::DRAINED: {
      STRATA_ASSIGN_OR_RETURN(auto outcome, GetOutcome(env.getDrained(), "Drained"));
      return Message(Drained{std::move(outcome.status)});
    }
    case W::CLOSE: {
      STRATA_ASSIGN_OR_RETURN(auto reason,
                              GetText(env.getClose().getReason(), kTextBytesMax, "Close.reason"));
      return Message(Close{std::move(reason)});
    }
    case W::HEARTBEAT: return Message(Heartbeat{env.getHeartbeat().getSequence()});
    case W::JOB_DATA: return Get(env.getJobData());
  }
  return Invalid("Envelope",
                 fmt::format("unknown message type {}", static_cast<unsigned>(env.which())));
}

}  // namespace

Result<Frame> EncodeFrame(const Message& message) {
  STRATA_RETURN_IF_ERROR(CheckMessage(message));
  // CheckMessage's limits keep every encode under kFrameBytesMax.
  return codec::EncodeEnvelope<s::Envelope>(
      std::numeric_limits<size_t>::max(), MessageName(message), [&](s::Envelope::Builder env) {
        return std::visit([&](const auto& m) { return Put(env, m); }, message);
      });
}

Result<Message> DecodeFrame(std::span<const uint64_t> words, size_t frame_bytes_max) {
  return codec::DecodeEnvelope<s::Envelope, Message>(
      words, frame_bytes_max, "frame", [](s::Envelope::Reader env) -> Result<Message> {
        STRATA_ASSIGN_OR_RETURN(Message message, Get(env));
        STRATA_RETURN_IF_ERROR(CheckMessage(message));
        return message;
      });
}

}  // namespace strata::wire
