#include "coordinator/pool/export_ledger.h"

#include <string>

namespace strata::pool {

namespace {

std::string IdText(ExportId id) { return "export " + std::to_string(id.value); }

}  // namespace

ExportId ExportLedger::Request(const ExportAsk& ask) {
  const ExportId id(next_id_++);
  exports_.emplace(id, Entry{.ask = ask, .phase = Phase::kAwaiting, .description = {}});
  StoreEvent e;
  e.kind = StoreEvent::Kind::kExportRequested;
  e.key = ask.key;
  e.bytes = ask.staging_bytes;
  e.export_id = id;
  e.generation = ask.generation;
  e.start_page = ask.start_page;
  events_.push_back(std::move(e));
  ++counts_.requested;
  return id;
}

void ExportLedger::QueueEnd(ExportId id, const PrefixKey& key, Status why) {
  StoreEvent e;
  e.kind = StoreEvent::Kind::kExportEnded;
  e.key = key;
  e.status = std::move(why);
  e.export_id = id;
  events_.push_back(std::move(e));
  ++counts_.ended;
}

Status ExportLedger::Pinned(ExportId id, const ExportDescription& description) {
  auto it = exports_.find(id);
  if (it == exports_.end()) {
    // The runtime holds a pin the store cannot use: hand it back at once.
    ++counts_.stray_answers;
    Status why = Status::NotFound(IdText(id) + " was not requested or has ended");
    QueueEnd(id, PrefixKey{}, why);
    return why;
  }
  if (it->second.phase == Phase::kOpen) {
    ++counts_.stray_answers;
    return Status::FailedPrecondition(IdText(id) + " is pinned already");
  }
  Status why;
  const uint64_t bytes = ExportBytes(description, sizes_);
  if (!sizes_.known()) {
    why = Status::FailedPrecondition(IdText(id) + ": this store's record sizes are unknown");
  } else if (bytes > it->second.ask.staging_bytes) {
    why = Status::InvalidArgument(IdText(id) + " needs " + std::to_string(bytes) +
                                  " bytes; the staging reserved holds " +
                                  std::to_string(it->second.ask.staging_bytes));
  }
  if (!why.ok()) {
    ++counts_.rejected;
    QueueEnd(id, it->second.ask.key, why);
    exports_.erase(it);
    return why;
  }
  it->second.phase = Phase::kOpen;
  it->second.description = description;
  ++counts_.pinned;
  return Status::Ok();
}

Status ExportLedger::Refused(ExportId id, ExportRefusal reason) {
  auto it = exports_.find(id);
  if (it == exports_.end() || it->second.phase != Phase::kAwaiting) {
    ++counts_.stray_answers;
    return Status::NotFound(IdText(id) + " is not awaiting an answer");
  }
  ++counts_.refused[static_cast<size_t>(reason)];
  exports_.erase(it);
  return Status::Ok();
}

Status ExportLedger::Drained(ExportId id) {
  auto it = exports_.find(id);
  if (it == exports_.end() || it->second.phase != Phase::kOpen) {
    return Status::NotFound(IdText(id) + " is not open");
  }
  QueueEnd(id, it->second.ask.key, Status::Ok());
  exports_.erase(it);
  return Status::Ok();
}

void ExportLedger::TakeEvents(std::vector<StoreEvent>& out) {
  for (StoreEvent& e : events_) out.push_back(std::move(e));
  events_.clear();
}

size_t ExportLedger::awaiting() const {
  size_t n = 0;
  for (const auto& [id, e] : exports_) n += e.phase == Phase::kAwaiting ? 1 : 0;
  return n;
}

size_t ExportLedger::open() const { return exports_.size() - awaiting(); }

const ExportDescription* ExportLedger::description(ExportId id) const {
  auto it = exports_.find(id);
  if (it == exports_.end() || it->second.phase != Phase::kOpen) return nullptr;
  return &it->second.description;
}

}  // namespace strata::pool
