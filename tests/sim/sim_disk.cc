#include "tests/sim/sim_disk.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace strata::sim {
namespace {

constexpr uint64_t kPageBytes = 4096;

void Put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace

Digest128 SimDisk::DigestOf(const RecordJob& job) {
  std::vector<uint8_t> bytes;
  Put(bytes, &job.key.consumed, sizeof job.key.consumed);
  Put(bytes, job.key.digest.data(), job.key.digest.size());
  const uint64_t parent = job.parent ? job.parent->consumed : 0;
  Put(bytes, &parent, sizeof parent);
  if (job.parent) Put(bytes, job.parent->digest.data(), job.parent->digest.size());
  Put(bytes, job.bucket.data(), job.bucket.size());
  Put(bytes, &job.tail_pages, sizeof job.tail_pages);
  return Blake2b128(bytes);
}

Status SimDisk::Submit(const RecordJob& job, SimTime done_at) {
  if (running_.size() >= jobs_max_) {
    return Status::Busy("rank " + std::to_string(rank_.value) + " disk queue is full");
  }
  running_.push_back({job, done_at});
  return Status::Ok();
}

bool SimDisk::Running(JobId id) const {
  return std::any_of(running_.begin(), running_.end(),
                     [&](const SimDiskJob& j) { return j.job.id == id; });
}

void SimDisk::Finish(SimTime now, bool all, std::vector<RecordJobDone>& out) {
  std::vector<SimDiskJob> left;
  for (SimDiskJob& j : running_) {
    if (all || j.done_at <= now) {
      out.push_back(Apply(j.job, now));
    } else {
      left.push_back(std::move(j));
    }
  }
  running_ = std::move(left);
}

RecordJobDone SimDisk::Apply(const RecordJob& job, SimTime now) {
  RecordJobDone done{job.id, Status::Ok(), false, 0};
  const std::string what = std::string(RecordJobKindName(job.kind)) + " of " +
                           job.key.ToFileStem() + " on rank " + std::to_string(rank_.value);
  if (faults.io_errors > 0) {
    --faults.io_errors;
    ++injected_io_errors;
    done.status = Status::IoError(what + ": injected EIO");
    return done;
  }
  auto file = files_.find(job.key);
  switch (job.kind) {
    case RecordJobKind::kStore:
      if (now < faults.full_until) {
        ++injected_full;
        failed_full_.insert(job.id);
        done.status = Status::FsFull(what + ": injected ENOSPC");
        done.fs_full = true;
        return done;
      }
      files_[job.key] = {job.parent, DigestOf(job), job.row_slot.has_value(), job.tail_pages};
      done.bytes = job.tail_pages * kPageBytes;
      break;
    case RecordJobKind::kFetch:
      if (file == files_.end()) {
        done.status = Status::NotFound(what + ": no such record file");
        return done;
      }
      if (file->second.tail_pages != job.tail_pages || (job.row_slot && !file->second.row)) {
        done.status = Status::Corruption(what + ": the file does not hold what the job reads");
        return done;
      }
      done.bytes = (job.tail_pages - job.first_page) * kPageBytes;
      break;
    case RecordJobKind::kTruncate:
      if (file == files_.end()) {
        done.status = Status::NotFound(what + ": no such record file");
        return done;
      }
      file->second.row = false;
      break;
    case RecordJobKind::kUnlink:
      if (file != files_.end()) files_.erase(file);
      break;
  }
  finished_ok_.insert(job.id);
  return done;
}

void SimDisk::Crash(SimRandom& random) {
  std::vector<RecordJobDone> ignored;
  for (SimDiskJob& j : running_) {
    if (random.Chance(0.5)) ignored.push_back(Apply(j.job, j.done_at));
  }
  running_.clear();
}

void SimDisk::NewSession() {
  finished_ok_.clear();
  failed_full_.clear();
  running_.clear();
  faults = {};
}

}  // namespace strata::sim
