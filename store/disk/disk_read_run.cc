// The read state machine: open the record, read and check its header against
// the expected one (so a changed file can never enlarge a read), check the
// file covers what is asked, then read the needed part of the checksum
// segment and the payload chunks. Each page is hashed once all of its bytes
// have landed, the row piece by piece in order as they land, each a unit of
// HashSome that the thread runs after refilling the disk's queue; at the end every
// page read is compared with its stored checksum and the row with the
// header's, reporting the first bad page by index.
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

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

class ReadRun final : public JobRun {
 public:
  ReadRun(JobId id, ReadRecordJob job, const RunContext& ctx)
      : JobRun(id), job_(std::move(job)), ctx_(ctx) {}
  ~ReadRun() override {
    if (fd_ >= 0) ctx_.fs.Close(fd_);
  }
  ReadRun(const ReadRun&) = delete;
  ReadRun& operator=(const ReadRun&) = delete;

  void Advance(RequestSink& sink) override {
    if (phase_ == Phase::kOpen) Open();
    if (phase_ == Phase::kHeader && sink.HasRoom()) {
      header_buffer_ = AlignedBuffer(kRecordHeaderBytes);
      sink.Issue(*this, kPartHeader, BlockOp::kRead, fd_, 0,
                 {iovec{header_buffer_.data(), header_buffer_.size()}});
      phase_ = Phase::kHeaderReading;
    }
    if (phase_ == Phase::kPayload) IssuePayload(sink);
    if (phase_ == Phase::kDraining && inflight == 0 && !HashPending()) Verify();
  }

  void OnDone(uint32_t part, const Status& status) override {
    // A failed or aborted run only drains: a header landing after the abort
    // must not start the payload.
    if (phase_ == Phase::kDone) return;
    if (!status.ok()) {
      Fail(status.WithContext(part == kPartHeader ? "read header" : "read"));
      return;
    }
    if (part == kPartHeader) {
      CheckHeader();
    } else if (part == kPartSums) {
      sums_landed_ = true;
    } else {
      ChunkLanded(part);
    }
  }

  bool Finished() const override { return phase_ == Phase::kDone && inflight == 0; }

  DiskCompletion TakeCompletion() override {
    if (fd_ >= 0) ctx_.fs.Close(fd_);
    fd_ = -1;
    DiskCompletion c{id(), error_, 0, std::nullopt, bad_page_};
    if (error_.ok()) {
      c.payload_bytes = payload_bytes_;
      ctx_.counters.bytes_read += payload_bytes_;
    }
    return c;
  }

  void Abort(const Status& why) override { Fail(why); }

 private:
  enum class Phase : unsigned char {
    kOpen,           // open the file
    kHeader,         // issue the header read
    kHeaderReading,  // wait for it
    kPayload,        // issue the checksum segment and payload chunks
    kDraining,       // wait for every chunk, then verify
    kDone,
  };
  static constexpr uint32_t kPartHeader = 1u << 30;
  static constexpr uint32_t kPartSums = kPartHeader + 1;

  std::string Name() const { return RecordFileName(job_.expected.key); }

  void Fail(const Status& status) {
    if (!error_.ok() || phase_ == Phase::kDone) return;
    error_ = status.WithContext("read " + Name());
    phase_ = Phase::kDone;  // Finished() still waits for in-flight requests
  }

  void Open() {
    Result<RecordExtents> e = ComputeExtents(job_.expected);
    STRATA_ASSERT(e.ok(), "read job validated at submission");
    extents_ = *e;
    Result<int> fd = ctx_.fs.OpenAt(ctx_.dir_fd, Name(), OpenFor::kDirectRead);
    if (!fd.ok()) {
      Fail(fd.status());
      return;
    }
    fd_ = *fd;
    phase_ = Phase::kHeader;
  }

  void CheckHeader() {
    Result<RecordHeader> actual = DecodeRecordHeader(header_buffer_.span());
    if (!actual.ok()) {
      ++ctx_.counters.header_mismatches;
      Fail(actual.status());
      return;
    }
    if (std::optional<std::string> field = FirstHeaderDifference(job_.expected, *actual)) {
      ++ctx_.counters.header_mismatches;
      Fail(Status::FailedPrecondition(*field + " in the file differs from the expected record"));
      return;
    }
    Result<FileInfo> info = ctx_.fs.Stat(fd_);
    if (!info.ok()) {
      Fail(info.status());
      return;
    }
    const uint64_t need =
        job_.row.empty() ? extents_.file_bytes_without_row() : extents_.file_bytes_with_row();
    if (info->bytes < need) {
      ++ctx_.counters.header_mismatches;
      Fail(info->bytes >= extents_.file_bytes_without_row()
               ? Status::NotFound("the row is not in the file (" + std::to_string(info->bytes) +
                                  " bytes; the row segment ends at " + std::to_string(need) + ")")
               : Status::Corruption("file of " + std::to_string(info->bytes) +
                                    " bytes is shorter than its header's " + std::to_string(need)));
      return;
    }
    PlanPayload();
    phase_ = Phase::kPayload;
  }

