#include "coordinator/pool/export_relay.h"

#include <string>

#include "coordinator/pool/claim_rules.h"

namespace strata::pool {
namespace {

PoolClaimAnswer FailedAnswer(uint64_t request_id, const Status& why) {
  return PoolClaimAnswer{
      .request_id = request_id, .status = why, .claim = {}, .budget_ms = 0, .records = {}};
}

}  // namespace

std::optional<ExportRelay::Begun> ExportRelay::Begin(PoolCatalog& catalog, SessionId requester,
                                                     const PoolClaim& claim, uint64_t now_ms) {
  if (claim.chain.empty()) return std::nullopt;
  // A claim of a record an export is filling waits for that export.
  for (auto& [put, e] : exports_) {
    if (!e.expired && e.key == claim.chain.back() && e.holder != requester &&
        catalog.SameScope(e.holder, requester)) {
      e.waiters.push_back(Waiter{.requester = requester, .claim = claim});
      ++counts_.joined;
      return Begun(std::monostate{});
    }
  }
  Result<std::optional<ExportStart>> start = catalog.BeginExport(requester, claim.chain, now_ms);
  if (!start.ok()) return Begun(FailedAnswer(claim.request_id, start.status()));
  if (!start->has_value()) return std::nullopt;
  ExportStart& s = **start;
  Export e{
      .holder = s.holder,
      .key = s.ask.key,
      .deadline_ms = now_ms + ManagerClaimBudgetMs(kClaimSetupMs, setup_limit_ms_, s.ask.bytes),
      .waiters = {Waiter{.requester = requester, .claim = claim}}};
  exports_.emplace(s.ask.put, std::move(e));
  ++counts_.started;
  return Begun(Ask{.holder = s.holder, .ask = PoolExportAsk{.ask = std::move(s.ask)}});
}

void ExportRelay::Fail(const Export& e, const Status& why, std::vector<RelayAnswer>& out) {
  for (const Waiter& w : e.waiters) {
    out.push_back(RelayAnswer{.requester = w.requester,
                              .claim = w.claim,
                              .answer = FailedAnswer(w.claim.request_id, why)});
  }
}

std::vector<RelayAnswer> ExportRelay::PutEnded(PoolCatalog& catalog, SessionId holder, PutId put,
                                               Ended how, uint64_t now_ms) {
  std::vector<RelayAnswer> out;
  auto it = exports_.find(put);
  if (it == exports_.end() || it->second.holder != holder) return out;
  const Export e = std::move(it->second);
  exports_.erase(it);
  if (how != Ended::kCommitted) {
    ++(how == Ended::kAborted ? counts_.refused : counts_.failed);
    if (how == Ended::kAborted) catalog.DropHolding(holder, e.key);
    Fail(e,
         Status::Unavailable("the instance holding " + e.key.ToFileStem() + " did not export it"),
         out);
    return out;
  }
  for (const Waiter& w : e.waiters) {
    Result<ClaimGrant> grant = catalog.Claim(w.requester, w.claim.chain, now_ms);
    PoolClaimAnswer a = FailedAnswer(w.claim.request_id, grant.status());
    if (grant.ok()) {
      a.status = Status::Ok();
      a.claim = grant->claim;
      a.budget_ms = grant->deadline_ms - now_ms;
      a.records = std::move(grant->records);
      ++counts_.relayed;
    }
    a.progress_epoch = catalog.progress_epoch();
    out.push_back(RelayAnswer{.requester = w.requester, .claim = w.claim, .answer = std::move(a)});
  }
  return out;
}

std::vector<RelayAnswer> ExportRelay::SessionEnded(PoolCatalog& catalog, SessionId session) {
  std::vector<RelayAnswer> out;
  for (auto it = exports_.begin(); it != exports_.end();) {
    Export& e = it->second;
    std::erase_if(e.waiters, [&](const Waiter& w) { return w.requester == session; });
    if (e.holder == session) {
      ++counts_.lost;
      Fail(e, Status::Unavailable("the instance exporting " + e.key.ToFileStem() + " went away"),
           out);
      it = exports_.erase(it);
    } else {
      ++it;
    }
  }
  (void)catalog;  // the catalog ended the session's puts and holdings itself
  return out;
}

std::vector<RelayAnswer> ExportRelay::Expire(uint64_t now_ms) {
  std::vector<RelayAnswer> out;
  for (auto& [put, e] : exports_) {
    if (e.expired || now_ms < e.deadline_ms) continue;
    ++counts_.expired;
    Fail(e, Status::Unavailable("the export of " + e.key.ToFileStem() + " passed its deadline"),
         out);
    e.waiters.clear();
    e.expired = true;
  }
  return out;
}

ExportRelayCounts ExportRelay::counts() const {
  ExportRelayCounts c = counts_;
  for (const auto& [put, e] : exports_) c.waiting += e.waiters.size();
  return c;
}

}  // namespace strata::pool
