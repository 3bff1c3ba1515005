// DecodePoolFrame (pool_codec.h): every field is checked before it is used.
#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "coordinator/pool/pool_codec.h"
#include "coordinator/pool/pool_record_image.h"
#include "wire/codec_support.h"
#include "wire/messages.h"
#include "wire/pool.capnp.h"

namespace strata::pool {
namespace {

namespace s = wire::pool_schema;
using W = s::Envelope::Which;
using wire::codec::CheckCount;
using wire::codec::GetKey;
using wire::codec::Invalid;

Result<std::string> GetText(capnp::Text::Reader text, std::string_view field) {
  return wire::codec::GetText(text, kPoolTextBytesMax, field);
}

template <size_t N>
Status GetDigest(capnp::Data::Reader data, std::string_view field, std::array<uint8_t, N>* out) {
  STRATA_ASSIGN_OR_RETURN(*out, wire::codec::GetBytes<N>(data, field));
  return Status::Ok();
}

Result<std::vector<PrefixKey>> GetKeys(capnp::List<s::Key>::Reader in, std::string_view field) {
  STRATA_RETURN_IF_ERROR(CheckCount(in.size(), kPoolChainMax, field));
  std::vector<PrefixKey> keys;
  keys.reserve(in.size());
  for (auto k : in) {
    STRATA_ASSIGN_OR_RETURN(PrefixKey key, GetKey(k, field));
    keys.push_back(key);
  }
  return keys;
}

Result<std::vector<SlotId>> GetSlots(capnp::List<uint32_t>::Reader in, std::string_view field) {
  STRATA_RETURN_IF_ERROR(CheckCount(in.size(), kPoolSlotsPerAnswerMax, field));
  std::vector<SlotId> slots;
  slots.reserve(in.size());
  for (uint32_t v : in) slots.emplace_back(v);
  return slots;
}

// A lookup answer's sizes: one tail per key, and a base below the chain.
Status GetChainSizes(s::LookupAnswer::Reader in, PoolLookupAnswer& m) {
  const auto tails = in.getTailPages();
  if (tails.size() != m.chain.size()) {
    return Invalid("LookupAnswer.tailPages",
                   fmt::format("{} for a chain of {}", tails.size(), m.chain.size()));
  }
  m.tail_pages.reserve(tails.size());
  for (uint32_t tail : tails) m.tail_pages.push_back(tail);
  m.base_consumed = in.getBaseConsumed();
  if (!m.chain.empty() && m.base_consumed >= m.chain.front().consumed) {
    return Invalid("LookupAnswer.baseConsumed", "not below the chain's first record");
  }
  return Status::Ok();
}

// The outcome's request id, status and progress epoch, into `m`.
template <typename Answer>
Status GetOutcome(s::Outcome::Reader in, std::string_view field, Answer& m) {
  m.request_id = in.getRequestId();
  m.progress_epoch = in.getProgressEpoch();
  return wire::codec::GetStatus(in.getStatusCode(), in.getErrorText(), kPoolTextBytesMax, field,
                                &m.status);
}

Result<PoolMessage> GetHello(s::Hello::Reader in) {
  PoolHello m;
  m.protocol_version = in.getProtocolVersion();
  // Each get of a list counts its words against the traversal limit: once.
  const auto sources = in.getInstanceSources();
  STRATA_RETURN_IF_ERROR(CheckCount(sources.size(), kPoolSourcesMax, "Hello.sources"));
  for (auto text : sources) {
    STRATA_ASSIGN_OR_RETURN(std::string source, GetText(text, "Hello.sources"));
    m.instance_sources.push_back(std::move(source));
  }
  STRATA_RETURN_IF_ERROR(
      GetDigest(in.getModelIdentity(), "Hello.modelIdentity", &m.model_identity));
  STRATA_RETURN_IF_ERROR(GetDigest(in.getLayout(), "Hello.layout", &m.layout));
  const auto ranks = in.getRanks();
  STRATA_RETURN_IF_ERROR(CheckCount(ranks.size(), kPoolRanksMax, "Hello.ranks"));
  for (auto rank : ranks) {
    const auto unit_bytes = rank.getUnitBytes();
    STRATA_RETURN_IF_ERROR(CheckCount(unit_bytes.size(), kPoolPlanesPerRankMax, "Hello.planes"));
    std::vector<uint64_t> planes;
    planes.reserve(unit_bytes.size());
    for (uint64_t bytes : unit_bytes) planes.push_back(bytes);
    m.rank_plane_bytes.push_back(std::move(planes));
  }
  m.page_tokens = in.getPageTokens();
  if (in.hasProof()) {
    HelloProof proof{};
    STRATA_RETURN_IF_ERROR(GetDigest(in.getProof(), "Hello.proof", &proof));
    m.proof = proof;
  }
  if (in.hasClientNonce()) {
    Nonce nonce;
    STRATA_RETURN_IF_ERROR(GetDigest(in.getClientNonce(), "Hello.clientNonce", &nonce.bytes));
    m.client_nonce = nonce;
  }
  m.data_channel = in.getDataChannel();
  return PoolMessage(std::move(m));
}

Result<PoolMessage> GetHelloAccept(s::HelloAccept::Reader in) {
  PoolHelloAccept m;
  m.protocol_version = in.getProtocolVersion();
  STRATA_ASSIGN_OR_RETURN(m.pool_name, GetText(in.getPoolName(), "HelloAccept.poolName"));
  m.generation = in.getGeneration();
  STRATA_RETURN_IF_ERROR(GetDigest(in.getScope(), "HelloAccept.scope", &m.scope));
  STRATA_RETURN_IF_ERROR(GetDigest(in.getInstance(), "HelloAccept.instance", &m.instance));
  m.slot_bytes = in.getSlotBytes();
  m.slot_count = in.getSlotCount();
  STRATA_ASSIGN_OR_RETURN(m.arena_path, GetText(in.getArenaPath(), "HelloAccept.arenaPath"));
  if (in.hasProof()) {
    HelloProof proof{};
    STRATA_RETURN_IF_ERROR(GetDigest(in.getProof(), "HelloAccept.proof", &proof));
    m.proof = proof;
  }
  if (in.hasDataToken()) {
    DataToken token{};
    STRATA_RETURN_IF_ERROR(GetDigest(in.getDataToken(), "HelloAccept.dataToken", &token));
    m.data_token = token;
  }
  m.window_bytes = in.getWindowBytes();
  m.window_credits = in.getWindowCredits();
  if (m.data_token &&
      (m.window_bytes == 0 || m.window_bytes > kPoolWindowBytesMax || m.window_credits == 0)) {
    return Invalid("HelloAccept.windowBytes",
                   fmt::format("windows of {} bytes, {} credits (1..{} bytes, at least 1 credit)",
                               m.window_bytes, m.window_credits, kPoolWindowBytesMax));
  }
  return PoolMessage(std::move(m));
}

Result<PoolMessage> GetDataHello(s::DataHello::Reader in) {
  PoolDataHello m;
  STRATA_RETURN_IF_ERROR(GetDigest(in.getInstance(), "DataHello.instance", &m.instance));
  STRATA_RETURN_IF_ERROR(GetDigest(in.getToken(), "DataHello.token", &m.token));
  STRATA_RETURN_IF_ERROR(GetDigest(in.getProof(), "DataHello.proof", &m.proof));
  return PoolMessage(m);
}

// A window's size: at most kPoolWindowBytesMax (what the reader allocates).
Status CheckWindow(uint64_t bytes, std::string_view field) {
  if (bytes <= kPoolWindowBytesMax) return Status::Ok();
  return Invalid(field,
                 fmt::format("{} bytes, at most {} in one window", bytes, kPoolWindowBytesMax));
}

Result<PoolMessage> GetLookup(s::LookupRequest::Reader in) {
  // Each get of a list counts its words against the traversal limit: once.
  const auto tokens = in.getTokens();
  STRATA_RETURN_IF_ERROR(CheckCount(tokens.size(), kPoolTokensMax, "Lookup.tokens"));
  PoolLookup m;
  m.request_id = in.getRequestId();
  m.tokens.reserve(tokens.size());
  for (uint32_t token : tokens) m.tokens.push_back(token);
  m.resident_tokens = in.getResidentTokens();
  m.before = in.getBefore();
  return PoolMessage(std::move(m));
}

Result<PoolMessage> GetPut(s::PutRequest::Reader in) {
  PoolPut m;
  m.request_id = in.getRequestId();
  STRATA_ASSIGN_OR_RETURN(m.put.key, GetKey(in.getKey(), "Put.key"));
  if (in.hasParent()) {
    STRATA_ASSIGN_OR_RETURN(m.put.parent, GetKey(in.getParent(), "Put.parent"));
  }
  STRATA_RETURN_IF_ERROR(GetDigest(in.getBucket(), "Put.bucket", &m.put.bucket_digest));
  m.put.bytes = in.getBytes();
  switch (in.getKind()) {
    case s::PutKind::CASCADE: m.put.kind = PutKind::kCascade; break;
    case s::PutKind::OWN: m.put.kind = PutKind::kOwn; break;
    default:
      return Invalid("Put.kind",
                     fmt::format("unknown value {}", static_cast<unsigned>(in.getKind())));
  }
  return PoolMessage(m);
}

Result<PoolMessage> GetClaimAnswer(s::ClaimAnswer::Reader in) {
  PoolClaimAnswer m;
  STRATA_RETURN_IF_ERROR(GetOutcome(in.getOutcome(), "ClaimAnswer", m));
  m.claim = ClaimId(in.getClaim());
  m.budget_ms = in.getBudgetMs();
  const auto records = in.getRecords();
  STRATA_RETURN_IF_ERROR(CheckCount(records.size(), kPoolChainMax, "ClaimAnswer.records"));
  for (auto r : records) {
    ClaimedRecord record;
    STRATA_ASSIGN_OR_RETURN(record.key, GetKey(r.getKey(), "ClaimedRecord.key"));
    record.bytes = r.getBytes();
    record.checksum = r.getChecksum();
    STRATA_ASSIGN_OR_RETURN(record.slots, GetSlots(r.getSlots(), "ClaimedRecord.slots"));
    m.records.push_back(std::move(record));
  }
  return PoolMessage(std::move(m));
}

Result<std::vector<Holding>> GetHoldings(capnp::List<s::Holding>::Reader in,
                                         std::string_view field) {
  STRATA_RETURN_IF_ERROR(CheckCount(in.size(), kPoolHoldingsPerAnnounceMax, field));
  std::vector<Holding> out;
  out.reserve(in.size());
  for (auto h : in) {
    Holding holding;
    STRATA_ASSIGN_OR_RETURN(holding.key, GetKey(h.getKey(), field));
    holding.generation = h.getGeneration();
    if (h.hasBucket())
      STRATA_RETURN_IF_ERROR(GetDigest(h.getBucket(), field, &holding.bucket_digest));
    out.push_back(holding);
  }
  return out;
}

Result<PoolMessage> GetAnnounce(s::AnnounceRequest::Reader in) {
  PoolAnnounce m;
  m.request_id = in.getRequestId();
  m.reset = in.getReset();
  STRATA_ASSIGN_OR_RETURN(m.held, GetHoldings(in.getHeld(), "Announce.held"));
  STRATA_ASSIGN_OR_RETURN(m.withdrawn, GetHoldings(in.getWithdrawn(), "Announce.withdrawn"));
  m.sizes = ExportRecordSizes{.page_record_bytes = in.getPageRecordBytes(),
                              .row_segment_bytes = in.getRowSegmentBytes()};
  // Sizes an arena could never hold are refused here, before any arithmetic.
  if (m.sizes.page_record_bytes > kImageMaxPieceBytes ||
      m.sizes.row_segment_bytes > kImageMaxPieceBytes) {
    return Invalid("Announce.pageRecordBytes", "record sizes past 2^40 bytes");
  }
  return PoolMessage(std::move(m));
}

Result<PoolMessage> GetExportAsk(s::ExportAsk::Reader in) {
  ExportRequest r;
  r.put = PutId(in.getPut());
  STRATA_ASSIGN_OR_RETURN(r.key, GetKey(in.getKey(), "ExportAsk.key"));
  r.generation = in.getGeneration();
  if (in.hasParent()) {
    STRATA_ASSIGN_OR_RETURN(r.parent, GetKey(in.getParent(), "ExportAsk.parent"));
    if (r.parent->consumed >= r.key.consumed) {
      return Invalid("ExportAsk.parent", "not below the key");
    }
  }
  STRATA_RETURN_IF_ERROR(GetDigest(in.getBucket(), "ExportAsk.bucket", &r.bucket_digest));
  r.start_page = in.getStartPage();
  r.bytes = in.getBytes();
  STRATA_ASSIGN_OR_RETURN(r.slots, GetSlots(in.getSlots(), "ExportAsk.slots"));
  return PoolMessage(PoolExportAsk{.ask = std::move(r)});
}

Result<PoolMessage> Get(s::Envelope::Reader env) {
  switch (env.which()) {
    case W::HELLO: return GetHello(env.getHello());
    case W::HELLO_ACCEPT: return GetHelloAccept(env.getHelloAccept());
    case W::CHALLENGE: {
      PoolChallenge m;
      STRATA_RETURN_IF_ERROR(
          GetDigest(env.getChallenge().getNonce(), "Challenge.nonce", &m.nonce.bytes));
      return PoolMessage(m);
    }
    case W::HELLO_REJECT: {
      STRATA_ASSIGN_OR_RETURN(std::string reason,
                              GetText(env.getHelloReject().getReason(), "HelloReject.reason"));
      return PoolMessage(PoolHelloReject{std::move(reason)});
    }
    case W::LOOKUP: return GetLookup(env.getLookup());
    case W::LOOKUP_ANSWER: {
      PoolLookupAnswer m;
      auto in = env.getLookupAnswer();
      STRATA_RETURN_IF_ERROR(GetOutcome(in.getOutcome(), "LookupAnswer", m));
      STRATA_ASSIGN_OR_RETURN(m.chain, GetKeys(in.getChain(), "LookupAnswer.chain"));
      STRATA_RETURN_IF_ERROR(GetChainSizes(in, m));
      return PoolMessage(std::move(m));
    }
    case W::PUT: return GetPut(env.getPut());
    case W::PUT_ANSWER: {
      PoolPutAnswer m;
      auto in = env.getPutAnswer();
      STRATA_RETURN_IF_ERROR(GetOutcome(in.getOutcome(), "PutAnswer", m));
      m.put = PutId(in.getPut());
      STRATA_ASSIGN_OR_RETURN(m.slots, GetSlots(in.getSlots(), "PutAnswer.slots"));
      return PoolMessage(std::move(m));
    }
    case W::COMMIT:
      return PoolMessage(PoolCommit{.request_id = env.getCommit().getRequestId(),
                                    .put = PutId(env.getCommit().getPut()),
                                    .checksum = env.getCommit().getChecksum()});
    case W::ABORT:
      return PoolMessage(PoolAbort{env.getAbort().getRequestId(), PutId(env.getAbort().getPut())});
    case W::CLAIM: {
      PoolClaim m;
      m.request_id = env.getClaim().getRequestId();
      STRATA_ASSIGN_OR_RETURN(m.chain, GetKeys(env.getClaim().getChain(), "Claim.chain"));
      return PoolMessage(std::move(m));
    }
    case W::CLAIM_ANSWER: return GetClaimAnswer(env.getClaimAnswer());
    case W::RELEASE:
      return PoolMessage(
          PoolRelease{env.getRelease().getRequestId(), ClaimId(env.getRelease().getClaim())});
    case W::DONE: {
      PoolDone m;
      STRATA_RETURN_IF_ERROR(GetOutcome(env.getDone(), "Done", m));
      return PoolMessage(std::move(m));
    }
    case W::DATA_HELLO: return GetDataHello(env.getDataHello());
    case W::DATA_ACCEPT: {
      PoolDone m;
      STRATA_RETURN_IF_ERROR(GetOutcome(env.getDataAccept(), "DataAccept", m));
      return PoolMessage(PoolDataAccept{.status = std::move(m.status)});
    }
    case W::SLOT_WRITE: {
      auto in = env.getSlotWrite();
      STRATA_RETURN_IF_ERROR(CheckWindow(in.getBytes(), "SlotWrite.bytes"));
      return PoolMessage(PoolSlotWrite{.request_id = in.getRequestId(),
                                       .put = PutId(in.getPut()),
                                       .offset = in.getOffset(),
                                       .bytes = in.getBytes()});
    }
    case W::SLOT_READ: {
      auto in = env.getSlotRead();
      STRATA_RETURN_IF_ERROR(CheckWindow(in.getBytes(), "SlotRead.bytes"));
      return PoolMessage(PoolSlotRead{.request_id = in.getRequestId(),
                                      .claim = ClaimId(in.getClaim()),
                                      .record = in.getRecord(),
                                      .offset = in.getOffset(),
                                      .bytes = in.getBytes()});
    }
    case W::SLOT_DATA: {
      PoolSlotData m;
      auto in = env.getSlotData();
      STRATA_RETURN_IF_ERROR(GetOutcome(in.getOutcome(), "SlotData", m));
      STRATA_RETURN_IF_ERROR(CheckWindow(in.getBytes(), "SlotData.bytes"));
      m.bytes = in.getBytes();
      return PoolMessage(m);
    }
    case W::ANNOUNCE: return GetAnnounce(env.getAnnounce());
    case W::EXPORT_ASK: return GetExportAsk(env.getExportAsk());
  }
  return Invalid("Envelope",
                 fmt::format("unknown message type {}", static_cast<unsigned>(env.which())));
}

}  // namespace

Result<PoolMessage> DecodePoolFrame(std::span<const uint64_t> words) {
  return wire::codec::DecodeEnvelope<s::Envelope, PoolMessage>(
      words, kPoolFrameBytesMax, "pool frame", [](s::Envelope::Reader env) { return Get(env); });
}

}  // namespace strata::pool
