#include "store/record/record_verify.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "store/record/checksum.h"

namespace strata {

namespace {

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// Reads exactly `out.size()` bytes at `offset`; a short read is corruption
// (the file ends before what its header says).
Status ReadExactly(FileSystem& fs, int fd, std::span<std::byte> out, uint64_t offset) {
  STRATA_ASSIGN_OR_RETURN(uint64_t got, fs.ReadAt(fd, out, offset));
  if (got == out.size()) return Status::Ok();
  return Status::Corruption("file ends at " + std::to_string(offset + got) +
                            " bytes, inside what its header says it holds");
}

// The stored checksums of the pages, read one 4 KiB block at a time.
class StoredSums {
 public:
  StoredSums(FileSystem& fs, int fd, uint64_t segment_offset)
      : fs_(fs), fd_(fd), segment_offset_(segment_offset) {}

  Result<uint64_t> Of(uint32_t page) {
    const uint64_t at = uint64_t{8} * page;
    const uint64_t block = at / kBlockBytes;
    if (block != block_) {
      STRATA_RETURN_IF_ERROR(ReadExactly(fs_, fd_, bytes_, segment_offset_ + block * kBlockBytes));
      block_ = block;
    }
    uint64_t v = 0;
    for (uint64_t b = 0; b < 8; ++b) {
      v |= uint64_t{std::to_integer<uint8_t>(bytes_[at % kBlockBytes + b])} << (8 * b);
    }
    return v;
  }

 private:
  static constexpr uint64_t kBlockBytes = 4096;
  FileSystem& fs_;
  int fd_;
  uint64_t segment_offset_;
  uint64_t block_ = ~uint64_t{0};
  std::array<std::byte, kBlockBytes> bytes_{};
};

// Feeds [offset, offset + bytes) of the file through `scratch` to `sink`,
// which gets each chunk as it lands; stops at the sink's first error.
template <typename Sink>
Status Stream(FileSystem& fs, int fd, uint64_t offset, uint64_t bytes, std::span<std::byte> scratch,
              Sink&& sink) {
  for (uint64_t done = 0; done < bytes;) {
    const std::span<std::byte> chunk =
        scratch.first(std::min<uint64_t>(scratch.size(), bytes - done));
    STRATA_RETURN_IF_ERROR(ReadExactly(fs, fd, chunk, offset + done));
    STRATA_RETURN_IF_ERROR(sink(std::span<const std::byte>(chunk)));
    done += chunk.size();
  }
  return Status::Ok();
}

}  // namespace

Status VerifyRecordFile(FileSystem& fs, int fd, const RecordHeader& header,
                        const RecordExtents& extents, bool row_present,
                        std::span<std::byte> scratch) {
  if (scratch.empty()) return Status::InvalidArgument("no scratch memory to verify with");
  StoredSums sums(fs, fd, extents.checksum_segment_offset);
  const uint32_t pages = header.tail_page_count;
  uint32_t page = 0;
  uint64_t into_page = 0;  // bytes of `page` hashed so far
  Xxh3Stream hash;
  auto check_pages = [&](std::span<const std::byte> chunk) -> Status {
    while (!chunk.empty()) {
      const uint64_t take = std::min<uint64_t>(chunk.size(), extents.page_record_bytes - into_page);
      hash.Update(chunk.first(take));
      chunk = chunk.subspan(take);
      into_page += take;
      if (into_page < extents.page_record_bytes) continue;
      STRATA_ASSIGN_OR_RETURN(uint64_t stored, sums.Of(page));
      const uint64_t read = hash.Digest();
      if (stored != read) {
        return Status::Corruption("page " + std::to_string(page) + " of " + std::to_string(pages) +
                                  " failed its checksum (stored " + Hex(stored) + ", read " +
                                  Hex(read) + ")");
      }
      hash.Reset();
      into_page = 0;
      ++page;
    }
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(Stream(fs, fd, extents.page_segment_offset,
                                uint64_t{pages} * extents.page_record_bytes, scratch, check_pages));
  if (!row_present) return Status::Ok();
  hash.Reset();
  STRATA_RETURN_IF_ERROR(Stream(fs, fd, extents.row_segment_offset, extents.row_segment_bytes,
                                scratch, [&](std::span<const std::byte> chunk) {
                                  hash.Update(chunk);
                                  return Status::Ok();
                                }));
  if (hash.Digest() != header.row_checksum) {
    return Status::Corruption("row segment failed its checksum (stored " +
                              Hex(header.row_checksum) + ", read " + Hex(hash.Digest()) + ")");
  }
  return Status::Ok();
}

}  // namespace strata
