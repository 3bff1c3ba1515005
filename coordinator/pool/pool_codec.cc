#include "coordinator/pool/pool_codec.h"

#include <fmt/format.h>

#include <cstring>
#include <new>

#include "wire/codec_support.h"
#include "wire/messages.h"
#include "wire/pool.capnp.h"

namespace strata::pool {
namespace {

namespace s = wire::pool_schema;
using wire::codec::AsData;
using wire::codec::AsText;
using wire::codec::CheckCount;
using wire::codec::Invalid;
using wire::codec::PutKey;

// ---- encoding --------------------------------------------------------------

Status PutKeys(capnp::List<s::Key>::Builder list, std::span<const PrefixKey> keys) {
  for (unsigned i = 0; i < list.size(); ++i) PutKey(list[i], keys[i]);
  return Status::Ok();
}

void PutSlots(capnp::List<uint32_t>::Builder list, std::span<const SlotId> slots) {
  for (unsigned i = 0; i < list.size(); ++i) list.set(i, slots[i].value);
}

void PutOutcome(s::Outcome::Builder out, uint64_t request_id, const Status& status,
                uint64_t progress_epoch) {
  out.setRequestId(request_id);
  out.setProgressEpoch(progress_epoch);
  out.setStatusCode(static_cast<uint8_t>(status.code()));
  out.setErrorText(AsText(status.message().substr(0, kPoolTextBytesMax)));
}

Status Put(s::Envelope::Builder env, const PoolHello& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.instance_sources.size(), kPoolSourcesMax, "Hello.sources"));
  STRATA_RETURN_IF_ERROR(CheckCount(m.rank_plane_bytes.size(), kPoolRanksMax, "Hello.ranks"));
  auto out = env.initHello();
  out.setProtocolVersion(m.protocol_version);
  auto sources = out.initInstanceSources(static_cast<unsigned>(m.instance_sources.size()));
  for (unsigned i = 0; i < sources.size(); ++i) {
    if (m.instance_sources[i].size() > kPoolTextBytesMax) return Invalid("Hello.sources", "long");
    sources.set(i, AsText(m.instance_sources[i]));
  }
  out.setModelIdentity(AsData(m.model_identity));
  out.setLayout(AsData(m.layout));
  auto ranks = out.initRanks(static_cast<unsigned>(m.rank_plane_bytes.size()));
  for (unsigned r = 0; r < ranks.size(); ++r) {
    const std::vector<uint64_t>& planes = m.rank_plane_bytes[r];
    STRATA_RETURN_IF_ERROR(CheckCount(planes.size(), kPoolPlanesPerRankMax, "Hello.planes"));
    auto list = ranks[r].initUnitBytes(static_cast<unsigned>(planes.size()));
    for (unsigned i = 0; i < list.size(); ++i) list.set(i, planes[i]);
  }
  out.setPageTokens(m.page_tokens);
  if (m.proof) out.setProof(AsData(*m.proof));
  if (m.client_nonce) out.setClientNonce(AsData(m.client_nonce->bytes));
  out.setDataChannel(m.data_channel);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolChallenge& m) {
  env.initChallenge().setNonce(AsData(m.nonce.bytes));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolHelloAccept& m) {
  if (m.pool_name.size() > kPoolTextBytesMax) return Invalid("HelloAccept.poolName", "long");
  if (m.arena_path.size() > kPoolTextBytesMax) return Invalid("HelloAccept.arenaPath", "long");
  auto out = env.initHelloAccept();
  out.setProtocolVersion(m.protocol_version);
  out.setPoolName(AsText(m.pool_name));
  out.setGeneration(m.generation);
  out.setScope(AsData(m.scope));
  out.setInstance(AsData(m.instance));
  out.setSlotBytes(m.slot_bytes);
  out.setSlotCount(m.slot_count);
  out.setArenaPath(AsText(m.arena_path));
  if (m.proof) out.setProof(AsData(*m.proof));
  if (m.data_token) out.setDataToken(AsData(*m.data_token));
  out.setWindowBytes(m.window_bytes);
  out.setWindowCredits(m.window_credits);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolHelloReject& m) {
  env.initHelloReject().setReason(AsText(m.reason.substr(0, kPoolTextBytesMax)));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolLookup& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.tokens.size(), kPoolTokensMax, "Lookup.tokens"));
  auto out = env.initLookup();
  out.setRequestId(m.request_id);
  auto tokens = out.initTokens(static_cast<unsigned>(m.tokens.size()));
  for (unsigned i = 0; i < tokens.size(); ++i) tokens.set(i, m.tokens[i]);
  out.setResidentTokens(m.resident_tokens);
  out.setBefore(m.before);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolLookupAnswer& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.chain.size(), kPoolChainMax, "LookupAnswer.chain"));
  if (m.tail_pages.size() != m.chain.size()) {
    return Status::InvalidArgument(
        "LookupAnswer.tailPages: " + std::to_string(m.tail_pages.size()) + " for a chain of " +
        std::to_string(m.chain.size()));
  }
  auto out = env.initLookupAnswer();
  PutOutcome(out.initOutcome(), m.request_id, m.status, m.progress_epoch);
  out.setBaseConsumed(m.base_consumed);
  auto tails = out.initTailPages(static_cast<unsigned>(m.tail_pages.size()));
  for (unsigned i = 0; i < tails.size(); ++i) tails.set(i, m.tail_pages[i]);
  return PutKeys(out.initChain(static_cast<unsigned>(m.chain.size())), m.chain);
}

