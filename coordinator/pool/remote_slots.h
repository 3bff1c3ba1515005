// RemoteSlots: an instance's copies into and out of the manager's slots
// through one data connection (docs/pool.md, "The data channel"), for an
// instance that maps no arena (another host, or the channel forced).
//
// A record moves window by window: each window lies inside one slot and is
// at most the manager's window size (4 MiB), and at most `credits` windows
// are outstanding. A put sends SlotWrite frames, each followed by its
// bytes straight from the record (hashed as they are sent), and returns
// once every window was answered: its commit, on the control connection,
// then finds every byte in the slots. A claim sends SlotReads and reads each
// SlotData's bytes straight into the claim's buffer, hashing each window
// as it lands; the record is checked against its checksum when the last
// window landed. After a refused window the outstanding answers are still
// read, so the connection stays usable; a connection that failed (a stall,
// a manager that dropped it) fails that copy (kUnavailable) and is opened
// again by the next one, which fails in turn once the session has ended.
//
// Thread: any; one copy at a time (a mutex), so the owner's puts and the
// claim copier's reads may share one channel, though PoolClient opens one
// for each so that neither waits on the other.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "coordinator/pool/data_stream.h"
#include "coordinator/pool/pool_socket.h"
#include "coordinator/pool/slot_access.h"
#include "coordinator/rendezvous/job_secret.h"
#include "store/base/mutex.h"
#include "wire/tls.h"

namespace strata::pool {

// One window of a record: bytes [offset, offset + bytes), inside one slot.
struct RecordWindow {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
// A record of `record_bytes` cut into windows of at most `window_bytes`
// that never cross a slot of `slot_bytes`, in order. Pure.
std::vector<RecordWindow> RecordWindows(uint64_t record_bytes, uint64_t slot_bytes,
                                        uint64_t window_bytes);

struct DataChannelOptions {
  PoolAddress address;  // the manager's tcp:// address
  JobSecret job_secret;
  std::shared_ptr<const wire::TlsContext> tls;  // null: in the clear
  InstanceId instance{};                        // HelloAccept's
  DataToken token{};                            // HelloAccept.data_token
  uint64_t slot_bytes = 0;
  uint32_t slot_count = 0;
  uint64_t window_bytes = 0;
  uint32_t window_credits = 0;
  std::chrono::milliseconds bound{5'000};  // opening, and each window's answer
};

class RemoteSlots final : public SlotAccess {
 public:
  // Opens a data connection: TCP (and TLS), the Challenge, a DataHello
  // proving the job secret and naming the token. kFailedPrecondition when
  // the manager refused it (no session holds the token); kUnavailable when
  // it did not answer in time.
  static Result<std::unique_ptr<RemoteSlots>> Open(const DataChannelOptions& options);

  Result<uint64_t> CopyIn(PutId put, std::span<const SlotId> slots,
                          std::span<const std::byte> bytes, HashPipeline& hash) override;
  Status CopyOut(ClaimId claim, uint32_t index, const ClaimedRecord& r, std::vector<std::byte>& out,
                 HashPipeline& hash) override;

 private:
  // The most windows outstanding, whatever the manager granted.
  static constexpr uint32_t kCreditsMax = 64;

  RemoteSlots(const DataChannelOptions& options, std::unique_ptr<DataStream> stream)
      : options_(options), stream_(std::move(stream)) {}
  // A data connection of the session: TCP, the Challenge and a DataHello.
  static Result<std::unique_ptr<DataStream>> OpenStream(const DataChannelOptions& options);
  // OK, or reopens a broken connection first (its failure).
  Status Usable() REQUIRES(mu_);
  // Sends window w's request under request id `id`.
  using SendWindow = std::function<Status(const RecordWindow& w, uint64_t id)>;
  // Takes the answer to window w's request (its frame read, its bytes not
  // yet), setting `refusal` to the manager's refusal of the window (left OK:
  // taken); an error breaks the connection (a wrong kind of answer, a failed
  // read).
  using TakeAnswer =
      std::function<Status(const RecordWindow& w, const PoolMessage& answer, Status& refusal)>;
  // Moves `windows` in order with at most credits() outstanding, each
  // answered in turn; after the first refusal (kept in `refused`) no more
  // are sent, but the outstanding answers are still taken, so the connection
  // stays in step. An error when the connection broke (then `broken_` is set
  // and every piece handed to `hash` is hashed).
  Status Exchange(std::span<const RecordWindow> windows, HashPipeline& hash, const SendWindow& send,
                  const TakeAnswer& take, Status& refused) REQUIRES(mu_);
  DataDeadline Deadline() const { return std::chrono::steady_clock::now() + options_.bound; }
  uint32_t credits() const { return std::min(options_.window_credits, kCreditsMax); }

  DataChannelOptions options_;
  Mutex mu_;
  std::unique_ptr<DataStream> stream_ GUARDED_BY(mu_);
  uint64_t next_request_ GUARDED_BY(mu_) = 1;
  // Set once the stream broke (a send or an answer failed): every later copy fails.
  Status broken_ GUARDED_BY(mu_);
};

}  // namespace strata::pool
