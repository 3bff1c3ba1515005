#include "store/record/record_file.h"

#include "store/base/aligned_buffer.h"

namespace strata {

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Num(uint64_t v) { return std::to_string(v); }

// Closes a descriptor on scope exit.
class FdGuard {
 public:
  FdGuard(FileSystem& fs, int fd) : fs_(fs), fd_(fd) {}
  ~FdGuard() { fs_.Close(fd_); }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;

 private:
  FileSystem& fs_;
  int fd_;
};

}  // namespace

std::string RecordFileName(const PrefixKey& key) {
  return key.ToFileStem() + std::string(kRecordSuffix);
}

std::string TemporaryFileName(const PrefixKey& key) {
  return RecordFileName(key) + std::string(kTemporarySuffix);
}

ParsedName ParseRecordName(std::string_view name) {
  ParsedName parsed;
  if (EndsWith(name, kTemporarySuffix)) {
    parsed.kind = NameKind::kTemporary;
    return parsed;
  }
  if (!EndsWith(name, kRecordSuffix)) return parsed;
  Result<PrefixKey> key =
      PrefixKey::ParseFileStem(name.substr(0, name.size() - kRecordSuffix.size()));
  if (!key.ok()) {
    parsed.kind = NameKind::kBadRecord;
    parsed.error = key.status().message();
    return parsed;
  }
  parsed.kind = NameKind::kRecord;
  parsed.key = *key;
  return parsed;
}

Result<RowState> RowStateFromSize(const RecordExtents& e, uint64_t file_bytes) {
  if (file_bytes < e.page_segment_offset) {
    return Status::Corruption("file of " + Num(file_bytes) +
                              " bytes ends inside its checksum segment, which ends at " +
                              Num(e.page_segment_offset));
  }
  if (file_bytes < e.row_segment_offset) {
    const uint64_t page = (file_bytes - e.page_segment_offset) / e.page_record_bytes;
    const uint64_t pages = (e.row_segment_offset - e.page_segment_offset) / e.page_record_bytes;
    return Status::Corruption(
        "file of " + Num(file_bytes) + " bytes ends inside its page segment (in page " + Num(page) +
        " of " + Num(pages) + "; the header's sizes need " + Num(e.row_segment_offset) + " bytes)");
  }
  if (file_bytes == e.row_segment_offset) return RowState::kAbsent;
  if (file_bytes < e.file_bytes_with_row()) return RowState::kPartial;
  if (file_bytes == e.file_bytes_with_row()) return RowState::kPresent;
  return Status::Corruption("file of " + Num(file_bytes) + " bytes is " +
                            Num(file_bytes - e.file_bytes_with_row()) +
                            " bytes longer than its record");
}

Result<RecordHeader> ReadRecordHeader(FileSystem& fs, int fd) {
  AlignedBuffer buffer(kRecordHeaderBytes);
  STRATA_ASSIGN_OR_RETURN(uint64_t got, fs.ReadAt(fd, buffer.span(), 0));
  if (got < kRecordHeaderBytes) {
    return Status::Corruption("file of " + Num(got) +
                              " bytes is shorter than its 4096-byte header");
  }
  return DecodeRecordHeader(buffer.span());
}

Result<int> BeginRecordWrite(FileSystem& fs, int dir_fd, const PrefixKey& key,
                             uint64_t file_bytes) {
  const std::string temp = TemporaryFileName(key);
  Result<int> opened = fs.OpenAt(dir_fd, temp, OpenFor::kDirectWriteNew);
  if (opened.status().code() == StatusCode::kAlreadyExists) {
    // Left by an abandoned write whose removal failed (or planted): unlink
    // the name, never what it points to, and create the file afresh.
    STRATA_RETURN_IF_ERROR(fs.Unlink(dir_fd, temp).WithContext("remove stale " + temp));
    opened = fs.OpenAt(dir_fd, temp, OpenFor::kDirectWriteNew);
  }
  STRATA_ASSIGN_OR_RETURN(int fd, std::move(opened));
  Status allocated = fs.Allocate(fd, file_bytes);
  if (!allocated.ok()) {
    fs.Close(fd);
    (void)fs.Unlink(dir_fd, temp);
    if (allocated.code() == StatusCode::kFsFull) {
      // Name the filesystem and what it has left: the disk tier lowers its
      // effective limit on this failure, and the operator reads it in the log.
      Result<uint64_t> free_bytes = fs.FreeBytes(dir_fd);
      return allocated.WithContext(
          "preallocate " + Num(file_bytes) + " bytes for " + temp + " on the " +
          fs.FilesystemName(dir_fd) + " filesystem, which has " +
          (free_bytes.ok() ? Num(*free_bytes) + " bytes" : std::string("an unknown amount")) +
          " free");
    }
    return allocated.WithContext("preallocate " + temp);
  }
  return fd;
}

