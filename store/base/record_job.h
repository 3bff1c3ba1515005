// RecordJob: one record job as it crosses from the disk store to every rank
// (seed 2.4, 2.14), and its completion. Value types only, so the wire can
// carry them (store/tier/disk_transport.h runs them).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "store/base/digest.h"
#include "store/base/ids.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"

namespace strata {

enum class RecordJobKind : unsigned char {
  kStore,     // copy device pages + row out and write the record file
  kFetch,     // read a page suffix (+ row) of the file into device ids
  kTruncate,  // drop the file's row segment
  kUnlink,    // delete the file (a missing file is success)
};
std::string_view RecordJobKindName(RecordJobKind kind);

struct RecordJob {
  JobId id;
  RecordJobKind kind = RecordJobKind::kStore;
  PrefixKey key;
  // kStore: the header fields every rank writes.
  std::optional<PrefixKey> parent;
  Digest128 bucket{};
  uint32_t tail_pages = 0;  // kStore, kFetch, kTruncate: page records in the file
  // kStore: device ids of the file's pages, in order (copy-out sources).
  // kFetch: destination ids for file pages [first_page, tail_pages).
  std::vector<PageId> page_ids;
  uint32_t first_page = 0;  // kFetch
  // kStore: the row to copy out; kFetch: where the row goes. Absent: no row
  // (kStore writes a page-only file; kFetch reads pages only).
  std::optional<StateSlot> row_slot;
  bool replicated_pages = false;  // kStore/kFetch: the file holds one page share
  bool replicated_row = false;
  // Set: host bytes travel with the job on a peer's record link instead of
  // device ids (DiskTransport::SubmitShares, ranks in separate processes):
  // a kStore writes the file from the bytes rank zero sent as JobData before
  // it, a kFetch reads the file and returns its bytes as JobData before its
  // JobDone. page_ids and row_slot are then empty; `host_row` says whether
  // the row segment follows the pages in those bytes.
  bool host_data = false;
  bool host_row = false;
  friend bool operator==(const RecordJob&, const RecordJob&) = default;
};

struct RecordJobDone {
  JobId id;
  Status status;         // the first failure among ranks, or OK
  bool fs_full = false;  // some rank ran out of space: defer and retry later
  uint64_t bytes = 0;    // payload bytes moved, all ranks
};

// Checks a job a transport runs against device planes (page tokens
// `page_tokens`): a store names exactly its tail's page ids and writes the
// per-rank layout; a fetch names one destination id per page it reads.
// kInvalidArgument saying what is wrong; OK for truncates and unlinks.
Status CheckDeviceRecordJob(const RecordJob& job, uint64_t page_tokens);

}  // namespace strata
