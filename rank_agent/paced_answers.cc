#include "rank_agent/paced_answers.h"

#include <utility>

namespace strata {

void PacedAnswers::Add(FetchedShare share, wire::JobDone done) {
  const JobId id = done.id;
  HostBuffers buffers =
      share.buffers;  // the pieces point into share.bytes, which moves as a pointer
  queue_.push_back(Answer{
      .share = std::move(share), .cursor = ShareCursor(id, buffers), .done = std::move(done)});
}

Status PacedAnswers::Send(wire::MessageChannel& link, std::vector<wire::JobDone>& sent) {
  while (!queue_.empty()) {
    Answer& a = queue_.front();
    Result<bool> paced = SendPaced(link, a.cursor);
    if (paced.ok() && !*paced) return Status::Ok();  // the rest once the link drained
    if (!paced.ok()) {
      a.done.status =
          wire::FitForWire(paced.status().WithContext("sending the bytes a fetch read"));
      a.done.bytes = 0;
    }
    Status answered = link.Send(a.done);
    if (!answered.ok()) {
      return answered.WithContext("reporting job " + std::to_string(a.done.id.value) +
                                  " to rank zero");
    }
    sent.push_back(std::move(a.done));
    queue_.pop_front();
  }
  return Status::Ok();
}

}  // namespace strata
