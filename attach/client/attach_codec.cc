#include "attach/client/attach_codec.h"

#include <fmt/format.h>

#include <cstring>
#include <new>

#include "wire/attach.capnp.h"
#include "wire/codec_support.h"
#include "wire/messages.h"

namespace strata::attach {
namespace {

namespace s = wire::attach_schema;
using wire::codec::AsData;
using wire::codec::AsText;
using wire::codec::CheckCount;
using wire::codec::Invalid;
using wire::codec::PutKey;

void Put(s::Hit::Builder out, const HostHit& hit) {
  PutKey(out.initEndpoint(), hit.endpoint);
  auto chain = out.initChain(static_cast<unsigned>(hit.chain.size()));
  for (unsigned i = 0; i < chain.size(); ++i) PutKey(chain[i], hit.chain[i]);
  out.setSkipPages(hit.skip_pages);
  out.setPages(hit.pages);
  out.setBytes(hit.bytes);
  out.setTokensGained(hit.tokens_gained);
  out.setTier(hit.tier == Tier::kDisk ? s::Tier::DISK : s::Tier::MEMORY);
  out.setPooled(hit.pooled);
}

template <typename Builder>
void PutIds(Builder list, const auto& ids) {
  for (unsigned i = 0; i < list.size(); ++i) list.set(i, ids[i].value);
}

// Rank zero's rendezvous into a Hello or a HelloAccept (empty: nothing set).
template <typename Builder>
Status PutRendezvous(Builder out, const AttachRendezvous& r, std::string_view field) {
  if (r.address.size() > kAttachTextBytesMax || r.secret.size() > kAttachTextBytesMax) {
    return Invalid(field, "rendezvous over the limit");
  }
  if (r.empty()) return Status::Ok();
  out.setRendezvousAddress(AsText(r.address));
  out.setJobSecret(
      capnp::Data::Reader(reinterpret_cast<const uint8_t*>(r.secret.data()), r.secret.size()));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const AttachHello& m) {
  if (m.runtime_id.size() > kAttachTextBytesMax || m.model_identity.size() > kAttachTextBytesMax) {
    return Invalid("Hello", "identity text over the limit");
  }
  STRATA_RETURN_IF_ERROR(PutRendezvous(env.initHello(), m.rendezvous, "Hello"));
  STRATA_RETURN_IF_ERROR(CheckCount(m.ranks.size(), kAttachRanksMax, "Hello.ranks"));
  auto out = env.getHello();
  out.setProtocolVersion(m.protocol_version);
  out.setRuntimeId(AsText(m.runtime_id));
  out.setModelIdentity(AsText(m.model_identity));
  out.setStateMode(static_cast<s::StateMode>(m.state_mode));
  out.setPageTokens(m.page_tokens);
  out.setPlaneHandle(static_cast<s::PlaneHandle>(m.plane_handle));
  const bool ipc = m.plane_handle == PlaneHandleKind::kCudaIpc;
  if (m.ipc_planes.size() != (ipc ? AllocationCount(m) : 0)) {
    return Invalid("Hello.ipc_planes", ipc ? "not one IPC handle per allocation"
                                           : "IPC handles without plane_handle cudaIpc");
  }
  size_t next_ipc = 0;
  auto ranks = out.initRanks(static_cast<unsigned>(m.ranks.size()));
  for (unsigned r = 0; r < ranks.size(); ++r) {
    const auto& allocs = m.ranks[r];
    STRATA_RETURN_IF_ERROR(
        CheckCount(allocs.size(), kAttachAllocationsPerRankMax, "Hello.allocations"));
    auto list = ranks[r].initAllocations(static_cast<unsigned>(allocs.size()));
    for (unsigned i = 0; i < list.size(); ++i) {
      if (allocs[i].name.size() > kAttachTextBytesMax)
        return Invalid("Allocation.name", "too long");
      list[i].setName(AsText(allocs[i].name));
      list[i].setGroup(allocs[i].group == AllocationGroup::kStateRows
                           ? s::AllocationGroup::STATE_ROWS
                           : s::AllocationGroup::KV_PAGES);
      list[i].setUnitBytes(allocs[i].unit_bytes);
      list[i].setCount(allocs[i].count);
      if (ipc) {
        const IpcPlane& p = m.ipc_planes[next_ipc++];
        list[i].setIpcHandle(capnp::Data::Reader(p.handle.data(), p.handle.size()));
        list[i].setIpcOffset(p.offset);
      }
    }
  }
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const HelloAccept& m) {
  auto out = env.initHelloAccept();
  out.setProtocolVersion(m.protocol_version);
  return PutRendezvous(out, m.rendezvous, "HelloAccept");
}

Status Put(s::Envelope::Builder env, const HelloReject& m) {
  env.initHelloReject().setReason(AsText(m.reason.substr(0, kAttachTextBytesMax)));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const LookupRequest& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.tokens.size(), kAttachTokensMax, "Lookup.tokens"));
  auto out = env.initLookup();
  out.setRequestId(m.request_id);
  auto tokens = out.initTokens(static_cast<unsigned>(m.tokens.size()));
  for (unsigned i = 0; i < tokens.size(); ++i) tokens.set(i, m.tokens[i]);
  out.setResidentTokens(m.resident_tokens);
  out.setBefore(m.before);
  out.setStep(static_cast<s::LookupStep>(m.step));
  out.setBegun(m.begun);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const EndLookup& m) {
  env.initEndLookup().setBegun(m.begun);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const TicketStatusRequest& m) {
  auto out = env.initTicketStatus();
  out.setRequestId(m.request_id);
  out.setBegun(m.begun);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const TicketStatusResult& m) {
  STRATA_RETURN_IF_ERROR(CheckTicketStatus(m.status));
  auto out = env.initTicketStatusResult();
  out.setRequestId(m.request_id);
  out.setState(static_cast<s::TicketState>(m.status.state));
  out.setPoolConsumed(m.status.pool_consumed);
  out.setAdmittedConsumed(m.status.admitted_consumed);
  out.setAdmissions(m.status.admissions);
  out.setAnsweredLate(m.status.answered_late);
  out.setRetryUsed(m.status.retry_used);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const LookupResult& m) {
  auto out = env.initLookupResult();
  out.setRequestId(m.request_id);
  out.setFound(m.hit.has_value());
  if (m.hit) {
    STRATA_RETURN_IF_ERROR(CheckCount(m.hit->chain.size(), kAttachChainMax, "Hit.chain"));
    Put(out.initHit(), *m.hit);
  }
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const FetchRequest& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.hit.chain.size(), kAttachChainMax, "Hit.chain"));
  STRATA_RETURN_IF_ERROR(CheckCount(m.ticket.page_ids.size(), kAttachChainMax, "Fetch.page_ids"));
  auto out = env.initFetch();
  Put(out.initHit(), m.hit);
  out.setTicket(m.ticket.ticket.value);
  PutIds(out.initPageIds(static_cast<unsigned>(m.ticket.page_ids.size())), m.ticket.page_ids);
  out.setRowSlot(m.ticket.row_slot.value);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const StoreRequest& m) {
  const PublishedCheckpoint& c = m.checkpoint;
  STRATA_RETURN_IF_ERROR(CheckCount(c.chain.size(), kAttachChainMax, "Store.chain"));
  auto out = env.initStore();
  out.setCheckpointId(c.checkpoint_id);
  PutKey(out.initKey(), c.key);
  if (c.parent) PutKey(out.initParent(), *c.parent);
  out.setBucket(AsData(c.bucket));
  PutIds(out.initChain(static_cast<unsigned>(c.chain.size())), c.chain);
  out.setTailPages(c.tail_pages);
  out.setRowSlot(c.row_slot.value);
  out.setGeneration(c.generation);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const StoreAnswer& m) {
  auto out = env.initStoreAnswer();
  out.setCheckpointId(m.checkpoint_id);
  out.setOutcome(static_cast<s::StoreOutcome>(m.outcome));
  return Status::Ok();
}

