#include "python/src/py_store.h"

#include <pybind11/stl.h>

#include <chrono>

#include "python/src/py_status.h"
#include "store/base/prefix_history.h"

namespace strata::python {

namespace py = pybind11;

namespace {

std::string EventKindName(StoreEvent::Kind kind) {
  switch (kind) {
    case StoreEvent::Kind::kStored: return "stored";
    case StoreEvent::Kind::kStoreFailed: return "store_failed";
    case StoreEvent::Kind::kFetched: return "fetched";
    case StoreEvent::Kind::kFetchFailed: return "fetch_failed";
    case StoreEvent::Kind::kStopped: return "stopped";
    case StoreEvent::Kind::kExportRequested: return "export_requested";
    case StoreEvent::Kind::kExportEnded: return "export_ended";
  }
  return "unknown";
}

py::dict TierDict(const TierStats& t) {
  py::dict d;
  d["records"] = t.records;
  d["bytes"] = t.bytes;
  d["stored_total"] = t.stored_total;
  d["evicted_total"] = t.evicted_total;
  d["bytes_in_total"] = t.bytes_in_total;
  d["bytes_out_total"] = t.bytes_out_total;
  return d;
}

// A pooled store's counters (docs/pool.md, Metrics), as the rank's
// strata_pool_client_* families count them.
py::dict PoolDict(const pool::PoolInstanceStats& p) {
  py::dict d;
  d["attached"] = p.attached;
  d["lookups"] = p.lookups;
  d["lookup_failures"] = p.lookup_failures;
  d["lookup_waits"] = p.lookup_waits;
  d["late_answers"] = p.late_answers;
  d["late_retries"] = p.late_retries;
  d["claims"] = p.claims;
  d["claim_failures"] = p.claim_failures;
  d["claim_fallbacks"] = p.claim_fallbacks;
  d["claims_in_flight"] = p.claims_in_flight;
  d["claims_failed_held"] = p.claims_failed_held;
  d["claimed_records"] = p.claimed_records;
  d["claimed_bytes"] = p.claimed_bytes;
  d["puts"] = p.puts;
  d["put_bytes"] = p.put_bytes;
  d["parked_records"] = p.parked_records;
  d["dropped_end_of_chain"] = p.dropped_end_of_chain;
  d["reconnects"] = p.reconnects;
  d["holdings"] = p.holdings;
  d["exports_requested"] = p.exports.requested;
  d["exports_ended"] = p.exports.ended;
  d["exports_served"] = p.exports_served;
  d["exports_aborted"] = p.exports_aborted;
  return d;
}

}  // namespace

uint64_t WallClockMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

PyEvent ToPyEvent(const StoreEvent& e) {
  PyEvent p;
  p.kind = EventKindName(e.kind);
  p.checkpoint_id = e.checkpoint_id;
  p.ticket = e.ticket.value;
  p.consumed = e.key.consumed;
  p.digest = ToHex(e.key.digest);
  p.ok = e.status.ok();
  if (!p.ok) {
    p.error_kind = std::string(StatusCodeName(e.status.code()));
    p.message = e.status.message();
  }
  p.bytes = e.bytes;
  p.export_id = e.export_id.value;
  p.generation = e.generation;
  p.start_page = e.start_page;
  return p;
}

Result<ExportRefusal> ToRefusal(const std::string& reason) {
  for (ExportRefusal r : {ExportRefusal::kNotFound, ExportRefusal::kGenerationChanged,
                          ExportRefusal::kChainGap, ExportRefusal::kNoHeadroom}) {
    if (reason == ExportRefusalName(r)) return r;
  }
  return Status::InvalidArgument("reason \"" + reason +
                                 "\" is not not_found, generation_changed, chain_gap or "
                                 "no_headroom");
}

ExportDescription ToDescription(uint64_t start_page, const std::vector<uint32_t>& pages,
                                uint32_t row_slot) {
  ExportDescription d{.start_page = start_page, .pages = {}, .row_slot = StateSlot(row_slot)};
  d.pages.reserve(pages.size());
  for (uint32_t p : pages) d.pages.emplace_back(p);
  return d;
}

Result<PublishedCheckpoint> ToCheckpoint(const CheckpointIn& in) {
  if (in.consumed == 0 || in.consumed > in.tokens.size()) {
    return Status::InvalidArgument("consumed is " + std::to_string(in.consumed) +
                                   ": it must be 1 .. the " + std::to_string(in.tokens.size()) +
                                   " tokens given");
  }
  if (in.parent_consumed && *in.parent_consumed >= in.consumed) {
    return Status::InvalidArgument("parent_consumed must be below consumed");
  }
  if (in.chain.empty()) return Status::InvalidArgument("chain is empty");
  const uint32_t tail = in.tail_pages.value_or(static_cast<uint32_t>(in.chain.size()));
  if (in.parent_consumed && !in.tail_pages) {
    return Status::InvalidArgument("tail_pages is required with a parent");
  }
  if (tail == 0 || tail > in.chain.size()) {
    return Status::InvalidArgument("tail_pages must be 1 .. len(chain)");
  }
  const PrefixHistory history(in.tokens);
  PublishedCheckpoint c;
  c.checkpoint_id = in.checkpoint_id;
  c.generation = in.generation;
  c.key = history.key_at(in.consumed);
  if (in.parent_consumed) c.parent = history.key_at(*in.parent_consumed);
  c.bucket = history.bucket_digest(in.consumed);
  for (uint32_t id : in.chain) c.chain.emplace_back(id);
  c.tail_pages = tail;
  c.row_slot = StateSlot(in.row_slot);
  return c;
}

Result<std::vector<EvictionNotice>> ToNotices(const std::vector<EvictionIn>& in) {
  std::vector<EvictionNotice> out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& [tokens, consumed, generation] = in[i];
    if (consumed == 0 || consumed > tokens.size()) {
      return Status::InvalidArgument("eviction notice " + std::to_string(i) +
                                     ": consumed must be 1 .. len(token_ids)");
    }
    out.push_back({.key = PrefixHistory(tokens).key_at(consumed), .generation = generation});
  }
  return out;
}

