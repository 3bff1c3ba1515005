// The write state machine: open a temporary file and preallocate it, stream
// the page and row chunks (hashing each page and the row after the request
// carrying its bytes is issued, one page or row piece per HashSome, unless
// the job brought their sums), write the header and checksum segment once
// every sum is known,
// optionally fdatasync, rename into place and optionally fsync the directory. On any failure it
// stops issuing, waits for its in-flight requests, and removes the temporary file.
#include <time.h>

#include <algorithm>

#include "store/base/aligned_buffer.h"
#include "store/disk/disk_job_run.h"
#include "store/record/checksum.h"

namespace strata::disk_internal {

namespace {

// CPU time of the disk thread: what hashing costs, excluding time the
// (low-priority) thread spends preempted.
uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

class WriteRun final : public JobRun {
 public:
  WriteRun(JobId id, WriteRecordJob job, const RunContext& ctx)
      : JobRun(id), job_(std::move(job)), ctx_(ctx) {}

  void Advance(RequestSink& sink) override {
    if (phase_ == Phase::kOpen) Open();
    if (phase_ == Phase::kData) IssueData(sink);
    if (phase_ == Phase::kHeader && sink.HasRoom() && !HashPending()) IssueHeader(sink);
    if (phase_ == Phase::kWaitData && inflight == 0) {
      phase_ = job_.durability == Durability::kSync ? Phase::kSyncFile : Phase::kCommit;
    }
    if (phase_ == Phase::kSyncFile && sink.HasRoom()) {
      sink.Issue(*this, kPartSync, BlockOp::kSyncData, fd_, 0, {});
      phase_ = Phase::kSyncingFile;
    }
    if (phase_ == Phase::kCommit) Commit();
    if (phase_ == Phase::kSyncDir && sink.HasRoom()) {
      sink.Issue(*this, kPartDirSync, BlockOp::kSync, ctx_.dir_fd, 0, {});
      phase_ = Phase::kSyncingDir;
    }
    if (phase_ == Phase::kCleanup && inflight == 0) Cleanup();
  }

  void OnDone(uint32_t part, const Status& status) override {
    if (!status.ok()) {
      const char* what = part == kPartSync      ? "fdatasync"
                         : part == kPartDirSync ? "fsync directory"
                                                : "write";
      Fail(status.WithContext(what));
      return;
    }
    // A sync that lands after the run failed (an abort at shutdown) must not
    // commit, nor skip the cleanup of what it wrote.
    if (!error_.ok()) return;
    if (part == kPartSync) phase_ = Phase::kCommit;
    if (part == kPartDirSync) phase_ = Phase::kDone;
  }

  bool Finished() const override { return phase_ == Phase::kDone && inflight == 0; }

  DiskCompletion TakeCompletion() override {
    DiskCompletion c{id(), error_, 0, std::nullopt, std::nullopt};
    if (error_.ok()) {
      c.payload_bytes = payload_bytes_;
      c.header = job_.header;
      ctx_.counters.bytes_written += payload_bytes_;
    }
    return c;
  }

  void Abort(const Status& why) override { Fail(why); }

 private:
  enum class Phase : unsigned char {
    kOpen,         // create and preallocate the temporary file
    kData,         // hash and issue page and row chunks
    kHeader,       // issue the header and checksum segment
    kWaitData,     // wait for every write to land
    kSyncFile,     // issue fdatasync (durable writes)
    kSyncingFile,  // wait for it
    kCommit,       // close and rename into place
    kSyncDir,      // issue the directory fsync (durable writes)
    kSyncingDir,   // wait for it
    kCleanup,      // failed: wait for in-flight requests, then remove what was written
    kDone,
  };
  static constexpr uint32_t kPartHeader = 1u << 30;
  static constexpr uint32_t kPartSync = kPartHeader + 1;
  static constexpr uint32_t kPartDirSync = kPartHeader + 2;

  std::string Name() const { return RecordFileName(job_.header.key); }

  void Fail(const Status& status) {
    if (!error_.ok() || phase_ == Phase::kDone) return;
    error_ = status.WithContext("write " + Name());
    phase_ = Phase::kCleanup;
  }

  void Open() {
    Result<RecordExtents> e = ComputeExtents(job_.header);
    STRATA_ASSERT(e.ok(), "write job validated at submission");
    extents_ = *e;
    const uint64_t file_bytes =
        job_.row.empty() ? extents_.file_bytes_without_row() : extents_.file_bytes_with_row();
    Result<int> fd = BeginRecordWrite(ctx_.fs, ctx_.dir_fd, job_.header.key, file_bytes);
    if (!fd.ok()) {
      Fail(fd.status());
      return;
    }
    fd_ = *fd;
    temporary_exists_ = true;
    page_sums_ = std::move(job_.page_sums);  // brought by the caller: not hashed here
    if (!page_sums_.empty()) first_page_to_hash_ = static_cast<uint32_t>(page_sums_.size());
    page_sums_.resize(job_.header.tail_page_count, 0);
    // The row segment follows the last page: one run of requests covers both.
    pieces_ = job_.pages;
    pieces_.insert(pieces_.end(), job_.row.begin(), job_.row.end());
    chunks_ = CutIntoChunks(pieces_, extents_.page_segment_offset, ctx_.max_request_bytes);
    phase_ = Phase::kData;
  }

