// PacedAnswers: a peer's answers to host-data fetches on their way to rank
// zero (docs/wire.md, JobData): each fetch's bytes as JobData chunks, paced
// on the record link (kPacedQueueBytes queued at most, the rest once the
// link drained), then its JobDone. A share may be far larger than the
// link's send queue. The buffer a fetch read into is held until its last
// chunk is handed to the link.
//
// Thread: one caller at a time (the agent's serving lock).
#pragma once

#include <deque>
#include <vector>

#include "rank_agent/host_data.h"
#include "rank_agent/host_data_jobs.h"
#include "wire/link/link.h"
#include "wire/messages.h"

namespace strata {

class PacedAnswers {
 public:
  // Queues `done` (an OK answer) behind the bytes of `share`.
  void Add(FetchedShare share, wire::JobDone done);

  // Sends what `link` takes, in order, until a share waits for the link to
  // drain; appends each answer whose JobDone was handed to the link to
  // `sent`. A chunk the link refuses turns its answer into that failure
  // (the bytes cannot all arrive). Error: a JobDone the link refused.
  Status Send(wire::MessageChannel& link, std::vector<wire::JobDone>& sent);

  bool empty() const { return queue_.empty(); }

 private:
  struct Answer {
    FetchedShare share;
    ShareCursor cursor;  // over share.buffers
    wire::JobDone done;
  };
  std::deque<Answer> queue_;
};

}  // namespace strata