InboundTicket ToTicket(uint64_t ticket, const std::vector<uint32_t>& page_ids, uint32_t row_slot) {
  InboundTicket t;
  t.ticket = JobId(ticket);
  for (uint32_t id : page_ids) t.page_ids.emplace_back(id);
  t.row_slot = StateSlot(row_slot);
  return t;
}

StoreHandle::StoreHandle(std::unique_ptr<StoreOwner> owner, std::string description,
                         py::object keep_alive)
    : owner_(std::move(owner)),
      description_(std::move(description)),
      keep_alive_(std::move(keep_alive)) {}

StoreHandle::~StoreHandle() {
  if (!owner_) return;
  py::gil_scoped_release release;
  Status s = owner_->Close();
  if (!s.ok()) {
    // Copies may still run: leak the store and the runtime's memory.
    (void)owner_.release();
    py::gil_scoped_acquire acquire;
    (void)keep_alive_.release();
  }
}

StoreOwner& StoreHandle::Open() {
  if (!owner_) throw StatusError(Status::FailedPrecondition("the store is closed"));
  return *owner_;
}

std::optional<HostHit> StoreHandle::Lookup(const std::vector<Token>& tokens,
                                           uint64_t resident_tokens,
                                           std::optional<uint64_t> before) {
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  const PrefixHistory history(tokens);
  return Open().store().Lookup(history, resident_tokens, before.value_or(tokens.size()));
}

uint64_t StoreHandle::BeginLookup(const std::vector<Token>& tokens, uint64_t resident_tokens,
                                  std::optional<uint64_t> before) {
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  const PrefixHistory history(tokens);
  return Open().store().BeginLookup(history, resident_tokens, before.value_or(tokens.size())).value;
}

std::optional<HostHit> StoreHandle::LookupFor(uint64_t ticket, const std::vector<Token>& tokens,
                                              uint64_t resident_tokens,
                                              std::optional<uint64_t> before) {
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  const PrefixHistory history(tokens);
  return Open().store().LookupFor(LookupTicket(ticket), history, resident_tokens,
                                  before.value_or(tokens.size()));
}

py::dict TicketStatusDict(const LookupTicketStatus& st) {
  py::dict d;
  d["state"] = st.state == LookupTicketState::kNone      ? "none"
               : st.state == LookupTicketState::kPending ? "pending"
                                                         : "ready";
  d["pool_consumed"] = st.pool_consumed;
  d["admitted_consumed"] = st.admitted_consumed;
  d["admissions"] = st.admissions;
  d["answered_late"] = st.answered_late;
  d["retry_used"] = st.retry_used;
  return d;
}

