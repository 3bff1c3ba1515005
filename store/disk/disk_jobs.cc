// Job validation, request chunking and the synchronous runs (truncate,
// unlink) of the disk thread. Disk thread internals (disk_job_run.h).
#include <algorithm>
#include <climits>
#include <functional>
#include <optional>

#include "store/disk/disk_job_run.h"

namespace strata::disk_internal {

namespace {

// `each_bytes`: the size every piece must have (0: any); `total_bytes`: the
// size all pieces together must have, unless there are none.
Status CheckPieces(const std::vector<IoPiece>& pieces, const char* what, uint64_t each_bytes,
                   std::optional<uint64_t> total_bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const IoPiece& p = pieces[i];
    const std::string where = std::string(what) + " piece " + std::to_string(i);
    if (p.data == nullptr || p.bytes == 0) return Status::InvalidArgument(where + " is empty");
    if (reinterpret_cast<uintptr_t>(p.data) % kRecordAlign != 0 || p.bytes % kRecordAlign != 0) {
      return Status::InvalidArgument(where + " is not 4 KiB aligned in address and length");
    }
    if (each_bytes != 0 && p.bytes != each_bytes) {
      return Status::InvalidArgument(where + " has " + std::to_string(p.bytes) +
                                     " bytes; a stored page record has " +
                                     std::to_string(each_bytes));
    }
    sum += p.bytes;
  }
  if (!pieces.empty() && total_bytes && sum != *total_bytes) {
    return Status::InvalidArgument(std::string(what) + " pieces cover " + std::to_string(sum) +
                                   " bytes, the segment has " + std::to_string(*total_bytes));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateJob(const DiskJobBody& body) {
  if (const auto* w = std::get_if<WriteRecordJob>(&body)) {
    STRATA_ASSIGN_OR_RETURN(RecordExtents e, ComputeExtents(w->header));
    if (w->pages.size() != w->header.tail_page_count) {
      return Status::InvalidArgument("write has " + std::to_string(w->pages.size()) +
                                     " page pieces for " +
                                     std::to_string(w->header.tail_page_count) + " tail pages");
    }
    STRATA_RETURN_IF_ERROR(CheckPieces(w->pages, "page", e.page_record_bytes, std::nullopt));
    if (!w->page_sums.empty() && w->page_sums.size() != w->pages.size()) {
      return Status::InvalidArgument("write has " + std::to_string(w->page_sums.size()) +
                                     " page checksums for " + std::to_string(w->pages.size()) +
                                     " pages");
    }
    if (w->row_sum && w->row.empty()) {
      return Status::InvalidArgument("write has a row checksum but no row");
    }
    return CheckPieces(w->row, "row", 0, e.row_segment_bytes);
  }
  if (const auto* r = std::get_if<ReadRecordJob>(&body)) {
    STRATA_ASSIGN_OR_RETURN(RecordExtents e, ComputeExtents(r->expected));
    if (r->first_page > r->expected.tail_page_count ||
        r->pages.size() != r->expected.tail_page_count - r->first_page) {
      return Status::InvalidArgument("read of pages from " + std::to_string(r->first_page) +
                                     " has " + std::to_string(r->pages.size()) +
                                     " page pieces for " +
                                     std::to_string(r->expected.tail_page_count) + " tail pages");
    }
    STRATA_RETURN_IF_ERROR(CheckPieces(r->pages, "page", e.page_record_bytes, std::nullopt));
    return CheckPieces(r->row, "row", 0, e.row_segment_bytes);
  }
  if (const auto* t = std::get_if<TruncateRecordJob>(&body)) {
    return ComputeExtents(t->expected).status();
  }
  return Status::Ok();
}

namespace {

// Truncate and unlink: one synchronous FileSystem step on the disk thread.
class SyncRun final : public JobRun {
 public:
  SyncRun(JobId id, std::function<Status()> op) : JobRun(id), op_(std::move(op)) {}
  void Advance(RequestSink&) override {
    if (!result_) result_ = op_();
  }
  void OnDone(uint32_t, const Status&) override {}
  bool Finished() const override { return result_.has_value(); }
  DiskCompletion TakeCompletion() override {
    return {id(), *result_, 0, std::nullopt, std::nullopt};
  }
  void Abort(const Status& why) override {
    if (!result_) result_ = why;
  }

 private:
  std::function<Status()> op_;
  std::optional<Status> result_;
};

}  // namespace

std::unique_ptr<JobRun> MakeSyncRun(JobId id, std::function<Status()> op) {
  return std::make_unique<SyncRun>(id, std::move(op));
}

std::vector<Chunk> CutIntoChunks(const std::vector<IoPiece>& pieces, uint64_t file_offset,
                                 uint64_t max_bytes) {
  constexpr size_t kMaxIovecs = IOV_MAX;
  std::vector<Chunk> chunks;
  Chunk current;
  uint64_t current_bytes = 0;
  uint64_t offset = file_offset;
  auto flush = [&] {
    if (current.iov.empty()) return;
    chunks.push_back(std::move(current));
    current = Chunk{};
    current_bytes = 0;
  };
  for (uint32_t i = 0; i < pieces.size(); ++i) {
    uint64_t done = 0;
    while (done < pieces[i].bytes) {
      if (current_bytes == max_bytes || current.iov.size() == kMaxIovecs) flush();
      if (current.iov.empty()) {
        current.offset = offset;
        current.first_piece = i;
      }
      const uint64_t take = std::min(pieces[i].bytes - done, max_bytes - current_bytes);
      current.iov.push_back({pieces[i].data + done, take});
      current.iov_piece.push_back(i);
      current.last_piece = i;
      current_bytes += take;
      done += take;
      offset += take;
    }
  }
  flush();
  return chunks;
}

}  // namespace strata::disk_internal