  // Pieces (pages, then row pieces) whose bytes some issued request writes
  // and that are not hashed yet. The caller's bytes do not change while the
  // job runs, so hashing them after the kernel has the request is hashing
  // what is written; the disk queue is refilled first.
  bool HashPending() const override {
    return (phase_ == Phase::kData || phase_ == Phase::kHeader) && next_hash_piece_ < hashable_end_;
  }

  // Hashes one piece: a page whole, or a row piece into row_sum_ in file
  // order. Sums the job brought are not recomputed.
  void HashSome() override {
    if (!HashPending()) return;
    const uint64_t start = NowNs();
    const size_t pages = job_.pages.size();
    const uint32_t p = next_hash_piece_++;
    if (p < pages) {
      if (p >= first_page_to_hash_) {
        page_sums_[p] = Xxh3Cold({job_.pages[p].data, job_.pages[p].bytes});
      }
    } else if (!job_.row_sum) {
      row_sum_.UpdateCold({job_.row[p - pages].data, job_.row[p - pages].bytes});
    }
    ctx_.counters.write_hash_ns += NowNs() - start;
  }

  void IssueData(RequestSink& sink) {
    while (sink.HasRoom() && next_chunk_ < chunks_.size()) {
      Chunk& c = chunks_[next_chunk_];
      hashable_end_ = std::max(hashable_end_, c.last_piece + 1);
      for (const iovec& v : c.iov) payload_bytes_ += v.iov_len;
      sink.Issue(*this, static_cast<uint32_t>(next_chunk_), BlockOp::kWrite, fd_, c.offset,
                 std::move(c.iov));
      ++next_chunk_;
    }
    if (next_chunk_ == chunks_.size()) phase_ = Phase::kHeader;
  }

  void IssueHeader(RequestSink& sink) {
    job_.header.row_checksum = job_.row.empty() ? 0
                               : job_.row_sum   ? *job_.row_sum
                                                : row_sum_.Digest();
    header_buffer_ = AlignedBuffer(extents_.page_segment_offset);
    Status encoded =
        EncodeRecordHeader(job_.header, header_buffer_.span().first(kRecordHeaderBytes));
    STRATA_ASSERT(encoded.ok(), "write job validated at submission");
    std::byte* sums = header_buffer_.data() + extents_.checksum_segment_offset;
    for (size_t i = 0; i < page_sums_.size(); ++i) {
      for (int b = 0; b < 8; ++b)
        sums[8 * i + b] = static_cast<std::byte>(page_sums_[i] >> (8 * b));
    }
    sink.Issue(*this, kPartHeader, BlockOp::kWrite, fd_, 0,
               {iovec{header_buffer_.data(), header_buffer_.size()}});
    phase_ = Phase::kWaitData;
  }

  void Commit() {
    ctx_.fs.Close(fd_);
    fd_ = -1;
    Status renamed = CommitRecordWrite(ctx_.fs, ctx_.dir_fd, job_.header.key);
    if (!renamed.ok()) {
      Fail(renamed);
      return;
    }
    temporary_exists_ = false;
    committed_ = true;
    phase_ = job_.durability == Durability::kSync ? Phase::kSyncDir : Phase::kDone;
  }

  // A failed write leaves neither its temporary file nor, when only the
  // directory sync failed, a record the caller was told did not commit.
  void Cleanup() {
    if (fd_ >= 0) ctx_.fs.Close(fd_);
    fd_ = -1;
    if (temporary_exists_) (void)AbortRecordWrite(ctx_.fs, ctx_.dir_fd, job_.header.key);
    if (committed_) (void)UnlinkRecord(ctx_.fs, ctx_.dir_fd, job_.header.key, Durability::kNone);
    temporary_exists_ = committed_ = false;
    phase_ = Phase::kDone;
  }

 private:
  WriteRecordJob job_;
  RunContext ctx_;
  Phase phase_ = Phase::kOpen;
  Status error_;
  int fd_ = -1;
  bool temporary_exists_ = false;
  bool committed_ = false;
  RecordExtents extents_;
  std::vector<IoPiece> pieces_;  // pages, then row pieces
  std::vector<Chunk> chunks_;
  size_t next_chunk_ = 0;
  uint32_t first_page_to_hash_ = 0;  // pages below it brought their sums
  uint32_t next_hash_piece_ = 0;     // pieces below it are hashed (or need not be)
  uint32_t hashable_end_ = 0;        // pieces below it are in issued requests
  std::vector<uint64_t> page_sums_;
  Xxh3Stream row_sum_;
  AlignedBuffer header_buffer_;
  uint64_t payload_bytes_ = 0;
};

}  // namespace

std::unique_ptr<JobRun> MakeWriteRun(JobId id, WriteRecordJob job, const RunContext& ctx) {
  return std::make_unique<WriteRun>(id, std::move(job), ctx);
}

}  // namespace strata::disk_internal