py::dict StoreHandle::TicketStatus(uint64_t ticket) {
  LookupTicketStatus st;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(mu_);
    st = Open().store().TicketStatus(LookupTicket(ticket));
  }
  return TicketStatusDict(st);
}

void StoreHandle::EndLookup(uint64_t ticket) {
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  Open().store().EndLookup(LookupTicket(ticket));
}

std::string StoreHandle::Store(const CheckpointIn& checkpoint) {
  PublishedCheckpoint c = ValueOrThrow(ToCheckpoint(checkpoint));
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  return std::string(StoreOutcomeName(Open().store().Store(c)));
}

void StoreHandle::Evicted(const std::vector<EvictionIn>& notices) {
  const std::vector<EvictionNotice> converted = ValueOrThrow(ToNotices(notices));
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  Open().store().Evicted(converted);
}

void StoreHandle::EvictionsLost() {
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  Open().store().EvictionsLost();
}

void StoreHandle::ExportPinned(uint64_t export_id, uint64_t start_page,
                               const std::vector<uint32_t>& pages, uint32_t row_slot) {
  const ExportDescription d = ToDescription(start_page, pages, row_slot);
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  Open().store().ExportPinned(ExportId(export_id), d);
}

void StoreHandle::ExportRefused(uint64_t export_id, const std::string& reason) {
  const ExportRefusal r = ValueOrThrow(ToRefusal(reason));
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  Open().store().ExportRefused(ExportId(export_id), r);
}

void StoreHandle::Fetch(const HostHit& hit, uint64_t ticket, const std::vector<uint32_t>& page_ids,
                        uint32_t row_slot) {
  if (page_ids.size() != hit.pages) {
    throw StatusError(Status::InvalidArgument("the hit restores " + std::to_string(hit.pages) +
                                              " pages; " + std::to_string(page_ids.size()) +
                                              " page ids given"));
  }
  const InboundTicket t = ToTicket(ticket, page_ids, row_slot);
  Status s;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(mu_);
    s = Open().store().Fetch(hit, t);
  }
  ThrowIfError(s);
}

std::vector<PyEvent> StoreHandle::Poll(std::optional<uint64_t> now_ms) {
  std::vector<StoreEvent> events;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(mu_);
    Open().store().Poll(now_ms.value_or(WallClockMs()), events);
  }
  std::vector<PyEvent> out;
  out.reserve(events.size());
  for (const StoreEvent& e : events) out.push_back(ToPyEvent(e));
  return out;
}

py::dict StoreHandle::Stats() {
  StoreStats s;
  std::optional<pool::PoolInstanceStats> pooled;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(mu_);
    s = Open().store().Stats();
    pooled = Open().pool_stats();
  }
  py::dict d;
  d["store_queued"] = s.store_queued;
  d["store_failed"] = s.store_failed;
  py::dict abandoned;
  for (size_t c = 0; c < kRetryCauseCount; ++c) {
    abandoned[py::str(std::string(RetryCauseName(static_cast<RetryCause>(c))))] =
        s.retry_abandoned[c];
  }
  d["retry_abandoned"] = abandoned;
  d["lookups"] = s.lookups;
  d["hits"] = s.hits;
  d["fetches"] = s.fetches;
  d["fetch_failed"] = s.fetch_failed;
  d["memory"] = TierDict(s.memory);
  d["disk"] = TierDict(s.disk);
  if (pooled) d["pool"] = PoolDict(*pooled);
  return d;
}

void StoreHandle::Close() {
  Status s;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(mu_);
    if (!owner_) return;  // closing twice is harmless
    s = owner_->Close();
    if (s.ok()) {
      owner_.reset();
    } else {
      (void)owner_.release();  // copies may still run: keep it all
    }
  }
  if (!s.ok()) (void)keep_alive_.release();
  ThrowIfError(s);
}

std::string StoreHandle::record_dir() {
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  return Open().record_dir();
}

