// The host instantiation of cuda/xxh3_core.h against libxxhash (through
// store/record/checksum.h): every length class, random piece lists with
// implicit zero padding, and the page records and row of a record file the
// disk thread wrote.
#include "cuda/xxh3_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

#include "store/record/checksum.h"
#include "store/record/record_layout.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using xxh3::Piece;

uint64_t Reference(const std::vector<unsigned char>& bytes) {
  return Xxh3(std::as_bytes(std::span(bytes)));
}

// A random piece list and the concatenation it stands for. Pieces point into
// `backing` at random (often unaligned) offsets; a piece's padding is zeros
// in `logical` and absent from `backing`.
struct PieceList {
  std::vector<unsigned char> backing;
  std::vector<Piece> pieces;
  std::vector<unsigned char> logical;
};

enum class Padding : unsigned char { kNone, kRandom };

PieceList SplitRandomly(std::mt19937_64& rng, uint64_t length, Padding padding) {
  PieceList out;
  struct Span {
    uint64_t at, data, stored;
  };
  std::vector<Span> spans;
  uint64_t at = 0;
  for (uint64_t left = length; left > 0 || spans.empty();) {
    const uint64_t stored = left == 0 ? 0 : 1 + rng() % std::min<uint64_t>(left, 1 + rng() % 600);
    const uint64_t data = padding == Padding::kNone ? stored : rng() % (stored + 1);
    at += rng() % 8;  // misalign the next piece
    spans.push_back({at, data, stored});
    at += data;
    left -= stored;
    if (rng() % 8 == 0) spans.push_back({at, 0, 0});  // empty pieces are skipped
  }
  out.backing.resize(at);
  for (unsigned char& b : out.backing) b = static_cast<unsigned char>(rng());
  for (const Span& s : spans) {
    out.pieces.push_back({out.backing.data() + s.at, s.data, s.stored});
    out.logical.insert(out.logical.end(), out.backing.begin() + static_cast<int64_t>(s.at),
                       out.backing.begin() + static_cast<int64_t>(s.at + s.data));
    out.logical.resize(out.logical.size() + (s.stored - s.data), 0);
  }
  return out;
}

uint64_t Core(const PieceList& l) { return xxh3::HashPieces(l.pieces.data(), l.pieces.size()); }

TEST(Xxh3Core, EveryLengthUpToFourBlocksAsOnePiece) {
  std::mt19937_64 rng(1);
  std::vector<unsigned char> bytes(4 * xxh3::kBlockBytes + 130);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  for (uint64_t len = 0; len <= bytes.size(); ++len) {
    std::vector<unsigned char> prefix(bytes.begin(), bytes.begin() + static_cast<int64_t>(len));
    const Piece piece{bytes.data(), len, len};
    ASSERT_EQ(xxh3::HashPieces(&piece, 1), Reference(prefix)) << "length " << len;
  }
}

TEST(Xxh3Core, NoPiecesIsTheEmptyHash) { EXPECT_EQ(xxh3::HashPieces(nullptr, 0), Reference({})); }

TEST(Xxh3Core, EveryLengthClassSplitIntoRandomPieces) {
  // Edges of every class: 0, 1-3, 4-8, 9-16, 17-128, 129-240, > 240 (one
  // stripe, one block, a block plus a partial one, many blocks).
  const std::vector<uint64_t> lengths = {
      0,    1,    2,    3,    4,    7,    8,    9,    15,   16,   17,   32,    33,   64,
      65,   96,   97,   127,  128,  129,  143,  144,  239,  240,  241,  255,   256,  257,
      1023, 1024, 1025, 1087, 1088, 1089, 2048, 4095, 4096, 4097, 8191, 65536, 65537};
  std::mt19937_64 rng(2);
  for (uint64_t len : lengths) {
    for (int trial = 0; trial < 20; ++trial) {
      PieceList l = SplitRandomly(rng, len, Padding::kNone);
      ASSERT_EQ(Core(l), Reference(l.logical)) << "length " << len << " trial " << trial;
    }
  }
}

TEST(Xxh3Core, RandomLengthsAndPaddingMatchLibxxhash) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 3000; ++trial) {
    // Weighted toward the short classes, up to ~40 KiB.
    const uint64_t cap = std::array<uint64_t, 4>{17, 241, 3000, 40000}[trial % 4];
    const uint64_t len = rng() % cap;
    PieceList l = SplitRandomly(rng, len, Padding::kRandom);
    ASSERT_EQ(Core(l), Reference(l.logical)) << "length " << len << " trial " << trial;
  }
}

TEST(Xxh3Core, DiffersWhenOneByteChanges) {
  std::mt19937_64 rng(4);
  PieceList l = SplitRandomly(rng, 5000, Padding::kRandom);
  const uint64_t before = Core(l);
  for (Piece& p : l.pieces) {
    if (p.data_bytes == 0) continue;
    const_cast<unsigned char*>(p.data)[p.data_bytes / 2] ^= 1;
    break;
  }
  EXPECT_NE(Core(l), before);
}