// The schema's enums name the C++ ones in the same order.
static_assert(static_cast<unsigned>(s::EventKind::EXPORT_ENDED) ==
              static_cast<unsigned>(StoreEvent::Kind::kExportEnded));
static_assert(static_cast<unsigned>(s::ExportRefusal::NO_HEADROOM) ==
              static_cast<unsigned>(ExportRefusal::kNoHeadroom));

Status Put(s::Envelope::Builder env, const StoreEvent& m) {
  auto out = env.initEvent();
  out.setKind(static_cast<s::EventKind>(m.kind));
  out.setCheckpointId(m.checkpoint_id);
  out.setTicket(m.ticket.value);
  PutKey(out.initKey(), m.key);
  out.setStatusCode(static_cast<uint8_t>(m.status.code()));
  out.setErrorText(AsText(m.status.message().substr(0, kAttachTextBytesMax)));
  out.setBytes(m.bytes);
  out.setExportId(m.export_id.value);
  out.setGeneration(m.generation);
  out.setStartPage(m.start_page);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const EvictedNotices& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.notices.size(), kAttachNoticesMax, "Evicted.notices"));
  auto notices = env.initEvicted().initNotices(static_cast<unsigned>(m.notices.size()));
  for (unsigned i = 0; i < notices.size(); ++i) {
    PutKey(notices[i].initKey(), m.notices[i].key);
    notices[i].setGeneration(m.notices[i].generation);
  }
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const EvictionsLost&) {
  env.setEvictionsLost();
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const ExportPinnedReply& m) {
  const ExportDescription& d = m.description;
  STRATA_RETURN_IF_ERROR(CheckCount(d.pages.size(), kAttachChainMax, "ExportPinned.pages"));
  auto out = env.initExportPinned();
  out.setExportId(m.export_id.value);
  out.setStartPage(d.start_page);
  PutIds(out.initPages(static_cast<unsigned>(d.pages.size())), d.pages);
  out.setRowSlot(d.row_slot.value);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const ExportRefusedReply& m) {
  auto out = env.initExportRefused();
  out.setExportId(m.export_id.value);
  out.setReason(static_cast<s::ExportRefusal>(m.reason));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const CloseRequest&) {
  env.setClose();
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const CloseDone& m) {
  auto out = env.initCloseDone();
  out.setStatusCode(static_cast<uint8_t>(m.status.code()));
  out.setErrorText(AsText(m.status.message().substr(0, kAttachTextBytesMax)));
  return Status::Ok();
}

}  // namespace

Status CheckTicketStatus(const LookupTicketStatus& st) {
  if (st.state > LookupTicketState::kReady) {
    return Invalid("TicketStatus.state",
                   fmt::format("unknown value {}", static_cast<unsigned>(st.state)));
  }
  if (st.state != LookupTicketState::kReady && st.pool_consumed != 0) {
    return Invalid("TicketStatus.poolConsumed", "set on a ticket that is not ready");
  }
  return Status::Ok();
}
size_t AllocationCount(const AttachHello& hello) {
  size_t n = 0;
  for (const auto& rank : hello.ranks) n += rank.size();
  return n;
}

Result<wire::Frame> EncodeAttachFrame(const AttachMessage& message) {
  return wire::codec::EncodeEnvelope<s::Envelope>(
      kAttachFrameBytesMax, "an attach message", [&](s::Envelope::Builder env) {
        return std::visit([&](const auto& m) { return Put(env, m); }, message);
      });
}

}  // namespace strata::attach
