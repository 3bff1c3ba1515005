#include "rank_agent/host_data_jobs.h"

#include <string>
#include <utility>

namespace strata {
namespace {

std::string JobName(JobId id) { return "job " + std::to_string(id.value); }

}  // namespace

uint64_t HostDataJobs::ShareBytes(const RecordJob& job) const {
  const uint32_t first = job.kind == RecordJobKind::kFetch ? job.first_page : 0;
  const uint64_t pages = job.tail_pages - first;
  return pages * layout_.stored_page_record_bytes(job.replicated_pages) +
         (job.host_row ? layout_.stored_row_segment_bytes(job.replicated_row) : 0);
}

HostBuffers HostDataJobs::SharePieces(const RecordJob& job, std::byte* base) const {
  const uint32_t first = job.kind == RecordJobKind::kFetch ? job.first_page : 0;
  const uint64_t page_bytes = layout_.stored_page_record_bytes(job.replicated_pages);
  HostBuffers b;
  for (uint32_t i = first; i < job.tail_pages; ++i) {
    b.pages.push_back({base + (i - first) * page_bytes, page_bytes});
  }
  if (job.host_row) {
    b.row.push_back({base + (job.tail_pages - first) * page_bytes,
                     layout_.stored_row_segment_bytes(job.replicated_row)});
  }
  return b;
}

void HostDataJobs::DropAbandoned(JobId keep) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Held& h = it->second;
    if (it->first != keep && h.receiver && !h.job_arrived) {
      pending_bytes_ -= h.receiver->total();
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

void HostDataJobs::OnJob(JobId id) {
  DropAbandoned(id);
  if (auto it = jobs_.find(id); it != jobs_.end()) it->second.job_arrived = true;
}

Status HostDataJobs::OnData(const wire::JobData& chunk) {
  auto it = jobs_.find(chunk.id);
  if (it == jobs_.end()) {
    DropAbandoned(chunk.id);
    if (chunk.offset != 0) {
      return Status::InvalidArgument("JobData of " + JobName(chunk.id) + " starts at offset " +
                                     std::to_string(chunk.offset));
    }
    if (chunk.total > pending_bytes_max_ - pending_bytes_) {
      return Status::InvalidArgument("JobData of " + JobName(chunk.id) + " would hold " +
                                     std::to_string(pending_bytes_ + chunk.total) +
                                     " bytes of stores not yet run, at most " +
                                     std::to_string(pending_bytes_max_));
    }
    Held h;
    h.bytes = std::make_unique<AlignedBuffer>(chunk.total);
    h.buffers.pages.push_back({h.bytes->data(), chunk.total});
    h.receiver.emplace(h.buffers);
    pending_bytes_ += chunk.total;
    it = jobs_.emplace(chunk.id, std::move(h)).first;
  }
  Held& h = it->second;
  if (!h.receiver) {
    return Status::InvalidArgument("JobData of " + JobName(chunk.id) + " after the job started");
  }
  return h.receiver->Add(chunk);
}

Result<HostBuffers> HostDataJobs::Begin(const RecordJob& job) {
  const uint64_t share = ShareBytes(job);
  if (share > wire::kJobDataBytesMax) {
    return Status::InvalidArgument(JobName(job.id) + " moves " + std::to_string(share) +
                                   " bytes, more than a host-data job carries");
  }
  auto it = jobs_.find(job.id);
  if (job.kind == RecordJobKind::kFetch) {
    if (it == jobs_.end()) {
      Held h;
      h.bytes = std::make_unique<AlignedBuffer>(share);
      h.buffers = SharePieces(job, h.bytes->data());
      h.fetch = true;
      it = jobs_.emplace(job.id, std::move(h)).first;
    } else if (!it->second.fetch) {
      return Status::InvalidArgument("fetch " + JobName(job.id) + " arrived after JobData");
    }
    return it->second.buffers;
  }
  if (it == jobs_.end()) {
    return Status::InvalidArgument("store " + JobName(job.id) + " arrived without its JobData");
  }
  Held& h = it->second;
  if (h.receiver) {
    if (!h.receiver->complete() || h.receiver->total() != share) {
      return Status::InvalidArgument(
          "store " + JobName(job.id) + " has " + std::to_string(h.receiver->received()) + " of " +
          std::to_string(h.receiver->total()) + " bytes; its share is " + std::to_string(share));
    }
    pending_bytes_ -= h.receiver->total();
    h.receiver.reset();
    h.buffers = SharePieces(job, h.bytes->data());
  }
  return h.buffers;
}

std::optional<FetchedShare> HostDataJobs::Finish(JobId id, bool ok) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  std::optional<FetchedShare> out;
  if (it->second.fetch && ok) {
    out = FetchedShare{.bytes = std::move(it->second.bytes),
                       .buffers = std::move(it->second.buffers)};
  }
  if (it->second.receiver) pending_bytes_ -= it->second.receiver->total();
  jobs_.erase(it);
  return out;
}

}  // namespace strata
