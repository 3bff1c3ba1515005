// Writes the fuzz targets' seed corpora from the real encoders, so the seeds
// stay valid when a format changes: strata_fuzz_seed_corpus DIR writes
// DIR/<target>/<name> for every target (an empty folder where the target
// builds its own values from the input). Run by the fuzz build.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/record/record_header.h"
#include "wire/codec.h"

namespace strata::fuzz {
namespace {

namespace fs = std::filesystem;
using namespace strata::wire;

void Write(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "seed_corpus: cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

void AppendU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

template <size_t N>
std::array<uint8_t, N> Pattern(uint8_t seed) {
  std::array<uint8_t, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = static_cast<uint8_t>(seed * 31 + i);
  return out;
}

PrefixKey Key(uint64_t consumed, uint8_t seed) { return {consumed, Pattern<16>(seed)}; }

RankShape Rank(std::vector<uint64_t> planes, uint64_t row) { return {std::move(planes), row}; }

std::vector<RecordHeader> SampleHeaders() {
  std::vector<RecordHeader> out;
  RecordHeader base;
  base.identity = Pattern<32>(1);
  base.fingerprint = Pattern<16>(2);
  base.key = Key(64, 3);
  base.bucket = Pattern<16>(4);
  base.tail_page_count = 4;
  base.shape.page_tokens = 16;
  base.shape.ranks = {Rank({4096, 4096}, 512)};
  base.row_checksum = 0x0123456789abcdefULL;
  base.created_unix_ns = 1'700'000'000'000'000'000ULL;
  out.push_back(base);

  RecordHeader child = base;  // two ranks, replicated pages and row, a parent
  child.key = Key(128, 5);
  child.parent = base.key;
  child.pages_replicated = true;
  child.row_replicated = true;
  child.shape.ranks = {Rank({16384, 100}, 8192), Rank({16384, 100}, 8192)};
  out.push_back(child);

  RecordHeader uneven = base;  // ranks of different shapes, no pages
  uneven.tail_page_count = 0;
  uneven.shape.ranks = {Rank({1}, 1), Rank({4097, 3, 65536}, 1 << 20), Rank({7}, 12345)};
  out.push_back(uneven);

  RecordHeader wide = base;  // many ranks and planes: a long rank table
  wide.tail_page_count = 1 << 16;
  wide.shape.ranks.clear();
  for (uint64_t r = 0; r < 24; ++r) wide.shape.ranks.push_back(Rank({8192, 8192, 2048}, 4096));
  out.push_back(wide);

  RecordHeader extreme = base;  // sizes at their bounds
  extreme.tail_page_count = kMaxTailPages;
  extreme.key = Key(~uint64_t{0}, 6);
  extreme.parent = Key(0, 0);
  extreme.shape.ranks = {Rank({kMaxPlaneBytes}, kMaxRowBytes)};
  out.push_back(extreme);
  return out;
}

void WriteRecordHeaderSeeds(const fs::path& dir) {
  int n = 0;
  for (const RecordHeader& h : SampleHeaders()) {
    std::vector<uint8_t> bytes(kRecordHeaderBytes);
    const Status s = EncodeRecordHeader(h, std::as_writable_bytes(std::span(bytes)));
    if (!s.ok()) {
      std::fprintf(stderr, "seed_corpus: sample header %d: %s\n", n, s.ToString().c_str());
      std::exit(1);
    }
    const Result<RecordExtents> e = ComputeExtents(h);
    std::vector<uint8_t> whole = bytes;  // a complete file, then a torn row
    AppendU64(whole, e->file_bytes_with_row());
    whole.push_back(static_cast<uint8_t>(n * 37));
    whole.push_back(0);
    Write(dir, "header-" + std::to_string(n) + "-whole", whole);
    std::vector<uint8_t> torn = bytes;
    AppendU64(torn, e->row_segment_offset + 1);
    Write(dir, "header-" + std::to_string(n) + "-torn-row", torn);
    ++n;
  }
}

std::vector<Message> SampleMessages() {
  ScanSummary summary;
  summary.records.push_back({Key(64, 1), std::nullopt, Pattern<16>(3), true, 8192});
  summary.records.push_back({Key(100, 2), Key(64, 1), Pattern<16>(4), false, 12288});
  summary.last = false;
  Agreement agreement;
  agreement.entries = {{Key(64, 1), Verdict::kKeep},
                       {Key(100, 2), Verdict::kTruncate},
                       {Key(200, 3), Verdict::kDelete}};
  Hello hello;
  hello.nonce = Pattern<16>(7);
  hello.rank = RankId(1);
  hello.world_size = 4;
  hello.layout_fingerprint = Pattern<16>(8);
  hello.disk_limit_bytes = uint64_t{1} << 40;
  hello.has_disk_store = true;
  Job store;
  store.record.id = JobId(77);
  store.record.kind = RecordJobKind::kStore;
  store.record.key = Key(128, 9);
  store.record.parent = Key(64, 4);
  store.record.bucket = Pattern<16>(6);
  store.record.tail_pages = 3;
  store.record.page_ids = {PageId(7), PageId(0), PageId(0xffffffffU)};
  store.record.row_slot = StateSlot(5);
  Job fetch = store;
  fetch.record.kind = RecordJobKind::kFetch;
  fetch.record.first_page = 1;
  fetch.record.page_ids = {PageId(3), PageId(4)};
  fetch.record.row_slot.reset();
  fetch.record.replicated_pages = true;
  Job unlink;
  unlink.record.id = JobId(9);
  unlink.record.kind = RecordJobKind::kUnlink;
  unlink.record.key = Key(4096, 8);
  Job host_fetch = fetch;
  host_fetch.record.page_ids.clear();
  host_fetch.record.host_data = true;
  host_fetch.record.host_row = true;
  JobData data{.id = JobId(78), .offset = 4096, .total = 12288, .data = {}};
  data.data.assign(4096, std::byte{0x5a});
  return {hello,
          HelloAccept{kProtocolVersion},
          HelloReject{"wrong layout fingerprint"},
          summary,
          agreement,
          AgreementApplied{Status::IoError("unlink failed")},
          store,
          fetch,
          unlink,
          JobDone{JobId(9), RankId(2), Status::FsFull("no space left"), true, 4096},
          JobDone{JobId(10), RankId(1), Status::Ok(), false, 65536},
          Drain{},
          Drained{Status::Ok()},
          Close{"rank zero is stopping"},
          Heartbeat{0xfeedULL},
          host_fetch,
          data};
}

std::vector<uint8_t> FrameBytes(const Message& m) {
  const Result<Frame> frame = EncodeFrame(m);
  if (!frame.ok()) {
    std::fprintf(stderr, "seed_corpus: %s\n", frame.status().ToString().c_str());
    std::exit(1);
  }
  const auto bytes = frame->bytes();
  std::vector<uint8_t> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

void WriteWireSeeds(const fs::path& decode_dir, const fs::path& reader_dir) {
  const std::vector<Message> messages = SampleMessages();
  std::vector<uint8_t> stream = {0xff, 0xff};  // the frame reader's largest limit
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::vector<uint8_t> frame = FrameBytes(messages[i]);
    const std::string name = std::to_string(i) + "-" + std::string(MessageName(messages[i]));
    Write(decode_dir, name, frame);
    std::vector<uint8_t> one = {0xff, 0xff};
    one.insert(one.end(), frame.begin(), frame.end());
    Write(reader_dir, name, one);
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  Write(reader_dir, "all-messages", stream);
  // The same stream under a limit of 152 bytes: the larger frames are refused.
  stream[0] = 48;
  stream[1] = 0;
  Write(reader_dir, "all-messages-small-limit", stream);
}

}  // namespace
}  // namespace strata::fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  strata::fuzz::WriteRecordHeaderSeeds(dir / "record_header");
  strata::fuzz::WriteWireSeeds(dir / "wire_decode", dir / "frame_reader");
  fs::create_directories(dir / "record_header_encode");
  fs::create_directories(dir / "wire_encode");
  return 0;
}