// A stored page record of `layout` whose plane bytes are random and whose
// padding is zero, as the slab pool keeps it.
void FillPageRecord(std::mt19937_64& rng, const RecordLayout& layout, uint32_t ranks,
                    std::byte* record) {
  for (uint32_t r = 0; r < ranks; ++r) {
    for (uint32_t p = 0; p < layout.plane_count(r); ++p) {
      std::byte* plane = record + layout.plane_offset(r, p);
      const uint64_t bytes = layout.plane_bytes(r, p);
      for (uint64_t i = 0; i < bytes; ++i) plane[i] = static_cast<std::byte>(rng());
      std::fill(plane + bytes, plane + AlignUp(bytes), std::byte{0});
    }
  }
}

// The unpadded planes of one stored page record, padding implicit.
std::vector<Piece> PagePieces(const RecordLayout& layout, uint32_t ranks, const std::byte* record) {
  std::vector<Piece> out;
  for (uint32_t r = 0; r < ranks; ++r) {
    for (uint32_t p = 0; p < layout.plane_count(r); ++p) {
      const uint64_t bytes = layout.plane_bytes(r, p);
      out.push_back({reinterpret_cast<const unsigned char*>(record + layout.plane_offset(r, p)),
                     bytes, AlignUp(bytes)});
    }
  }
  return out;
}

uint64_t LoadU64(const std::byte* p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

enum class Replicated : unsigned char { kNo, kYes };

// Writes a record through the disk thread and checks the checksum segment and
// the header's row checksum against the core over unpadded planes and rows.
void CheckWrittenRecord(Replicated replicated) {
  // Two ranks; planes below, at and above 4 KiB so some pad and some do not.
  const CacheGeometry geometry =
      testing::MakeGeometry(16, {100, 4096, 5000, 24}, /*row_bytes=*/777, /*ranks=*/2);
  const RecordLayout layout(geometry);
  const bool rep = replicated == Replicated::kYes;
  const uint32_t stored_ranks = rep ? 1 : layout.rank_count();
  testing::DiskFixture f(geometry);
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  testing::TestRecord rec = testing::MakeRecord(geometry, testing::KeyOf(7), std::nullopt, 5,
                                                /*row_piece_bytes=*/8192, rep);
  std::mt19937_64 rng(5);
  for (AlignedBuffer& b : rec.page_buffers) FillPageRecord(rng, layout, stored_ranks, b.data());
  std::vector<std::byte> row(rec.extents.row_segment_bytes, std::byte{0});
  for (uint32_t r = 0; r < stored_ranks; ++r) {
    for (uint64_t i = 0; i < layout.row_bytes(r); ++i) {
      row[layout.row_offset(r) + i] = static_cast<std::byte>(rng());
    }
  }
  uint64_t done = 0;
  for (AlignedBuffer& b : rec.row_buffers) {
    std::copy_n(row.begin() + static_cast<int64_t>(done), b.size(), b.data());
    done += b.size();
  }
  ASSERT_TRUE(testing::WriteRecord(*f.thread, rec).status.ok());

  Result<int> fd = f.fs.OpenAt(f.dir->fd(), RecordFileName(rec.header.key), OpenFor::kRead);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  Result<RecordHeader> header = ReadRecordHeader(f.fs, *fd);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  std::vector<std::byte> sums(8 * rec.header.tail_page_count);
  Result<uint64_t> got = f.fs.ReadAt(*fd, sums, rec.extents.checksum_segment_offset);
  f.fs.Close(*fd);
  ASSERT_TRUE(got.ok() && *got == sums.size());

  for (uint32_t p = 0; p < rec.header.tail_page_count; ++p) {
    const std::vector<Piece> pieces = PagePieces(layout, stored_ranks, rec.page_buffers[p].data());
    EXPECT_EQ(xxh3::HashPieces(pieces.data(), pieces.size()), LoadU64(sums.data() + 8 * p))
        << "page " << p;
  }
  std::vector<Piece> row_pieces;
  for (uint32_t r = 0; r < stored_ranks; ++r) {
    row_pieces.push_back({reinterpret_cast<const unsigned char*>(row.data() + layout.row_offset(r)),
                          layout.row_bytes(r), AlignUp(layout.row_bytes(r))});
  }
  EXPECT_NE(header->row_checksum, 0u);
  EXPECT_EQ(xxh3::HashPieces(row_pieces.data(), row_pieces.size()), header->row_checksum);
}

TEST(Xxh3Core, MatchesTheChecksumsTheRecordWriterStores) { CheckWrittenRecord(Replicated::kNo); }

TEST(Xxh3Core, MatchesTheChecksumsOfAReplicatedRecord) { CheckWrittenRecord(Replicated::kYes); }

}  // namespace
}  // namespace strata