Status CommitRecordWrite(FileSystem& fs, int dir_fd, const PrefixKey& key) {
  return fs.Rename(dir_fd, TemporaryFileName(key), RecordFileName(key));
}

Status AbortRecordWrite(FileSystem& fs, int dir_fd, const PrefixKey& key) {
  Status s = fs.Unlink(dir_fd, TemporaryFileName(key));
  if (s.code() == StatusCode::kNotFound) return Status::Ok();
  return s;
}

Status TruncateRecordRow(FileSystem& fs, int dir_fd, const RecordHeader& expected,
                         Durability durability) {
  const std::string name = RecordFileName(expected.key);
  STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenAt(dir_fd, name, OpenFor::kReadWrite));
  FdGuard guard(fs, fd);
  Result<RecordHeader> actual = ReadRecordHeader(fs, fd);
  if (!actual.ok()) return actual.status().WithContext(name);
  if (std::optional<std::string> field = FirstHeaderDifference(expected, *actual)) {
    return Status::FailedPrecondition(name + ": " + *field +
                                      " in the file differs from the indexed record");
  }
  STRATA_ASSIGN_OR_RETURN(RecordExtents e, ComputeExtents(expected));
  STRATA_RETURN_IF_ERROR(fs.Truncate(fd, e.row_segment_offset).WithContext(name));
  if (durability == Durability::kSync) STRATA_RETURN_IF_ERROR(fs.SyncData(fd).WithContext(name));
  return Status::Ok();
}

Status UnlinkRecord(FileSystem& fs, int dir_fd, const PrefixKey& key, Durability durability) {
  Status s = fs.Unlink(dir_fd, RecordFileName(key));
  if (s.code() == StatusCode::kNotFound) return Status::Ok();
  STRATA_RETURN_IF_ERROR(s);
  if (durability == Durability::kSync) return fs.Sync(dir_fd).WithContext("fsync directory");
  return Status::Ok();
}

Status ProbeDirectIo(FileSystem& fs, int dir_fd, const std::string& dir_path) {
  const std::string where =
      "the " + fs.FilesystemName(dir_fd) + " filesystem holding '" + dir_path + "'";
  (void)fs.Unlink(dir_fd, kDirectIoProbeName);  // a probe a crash left behind
  Result<int> fd = fs.OpenAt(dir_fd, kDirectIoProbeName, OpenFor::kDirectWriteNew);
  if (!fd.ok()) {
    // Tell "refuses O_DIRECT" apart from "cannot create files here".
    Result<int> plain = fs.OpenAt(dir_fd, kDirectIoProbeName, OpenFor::kWriteNew);
    if (!plain.ok()) return fd.status().WithContext("direct I/O probe in '" + dir_path + "'");
    fs.Close(*plain);
    (void)fs.Unlink(dir_fd, kDirectIoProbeName);
    return Status::FailedPrecondition(where + " refuses O_DIRECT (" + fd.status().message() +
                                      "); record directories need a filesystem with direct "
                                      "I/O, such as ext4 or xfs");
  }
  AlignedBuffer block(kRecordAlign);
  Status wrote = fs.WriteAt(*fd, block.span(), 0);
  fs.Close(*fd);
  Status removed = fs.Unlink(dir_fd, kDirectIoProbeName);
  if (!wrote.ok()) return wrote.WithContext("direct I/O probe write on " + where);
  return removed;
}

}  // namespace strata
