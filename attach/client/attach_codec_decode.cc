// DecodeAttachFrame (attach_codec.h): every field is checked before it is used.
#include <fmt/format.h>

#include <new>

#include "attach/client/attach_codec.h"
#include "wire/attach.capnp.h"
#include "wire/codec_support.h"
#include "wire/messages.h"

namespace strata::attach {
namespace {

namespace s = wire::attach_schema;
using wire::codec::CheckCount;
using wire::codec::GetKey;
using wire::codec::Invalid;

// ---- decoding --------------------------------------------------------------

Result<std::string> GetText(capnp::Text::Reader text, std::string_view field) {
  return wire::codec::GetText(text, kAttachTextBytesMax, field);
}

// An enum value read from the wire, refused past `last`.
template <typename Out, typename In>
Result<Out> GetEnum(In value, In last, std::string_view field) {
  if (static_cast<unsigned>(value) > static_cast<unsigned>(last)) {
    return Invalid(field, fmt::format("unknown value {}", static_cast<unsigned>(value)));
  }
  return static_cast<Out>(value);
}

// The status a message carries, into `out`.
Status GetStatus(uint8_t code, capnp::Text::Reader text, std::string_view field, Status* out) {
  return wire::codec::GetStatus(code, text, kAttachTextBytesMax, field, out);
}

template <typename Id, typename List>
Result<std::vector<Id>> GetIds(List list, std::string_view field) {
  STRATA_RETURN_IF_ERROR(CheckCount(list.size(), kAttachChainMax, field));
  std::vector<Id> ids;
  ids.reserve(list.size());
  for (auto v : list) ids.emplace_back(v);
  return ids;
}

Result<HostHit> GetHit(s::Hit::Reader in) {
  HostHit hit;
  STRATA_ASSIGN_OR_RETURN(hit.endpoint, GetKey(in.getEndpoint(), "Hit.endpoint"));
  auto chain = in.getChain();
  STRATA_RETURN_IF_ERROR(CheckCount(chain.size(), kAttachChainMax, "Hit.chain"));
  for (auto k : chain) {
    STRATA_ASSIGN_OR_RETURN(PrefixKey key, GetKey(k, "Hit.chain"));
    hit.chain.push_back(key);
  }
  hit.skip_pages = in.getSkipPages();
  hit.pages = in.getPages();
  hit.bytes = in.getBytes();
  hit.tokens_gained = in.getTokensGained();
  STRATA_ASSIGN_OR_RETURN(hit.tier, (GetEnum<Tier>(in.getTier(), s::Tier::DISK, "Hit.tier")));
  hit.pooled = in.getPooled();
  return hit;
}

// Rank zero's rendezvous from a Hello or a HelloAccept.
template <typename Reader>
Result<AttachRendezvous> GetRendezvous(Reader in, std::string_view field) {
  AttachRendezvous r;
  STRATA_ASSIGN_OR_RETURN(r.address, GetText(in.getRendezvousAddress(), field));
  const capnp::Data::Reader secret = in.getJobSecret();
  if (secret.size() > kAttachTextBytesMax) return Invalid(field, "job secret over the limit");
  r.secret.assign(reinterpret_cast<const char*>(secret.begin()), secret.size());
  return r;
}

// An allocation's IPC handle: exactly kIpcMemHandleBytes with cudaIpc
// (appended to `out`), none otherwise.
Status GetIpcPlane(s::Allocation::Reader a, PlaneHandleKind kind, std::vector<IpcPlane>& out) {
  const capnp::Data::Reader handle = a.getIpcHandle();
  if (kind != PlaneHandleKind::kCudaIpc) {
    if (handle.size() != 0 || a.getIpcOffset() != 0) {
      return Invalid("Allocation.ipc_handle", "set, but the planes are not shared by IPC handle");
    }
    return Status::Ok();
  }
  if (handle.size() != kIpcMemHandleBytes) {
    return Invalid("Allocation.ipc_handle",
                   fmt::format("{} bytes, not {}", handle.size(), kIpcMemHandleBytes));
  }
  IpcPlane& p = out.emplace_back();
  std::memcpy(p.handle.data(), handle.begin(), p.handle.size());
  p.offset = a.getIpcOffset();
  return Status::Ok();
}

Result<AttachMessage> GetHello(s::Hello::Reader in) {
  AttachHello m;
  STRATA_ASSIGN_OR_RETURN(m.rendezvous, GetRendezvous(in, "Hello.rendezvous"));
  m.protocol_version = in.getProtocolVersion();
  STRATA_ASSIGN_OR_RETURN(m.runtime_id, GetText(in.getRuntimeId(), "Hello.runtime_id"));
  STRATA_ASSIGN_OR_RETURN(m.model_identity, GetText(in.getModelIdentity(), "Hello.model_identity"));
  STRATA_ASSIGN_OR_RETURN(
      m.state_mode,
      (GetEnum<StateMode>(in.getStateMode(), s::StateMode::COPY_SPECULATION, "Hello.state_mode")));
  m.page_tokens = in.getPageTokens();
  STRATA_ASSIGN_OR_RETURN(m.plane_handle,
                          (GetEnum<PlaneHandleKind>(in.getPlaneHandle(), s::PlaneHandle::CUDA_IPC,
                                                    "Hello.plane_handle")));
  auto ranks = in.getRanks();
  STRATA_RETURN_IF_ERROR(CheckCount(ranks.size(), kAttachRanksMax, "Hello.ranks"));
  for (auto rank : ranks) {
    auto list = rank.getAllocations();
    STRATA_RETURN_IF_ERROR(
        CheckCount(list.size(), kAttachAllocationsPerRankMax, "Hello.allocations"));
    std::vector<SizedAllocation>& allocs = m.ranks.emplace_back();
    for (auto a : list) {
      SizedAllocation& out = allocs.emplace_back();
      STRATA_ASSIGN_OR_RETURN(out.name, GetText(a.getName(), "Allocation.name"));
      STRATA_ASSIGN_OR_RETURN(
          out.group, (GetEnum<AllocationGroup>(a.getGroup(), s::AllocationGroup::STATE_ROWS,
                                               "Allocation.group")));
      out.unit_bytes = a.getUnitBytes();
      out.count = a.getCount();
      STRATA_RETURN_IF_ERROR(GetIpcPlane(a, m.plane_handle, m.ipc_planes));
    }
  }
  return AttachMessage(std::move(m));
}

Result<AttachMessage> GetLookup(s::LookupRequest::Reader in) {
  LookupRequest m;
  m.request_id = in.getRequestId();
  auto tokens = in.getTokens();
  STRATA_RETURN_IF_ERROR(CheckCount(tokens.size(), kAttachTokensMax, "Lookup.tokens"));
  m.tokens.reserve(tokens.size());
  for (Token t : tokens) m.tokens.push_back(t);
  m.resident_tokens = in.getResidentTokens();
  m.before = in.getBefore();
  STRATA_ASSIGN_OR_RETURN(m.step,
                          (GetEnum<LookupStep>(in.getStep(), s::LookupStep::ADMIT, "Lookup.step")));
  m.begun = in.getBegun();
  if ((m.step == LookupStep::kAdmit) != (m.begun != 0)) {
    return Invalid("Lookup.begun", "set exactly when the step is admit");
  }
  return AttachMessage(std::move(m));
}

Result<AttachMessage> GetTicketStatus(s::TicketStatusResult::Reader in) {
  TicketStatusResult m{.request_id = in.getRequestId(), .status = {}};
  LookupTicketStatus& st = m.status;
  STRATA_ASSIGN_OR_RETURN(
      st.state,
      (GetEnum<LookupTicketState>(in.getState(), s::TicketState::READY, "TicketStatus.state")));
  st.pool_consumed = in.getPoolConsumed();
  st.admitted_consumed = in.getAdmittedConsumed();
  st.admissions = in.getAdmissions();
  st.answered_late = in.getAnsweredLate();
  st.retry_used = in.getRetryUsed();
  STRATA_RETURN_IF_ERROR(CheckTicketStatus(st));
  return AttachMessage(m);
}

Result<AttachMessage> GetFetch(s::FetchRequest::Reader in) {
  FetchRequest m;
  STRATA_ASSIGN_OR_RETURN(m.hit, GetHit(in.getHit()));
  m.ticket.ticket = JobId(in.getTicket());
  STRATA_ASSIGN_OR_RETURN(m.ticket.page_ids, GetIds<PageId>(in.getPageIds(), "Fetch.page_ids"));
  m.ticket.row_slot = StateSlot(in.getRowSlot());
  return AttachMessage(std::move(m));
}

Result<AttachMessage> GetStore(s::StoreRequest::Reader in) {
  PublishedCheckpoint c;
  c.checkpoint_id = in.getCheckpointId();
  STRATA_ASSIGN_OR_RETURN(c.key, GetKey(in.getKey(), "Store.key"));
  if (in.hasParent()) {
    STRATA_ASSIGN_OR_RETURN(c.parent, GetKey(in.getParent(), "Store.parent"));
  }
  auto bucket = in.getBucket();
  if (bucket.size() != c.bucket.size()) return Invalid("Store.bucket", "not 16 bytes");
  std::memcpy(c.bucket.data(), bucket.begin(), c.bucket.size());
  STRATA_ASSIGN_OR_RETURN(c.chain, GetIds<PageId>(in.getChain(), "Store.chain"));
  c.tail_pages = in.getTailPages();
  c.row_slot = StateSlot(in.getRowSlot());
  c.generation = in.getGeneration();
  return AttachMessage(StoreRequest{std::move(c)});
}

Result<AttachMessage> GetEvent(s::Event::Reader in) {
  StoreEvent e;
  STRATA_ASSIGN_OR_RETURN(
      e.kind, (GetEnum<StoreEvent::Kind>(in.getKind(), s::EventKind::EXPORT_ENDED, "Event.kind")));
  e.checkpoint_id = in.getCheckpointId();
  e.ticket = JobId(in.getTicket());
  STRATA_ASSIGN_OR_RETURN(e.key, GetKey(in.getKey(), "Event.key"));
  STRATA_RETURN_IF_ERROR(GetStatus(in.getStatusCode(), in.getErrorText(), "Event", &e.status));
  e.bytes = in.getBytes();
  e.export_id = ExportId(in.getExportId());
  e.generation = in.getGeneration();
  e.start_page = in.getStartPage();
  return AttachMessage(std::move(e));
}

Result<AttachMessage> GetExportPinned(s::ExportPinned::Reader in) {
  ExportPinnedReply m;
  m.export_id = ExportId(in.getExportId());
  m.description.start_page = in.getStartPage();
  STRATA_ASSIGN_OR_RETURN(m.description.pages, GetIds<PageId>(in.getPages(), "ExportPinned.pages"));
  m.description.row_slot = StateSlot(in.getRowSlot());
  return AttachMessage(std::move(m));
}

Result<AttachMessage> GetExportRefused(s::ExportRefused::Reader in) {
  ExportRefusedReply m;
  m.export_id = ExportId(in.getExportId());
  STRATA_ASSIGN_OR_RETURN(m.reason,
                          (GetEnum<ExportRefusal>(in.getReason(), s::ExportRefusal::NO_HEADROOM,
                                                  "ExportRefused.reason")));
  return AttachMessage(m);
}

Result<AttachMessage> GetEvicted(s::Evicted::Reader in) {
  auto notices = in.getNotices();
  STRATA_RETURN_IF_ERROR(CheckCount(notices.size(), kAttachNoticesMax, "Evicted.notices"));
  EvictedNotices m;
  m.notices.reserve(notices.size());
  for (auto n : notices) {
    EvictionNotice notice;
    STRATA_ASSIGN_OR_RETURN(notice.key, GetKey(n.getKey(), "Evicted.notices.key"));
    notice.generation = n.getGeneration();
    m.notices.push_back(notice);
  }
  return AttachMessage(std::move(m));
}

Result<AttachMessage> Get(s::Envelope::Reader env) {
  using W = s::Envelope::Which;
  switch (env.which()) {
    case W::HELLO: return GetHello(env.getHello());
    case W::HELLO_ACCEPT: {
      HelloAccept accept;
      accept.protocol_version = env.getHelloAccept().getProtocolVersion();
      STRATA_ASSIGN_OR_RETURN(accept.rendezvous,
                              GetRendezvous(env.getHelloAccept(), "HelloAccept.rendezvous"));
      return AttachMessage(std::move(accept));
    }
    case W::HELLO_REJECT: {
      STRATA_ASSIGN_OR_RETURN(auto reason,
                              GetText(env.getHelloReject().getReason(), "HelloReject.reason"));
      return AttachMessage(HelloReject{std::move(reason)});
    }
    case W::LOOKUP: return GetLookup(env.getLookup());
    case W::LOOKUP_RESULT: {
      auto in = env.getLookupResult();
      LookupResult m{.request_id = in.getRequestId(), .hit = std::nullopt};
      if (in.getFound()) {
        STRATA_ASSIGN_OR_RETURN(m.hit, GetHit(in.getHit()));
      }
      return AttachMessage(std::move(m));
    }
    case W::FETCH: return GetFetch(env.getFetch());
    case W::STORE: return GetStore(env.getStore());
    case W::STORE_ANSWER: {
      auto in = env.getStoreAnswer();
      StoreAnswer m{.checkpoint_id = in.getCheckpointId()};
      STRATA_ASSIGN_OR_RETURN(m.outcome,
                              (GetEnum<StoreOutcome>(in.getOutcome(), s::StoreOutcome::DISABLED,
                                                     "StoreAnswer.outcome")));
      return AttachMessage(m);
    }
    case W::EVENT: return GetEvent(env.getEvent());
    case W::CLOSE: return AttachMessage(CloseRequest{});
    case W::END_LOOKUP: return AttachMessage(EndLookup{env.getEndLookup().getBegun()});
    case W::TICKET_STATUS: {
      auto in = env.getTicketStatus();
      return AttachMessage(
          TicketStatusRequest{.request_id = in.getRequestId(), .begun = in.getBegun()});
    }
    case W::TICKET_STATUS_RESULT: return GetTicketStatus(env.getTicketStatusResult());
    case W::EVICTED: return GetEvicted(env.getEvicted());
    case W::EVICTIONS_LOST: return AttachMessage(EvictionsLost{});
    case W::EXPORT_PINNED: return GetExportPinned(env.getExportPinned());
    case W::EXPORT_REFUSED: return GetExportRefused(env.getExportRefused());
    case W::CLOSE_DONE: {
      auto in = env.getCloseDone();
      CloseDone m;
      STRATA_RETURN_IF_ERROR(
          GetStatus(in.getStatusCode(), in.getErrorText(), "CloseDone", &m.status));
      return AttachMessage(std::move(m));
    }
  }
  return Invalid("Envelope",
                 fmt::format("unknown message type {}", static_cast<unsigned>(env.which())));
}

}  // namespace

Result<AttachMessage> DecodeAttachFrame(std::span<const uint64_t> words) {
  return wire::codec::DecodeEnvelope<s::Envelope, AttachMessage>(
      words, kAttachFrameBytesMax, "attach frame",
      [](s::Envelope::Reader env) { return Get(env); });
}

}  // namespace strata::attach