Status Put(s::Envelope::Builder env, const PoolPut& m) {
  auto out = env.initPut();
  out.setRequestId(m.request_id);
  PutKey(out.initKey(), m.put.key);
  if (m.put.parent) PutKey(out.initParent(), *m.put.parent);
  out.setBucket(AsData(m.put.bucket_digest));
  out.setBytes(m.put.bytes);
  out.setKind(m.put.kind == PutKind::kOwn ? s::PutKind::OWN : s::PutKind::CASCADE);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolPutAnswer& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.slots.size(), kPoolSlotsPerAnswerMax, "PutAnswer.slots"));
  auto out = env.initPutAnswer();
  PutOutcome(out.initOutcome(), m.request_id, m.status, m.progress_epoch);
  out.setPut(m.put.value);
  PutSlots(out.initSlots(static_cast<unsigned>(m.slots.size())), m.slots);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolCommit& m) {
  auto out = env.initCommit();
  out.setRequestId(m.request_id);
  out.setPut(m.put.value);
  out.setChecksum(m.checksum);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolAbort& m) {
  auto out = env.initAbort();
  out.setRequestId(m.request_id);
  out.setPut(m.put.value);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolClaim& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.chain.size(), kPoolChainMax, "Claim.chain"));
  auto out = env.initClaim();
  out.setRequestId(m.request_id);
  return PutKeys(out.initChain(static_cast<unsigned>(m.chain.size())), m.chain);
}

Status Put(s::Envelope::Builder env, const PoolClaimAnswer& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.records.size(), kPoolChainMax, "ClaimAnswer.records"));
  auto out = env.initClaimAnswer();
  PutOutcome(out.initOutcome(), m.request_id, m.status, m.progress_epoch);
  out.setClaim(m.claim.value);
  out.setBudgetMs(m.budget_ms);
  auto records = out.initRecords(static_cast<unsigned>(m.records.size()));
  for (unsigned i = 0; i < records.size(); ++i) {
    const ClaimedRecord& r = m.records[i];
    STRATA_RETURN_IF_ERROR(CheckCount(r.slots.size(), kPoolSlotsPerAnswerMax, "Record.slots"));
    PutKey(records[i].initKey(), r.key);
    records[i].setBytes(r.bytes);
    records[i].setChecksum(r.checksum);
    PutSlots(records[i].initSlots(static_cast<unsigned>(r.slots.size())), r.slots);
  }
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolRelease& m) {
  auto out = env.initRelease();
  out.setRequestId(m.request_id);
  out.setClaim(m.claim.value);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolDone& m) {
  PutOutcome(env.initDone(), m.request_id, m.status, m.progress_epoch);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolDataHello& m) {
  auto out = env.initDataHello();
  out.setInstance(AsData(m.instance));
  out.setToken(AsData(m.token));
  out.setProof(AsData(m.proof));
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolDataAccept& m) {
  PutOutcome(env.initDataAccept(), 0, m.status, 0);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolSlotWrite& m) {
  auto out = env.initSlotWrite();
  out.setRequestId(m.request_id);
  out.setPut(m.put.value);
  out.setOffset(m.offset);
  out.setBytes(m.bytes);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolSlotRead& m) {
  auto out = env.initSlotRead();
  out.setRequestId(m.request_id);
  out.setClaim(m.claim.value);
  out.setRecord(m.record);
  out.setOffset(m.offset);
  out.setBytes(m.bytes);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolSlotData& m) {
  auto out = env.initSlotData();
  PutOutcome(out.initOutcome(), m.request_id, m.status, m.progress_epoch);
  out.setBytes(m.bytes);
  return Status::Ok();
}

void PutHoldings(capnp::List<s::Holding>::Builder list, std::span<const Holding> holdings) {
  for (unsigned i = 0; i < list.size(); ++i) {
    PutKey(list[i].initKey(), holdings[i].key);
    list[i].setGeneration(holdings[i].generation);
    list[i].setBucket(AsData(holdings[i].bucket_digest));
  }
}

Status Put(s::Envelope::Builder env, const PoolAnnounce& m) {
  STRATA_RETURN_IF_ERROR(CheckCount(m.held.size(), kPoolHoldingsPerAnnounceMax, "Announce.held"));
  STRATA_RETURN_IF_ERROR(
      CheckCount(m.withdrawn.size(), kPoolHoldingsPerAnnounceMax, "Announce.withdrawn"));
  auto out = env.initAnnounce();
  out.setRequestId(m.request_id);
  out.setReset(m.reset);
  PutHoldings(out.initHeld(static_cast<unsigned>(m.held.size())), m.held);
  PutHoldings(out.initWithdrawn(static_cast<unsigned>(m.withdrawn.size())), m.withdrawn);
  out.setPageRecordBytes(m.sizes.page_record_bytes);
  out.setRowSegmentBytes(m.sizes.row_segment_bytes);
  return Status::Ok();
}

Status Put(s::Envelope::Builder env, const PoolExportAsk& m) {
  const ExportRequest& r = m.ask;
  STRATA_RETURN_IF_ERROR(CheckCount(r.slots.size(), kPoolSlotsPerAnswerMax, "ExportAsk.slots"));
  auto out = env.initExportAsk();
  out.setPut(r.put.value);
  PutKey(out.initKey(), r.key);
  out.setGeneration(r.generation);
  if (r.parent) PutKey(out.initParent(), *r.parent);
  out.setBucket(AsData(r.bucket_digest));
  out.setStartPage(r.start_page);
  out.setBytes(r.bytes);
  PutSlots(out.initSlots(static_cast<unsigned>(r.slots.size())), r.slots);
  return Status::Ok();
}

}  // namespace

Result<wire::Frame> EncodePoolFrame(const PoolMessage& message) {
  return wire::codec::EncodeEnvelope<s::Envelope>(
      kPoolFrameBytesMax, "a pool message", [&](s::Envelope::Builder env) {
        return std::visit([&](const auto& m) { return Put(env, m); }, message);
      });
}

}  // namespace strata::pool
