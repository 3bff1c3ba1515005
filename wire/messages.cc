#include "wire/messages.h"

#include <fmt/format.h>

#include <type_traits>

namespace strata::wire {
namespace {

Status Invalid(std::string_view field, std::string_view what) {
  return Status::InvalidArgument(fmt::format("{}: {}", field, what));
}

Status CheckText(std::string_view field, std::string_view text) {
  if (text.size() > kTextBytesMax) {
    return Invalid(field, fmt::format("{} bytes, at most {} allowed", text.size(), kTextBytesMax));
  }
  return Status::Ok();
}

// A completion's status carries its message in a bounded text field; an OK
// status carries none.
Status CheckOutcome(std::string_view field, const Status& status) {
  if (status.ok() && !status.message().empty()) {
    return Invalid(field, "an OK outcome carries error text");
  }
  return CheckText(field, status.message());
}

Status Check(const Hello& m) {
  if (m.protocol_version == 0) return Invalid("Hello.protocol_version", "zero");
  if (m.world_size == 0 || m.world_size > kWorldSizeMax) {
    return Invalid("Hello.world_size",
                   fmt::format("{} is outside 1..{}", m.world_size, kWorldSizeMax));
  }
  if (m.rank.value >= m.world_size) {
    return Invalid("Hello.rank",
                   fmt::format("{} is not below world_size {}", m.rank.value, m.world_size));
  }
  return Status::Ok();
}

Status Check(const HelloAccept& m) {
  if (m.protocol_version == 0) return Invalid("HelloAccept.protocol_version", "zero");
  return Status::Ok();
}

Status Check(const HelloReject& m) { return CheckText("HelloReject.reason", m.reason); }

Status Check(const ScanSummary& m) {
  if (m.records.size() > kScanRecordsPerFrameMax) {
    return Invalid("ScanSummary.records", fmt::format("{} records, at most {} per frame",
                                                      m.records.size(), kScanRecordsPerFrameMax));
  }
  for (size_t i = 0; i < m.records.size(); ++i) {
    const ScanRecord& r = m.records[i];
    if (r.key.consumed == 0) {
      return Invalid(fmt::format("ScanSummary.records[{}].key.consumed", i), "zero");
    }
    if (r.parent && r.parent->consumed >= r.key.consumed) {
      return Invalid(
          fmt::format("ScanSummary.records[{}].parent.consumed", i),
          fmt::format("{} is not below the key's {}", r.parent->consumed, r.key.consumed));
    }
    if (r.size_bytes == 0) {
      return Invalid(fmt::format("ScanSummary.records[{}].size_bytes", i), "zero");
    }
  }
  return Status::Ok();
}

Status Check(const Agreement& m) {
  if (m.entries.size() > kAgreementEntriesPerFrameMax) {
    return Invalid("Agreement.entries",
                   fmt::format("{} entries, at most {} per frame", m.entries.size(),
                               kAgreementEntriesPerFrameMax));
  }
  for (size_t i = 0; i < m.entries.size(); ++i) {
    if (static_cast<unsigned>(m.entries[i].verdict) > static_cast<unsigned>(Verdict::kDelete)) {
      return Invalid(
          fmt::format("Agreement.entries[{}].verdict", i),
          fmt::format("unknown verdict {}", static_cast<unsigned>(m.entries[i].verdict)));
    }
  }
  return Status::Ok();
}

Status Check(const AgreementApplied& m) { return CheckOutcome("AgreementApplied", m.status); }

// A host-data job (RecordJob::host_data): no device ids, some bytes.
Status CheckHostData(const RecordJob& j, bool moves_bytes) {
  if (!j.host_data) return Invalid("Job.host_row", "set on a job without host data");
  if (!moves_bytes) {
    return Invalid("Job.host_data", fmt::format("set on a {} job", RecordJobKindName(j.kind)));
  }
  if (!j.page_ids.empty() || j.row_slot.has_value()) {
    return Invalid("Job.host_data", "a host-data job names page ids or a state slot");
  }
  const uint32_t first = j.kind == RecordJobKind::kFetch ? j.first_page : 0;
  if (j.kind == RecordJobKind::kStore && j.first_page != 0) {
    return Invalid("Job.first_page", "a store starts at page 0");
  }
  if (first > j.tail_pages) {
    return Invalid("Job.first_page",
                   fmt::format("{} is past the record's {} pages", first, j.tail_pages));
  }
  if (first == j.tail_pages && !j.host_row) {
    return Invalid("Job", "a host-data job moves no page and no row");
  }
  return Status::Ok();
}

Status Check(const Job& m) {
  const RecordJob& j = m.record;
  if (static_cast<unsigned>(j.kind) > static_cast<unsigned>(RecordJobKind::kUnlink)) {
    return Invalid("Job.kind", fmt::format("unknown kind {}", static_cast<unsigned>(j.kind)));
  }
  const std::string_view kind = RecordJobKindName(j.kind);
  if (j.key.consumed == 0) return Invalid("Job.key.consumed", "zero");
  if (j.parent && j.parent->consumed >= j.key.consumed) {
    return Invalid("Job.parent.consumed",
                   fmt::format("{} is not below the key's {}", j.parent->consumed, j.key.consumed));
  }
  if (j.page_ids.size() > kJobPageIdsMax || j.tail_pages > kJobPageIdsMax) {
    return Invalid("Job.page_ids",
                   fmt::format("{} page ids of a {} page record, at most {} allowed",
                               j.page_ids.size(), j.tail_pages, kJobPageIdsMax));
  }
  const bool moves_bytes = j.kind == RecordJobKind::kStore || j.kind == RecordJobKind::kFetch;
  if (j.host_data || j.host_row) return CheckHostData(j, moves_bytes);
  const bool names_something = !j.page_ids.empty() || j.row_slot.has_value();
  if (moves_bytes && !names_something) {
    return Invalid("Job", fmt::format("a {} job names no page and no state slot", kind));
  }
  if (!moves_bytes && names_something) {
    return Invalid("Job", fmt::format("a {} job names pages or a state slot", kind));
  }
  if (j.kind == RecordJobKind::kStore && (j.first_page != 0 || j.page_ids.size() != j.tail_pages)) {
    return Invalid("Job.page_ids",
                   fmt::format("a store names {} page ids from page {} of a {} page record",
                               j.page_ids.size(), j.first_page, j.tail_pages));
  }
  if (j.kind == RecordJobKind::kFetch &&
      (j.first_page > j.tail_pages || j.page_ids.size() != j.tail_pages - j.first_page)) {
    return Invalid("Job.page_ids",
                   fmt::format("a fetch names {} page ids from page {} of a {} page record",
                               j.page_ids.size(), j.first_page, j.tail_pages));
  }
  return Status::Ok();
}

Status Check(const JobDone& m) {
  STRATA_RETURN_IF_ERROR(CheckOutcome("JobDone", m.status));
  if (m.filesystem_full && m.status.ok()) {
    return Invalid("JobDone.filesystem_full", "set on an OK outcome");
  }
  return Status::Ok();
}

Status Check(const Drain&) { return Status::Ok(); }
Status Check(const Drained& m) { return CheckOutcome("Drained", m.status); }
Status Check(const Close& m) { return CheckText("Close.reason", m.reason); }
Status Check(const Heartbeat&) { return Status::Ok(); }

Status Check(const JobData& m) {
  if (m.total == 0 || m.total > kJobDataBytesMax) {
    return Invalid("JobData.total", fmt::format("{} is outside 1..{}", m.total, kJobDataBytesMax));
  }
  if (m.data.empty() || m.data.size() > kJobDataChunkBytesMax) {
    return Invalid("JobData.data",
                   fmt::format("{} bytes, outside 1..{}", m.data.size(), kJobDataChunkBytesMax));
  }
  if (m.offset > m.total || m.data.size() > m.total - m.offset) {
    return Invalid("JobData.offset", fmt::format("{} + {} bytes runs past the total {}", m.offset,
                                                 m.data.size(), m.total));
  }
  return Status::Ok();
}

}  // namespace

std::string_view MessageName(const Message& message) {
  constexpr std::array<std::string_view, std::variant_size_v<Message>> kNames = {
      "Hello",  "HelloAccept", "HelloReject", "ScanSummary", "Agreement", "AgreementApplied",
      "Job",    "JobDone",     "Drain",       "Drained",     "Close",     "Heartbeat",
      "JobData"};
  return kNames[message.index()];
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kKeep: return "keep";
    case Verdict::kTruncate: return "truncate";
    case Verdict::kDelete: return "delete";
  }
  return "unknown";
}

Status CheckMessage(const Message& message) {
  return std::visit([](const auto& m) { return Check(m); }, message);
}

std::string FitText(std::string text) {
  if (text.size() > kTextBytesMax) text.resize(kTextBytesMax);
  return text;
}

Status FitForWire(const Status& status) {
  if (status.ok()) return status;
  return Status(status.code(), FitText(status.message()));
}

}  // namespace strata::wire