void RegisterStore(py::module_& m) {
  py::class_<HostHit>(m, "Hit",
                      "A lookup result; pass it to fetch() before the next store or poll.")
      .def_property_readonly("consumed", [](const HostHit& h) { return h.endpoint.consumed; })
      .def_property_readonly("digest", [](const HostHit& h) { return ToHex(h.endpoint.digest); })
      .def_readonly("skip_pages", &HostHit::skip_pages)
      .def_readonly("pages", &HostHit::pages)
      .def_readonly("bytes", &HostHit::bytes)
      .def_readonly("tokens_gained", &HostHit::tokens_gained)
      .def_readonly("pooled", &HostHit::pooled)
      .def_property_readonly("tier", [](const HostHit& h) { return std::string(TierName(h.tier)); })
      .def("__repr__", [](const HostHit& h) {
        return "<strata.Hit consumed=" + std::to_string(h.endpoint.consumed) +
               " pages=" + std::to_string(h.pages) + " tier=" + std::string(TierName(h.tier)) + ">";
      });
  py::class_<PyEvent>(m, "Event", "One completion from poll().")
      .def_readonly("kind", &PyEvent::kind)
      .def_readonly("checkpoint_id", &PyEvent::checkpoint_id)
      .def_readonly("ticket", &PyEvent::ticket)
      .def_readonly("consumed", &PyEvent::consumed)
      .def_readonly("digest", &PyEvent::digest)
      .def_readonly("ok", &PyEvent::ok)
      .def_readonly("error_kind", &PyEvent::error_kind)
      .def_readonly("message", &PyEvent::message)
      .def_readonly("bytes", &PyEvent::bytes)
      .def_readonly("export_id", &PyEvent::export_id)
      .def_readonly("generation", &PyEvent::generation)
      .def_readonly("start_page", &PyEvent::start_page)
      .def_readonly("request_id", &PyEvent::request_id)
      .def_readonly("hit", &PyEvent::hit)
      .def_readonly("outcome", &PyEvent::outcome)
      .def_property_readonly("ticket_status",
                             [](const PyEvent& e) -> py::object {
                               if (!e.ticket_status) return py::none();
                               return TicketStatusDict(*e.ticket_status);
                             })
      .def("__repr__", [](const PyEvent& e) {
        return "<strata.Event " + e.kind + (e.ok ? "" : " " + e.error_kind + ": " + e.message) +
               ">";
      });
  py::class_<StoreHandle>(m, "_Store")
      .def("lookup", &StoreHandle::Lookup, py::arg("tokens"), py::arg("resident_tokens") = 0,
           py::arg("before") = py::none())
      .def(
          "store",
          [](StoreHandle& s, uint64_t checkpoint_id, std::vector<Token> tokens, uint64_t consumed,
             std::vector<uint32_t> chain, uint32_t row_slot,
             std::optional<uint64_t> parent_consumed, std::optional<uint32_t> tail_pages,
             uint64_t generation) {
            return s.Store({checkpoint_id, std::move(tokens), consumed, parent_consumed,
                            std::move(chain), tail_pages, row_slot, generation});
          },
          py::arg("checkpoint_id"), py::arg("tokens"), py::arg("consumed"), py::arg("chain"),
          py::arg("row_slot"), py::arg("parent_consumed") = py::none(),
          py::arg("tail_pages") = py::none(), py::arg("generation") = 0)
      .def("begin_lookup", &StoreHandle::BeginLookup, py::arg("tokens"),
           py::arg("resident_tokens") = 0, py::arg("before") = py::none())
      .def("lookup_for", &StoreHandle::LookupFor, py::arg("ticket"), py::arg("tokens"),
           py::arg("resident_tokens") = 0, py::arg("before") = py::none())
      .def("ticket_status", &StoreHandle::TicketStatus, py::arg("ticket"))
      .def("end_lookup", &StoreHandle::EndLookup, py::arg("ticket"))
      .def("evicted", &StoreHandle::Evicted, py::arg("notices"))
      .def("evictions_lost", &StoreHandle::EvictionsLost)
      .def("export_pinned", &StoreHandle::ExportPinned, py::arg("export_id"), py::arg("start_page"),
           py::arg("pages"), py::arg("row_slot"))
      .def("export_refused", &StoreHandle::ExportRefused, py::arg("export_id"), py::arg("reason"))
      .def("fetch", &StoreHandle::Fetch, py::arg("hit"), py::arg("ticket"), py::arg("page_ids"),
           py::arg("row_slot"))
      .def("poll", &StoreHandle::Poll, py::arg("now_ms") = py::none())
      .def("stats", &StoreHandle::Stats)
      .def("close", &StoreHandle::Close)
      .def_property_readonly("record_dir", &StoreHandle::record_dir)
      .def_property_readonly("description", &StoreHandle::description);
}

}  // namespace strata::python