  void PlanPayload() {
    const uint32_t first = job_.first_page;
    const uint32_t end = job_.expected.tail_page_count;
    if (end > first) {
      sums_begin_ = AlignDown(8 * uint64_t{first});
      sums_buffer_ = AlignedBuffer(AlignUp(8 * uint64_t{end}) - sums_begin_);
    } else {
      sums_landed_ = true;
    }
    // Pages [first, tail) and the row segment are one contiguous file range
    // when the row is read; one run of requests covers both.
    std::vector<IoPiece> pieces = job_.pages;
    pieces.insert(pieces.end(), job_.row.begin(), job_.row.end());
    chunks_ = CutIntoChunks(pieces, extents_.page_offset(first), ctx_.max_request_bytes);
    pending_.assign(pieces.size(), 0);
    for (const Chunk& c : chunks_) {
      for (uint32_t p = c.first_piece; p <= c.last_piece; ++p) ++pending_[p];
    }
    page_sums_.assign(job_.pages.size(), 0);
  }

  static uint64_t AlignDown(uint64_t v) { return v / kRecordAlign * kRecordAlign; }

  void IssuePayload(RequestSink& sink) {
    if (!sums_issued_ && !sums_landed_) {
      if (!sink.HasRoom()) return;
      sink.Issue(*this, kPartSums, BlockOp::kRead, fd_,
                 extents_.checksum_segment_offset + sums_begin_,
                 {iovec{sums_buffer_.data(), sums_buffer_.size()}});
      sums_issued_ = true;
    }
    const size_t total = chunks_.size();
    while (next_chunk_ < total && sink.HasRoom()) {
      Chunk& c = chunks_[next_chunk_];
      for (const iovec& v : c.iov) payload_bytes_ += v.iov_len;
      sink.Issue(*this, static_cast<uint32_t>(next_chunk_), BlockOp::kRead, fd_, c.offset,
                 std::move(c.iov));
      ++next_chunk_;
    }
    if (next_chunk_ == total) phase_ = Phase::kDraining;
  }

  // Notes which pieces this chunk completed; their hashing waits for HashSome.
  void ChunkLanded(uint32_t part) {
    const Chunk& c = chunks_[part];
    const auto pages = static_cast<uint32_t>(job_.pages.size());
    for (uint32_t p = c.first_piece; p <= c.last_piece; ++p) {
      if (--pending_[p] == 0 && p < pages) landed_pages_.push_back(p);
    }
  }

  bool RowPieceLanded() const {
    return row_hashed_ < job_.row.size() && pending_[job_.pages.size() + row_hashed_] == 0;
  }

  bool HashPending() const override {
    return (phase_ == Phase::kPayload || phase_ == Phase::kDraining) &&
           (next_landed_ < landed_pages_.size() || RowPieceLanded());
  }

  // Hashes one landed page, or the next row piece once it landed (the row
  // is one stream, fed in file order).
  void HashSome() override {
    if (!HashPending()) return;
    const uint64_t start = NowNs();
    if (next_landed_ < landed_pages_.size()) {
      const uint32_t p = landed_pages_[next_landed_++];
      page_sums_[p] = Xxh3Cold({job_.pages[p].data, job_.pages[p].bytes});
    } else {
      row_sum_.UpdateCold({job_.row[row_hashed_].data, job_.row[row_hashed_].bytes});
      ++row_hashed_;
    }
    ctx_.counters.read_hash_ns += NowNs() - start;
  }

  void Verify() {
    STRATA_ASSERT(sums_landed_, "checksum segment read before verification");
    const uint32_t first = job_.first_page;
    for (uint32_t i = 0; i < page_sums_.size(); ++i) {
      const uint64_t at = 8 * (uint64_t{first} + i) - sums_begin_;
      uint64_t stored = 0;
      for (int b = 0; b < 8; ++b) {
        stored |= uint64_t{std::to_integer<uint8_t>(sums_buffer_.data()[at + b])} << (8 * b);
      }
      if (stored != page_sums_[i]) {
        ++ctx_.counters.checksum_failures;
        bad_page_ = first + i;
        Fail(Status::Corruption("page " + std::to_string(first + i) + " of " +
                                std::to_string(job_.expected.tail_page_count) +
                                " failed its checksum (stored " + Hex(stored) + ", read " +
                                Hex(page_sums_[i]) + ")"));
        return;
      }
    }
    if (!job_.row.empty() && row_sum_.Digest() != job_.expected.row_checksum) {
      ++ctx_.counters.checksum_failures;
      Fail(Status::Corruption("row segment failed its checksum (stored " +
                              Hex(job_.expected.row_checksum) + ", read " + Hex(row_sum_.Digest()) +
                              ")"));
      return;
    }
    phase_ = Phase::kDone;
  }

  ReadRecordJob job_;
  RunContext ctx_;
  Phase phase_ = Phase::kOpen;
  Status error_;
  std::optional<uint32_t> bad_page_;
  int fd_ = -1;
  RecordExtents extents_;
  AlignedBuffer header_buffer_;
  AlignedBuffer sums_buffer_;
  uint64_t sums_begin_ = 0;  // byte offset of sums_buffer_ within the checksum segment
  bool sums_issued_ = false;
  bool sums_landed_ = false;
  std::vector<Chunk> chunks_;
  size_t next_chunk_ = 0;
  std::vector<uint32_t> pending_;       // chunks still to land, per piece (pages, then row)
  std::vector<uint32_t> landed_pages_;  // pages whose bytes all landed, in landing order
  size_t next_landed_ = 0;              // landed_pages_ below it are hashed
  size_t row_hashed_ = 0;               // row pieces folded into row_sum_
  std::vector<uint64_t> page_sums_;
  Xxh3Stream row_sum_;
  uint64_t payload_bytes_ = 0;
};

}  // namespace

std::unique_ptr<JobRun> MakeReadRun(JobId id, ReadRecordJob job, const RunContext& ctx) {
  return std::make_unique<ReadRun>(id, std::move(job), ctx);
}

}  // namespace strata::disk_internal
