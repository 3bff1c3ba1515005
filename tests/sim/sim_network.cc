#include "tests/sim/sim_network.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace strata::sim {

// Rank zero's end of one simulated link.
class SimChannel final : public wire::MessageChannel {
 public:
  SimChannel(SimNetwork& net, RankId rank) : net_(net), rank_(rank) {}
  Status Send(const wire::Message& message) override { return net_.SendFromZero(rank_, message); }
  void Close() override { net_.CloseFromZero(rank_); }
  wire::LinkState state() const override { return net_.Ends(rank_).state; }
  wire::LinkStats stats() const override { return net_.Ends(rank_).stats; }

 private:
  SimNetwork& net_;
  RankId rank_;
};

SimNetwork::SimNetwork(SimNetworkOptions options, SimRandom& random)
    : options_(options), random_(random), links_(options.peers) {
  for (LinkEnds& l : links_) l.state.phase = wire::LinkPhase::kOpen;
}

std::unique_ptr<wire::MessageChannel> SimNetwork::ChannelTo(RankId rank,
                                                            wire::LinkHandlers handlers) {
  Ends(rank).handlers = std::move(handlers);
  return std::make_unique<SimChannel>(*this, rank);
}

Status SimNetwork::Enqueue(LinkEnds& link, Direction& d, const wire::Message& message,
                           bool hostile) {
  Result<wire::Frame> frame = wire::EncodeFrame(message);
  if (!frame.ok()) return frame.status();
  SimTime at = kNever;
  if (!d.blackholed) {
    SimTime delay = random_.Between(options_.delay_min, options_.delay_max);
    if (now_ < link.spike_until) delay += link.spike;
    at = std::max(d.last_at, now_ + delay);  // FIFO, as one TCP stream
    d.last_at = at;
  }
  d.frames.push_back({at, message, std::move(*frame), hostile});
  return Status::Ok();
}

Status SimNetwork::SendFromZero(RankId rank, const wire::Message& message) {
  LinkEnds& l = Ends(rank);
  if (l.zero_closed)
    return Status::Unavailable("simulated link to rank " + std::to_string(rank.value) +
                               " is closed");
  if (l.to_peer.frames.size() >= options_.send_queue_frames) {
    ++l.stats.send_queue_full;
    return Status::Busy("simulated send queue to rank " + std::to_string(rank.value) + " is full");
  }
  Status s = Enqueue(l, l.to_peer, message);
  if (!s.ok()) return s;
  ++l.stats.frames_out;
  l.stats.bytes_out += l.to_peer.frames.back().frame.size_bytes();
  if (on_send_) on_send_();
  return Status::Ok();
}

void SimNetwork::CloseFromZero(RankId rank) {
  LinkEnds& l = Ends(rank);
  if (l.zero_closed) return;
  l.zero_closed = true;
  l.to_zero.frames.clear();  // nobody reads them any more
  l.state = {wire::LinkPhase::kClosed, wire::CloseCause::kLocalClose, Status::Ok()};
  if (l.handlers.on_closed) l.handlers.on_closed(l.state);
}

void SimNetwork::SendToZero(RankId rank, const wire::Message& message, bool hostile) {
  LinkEnds& l = Ends(rank);
  if (l.reset || l.zero_closed) return;  // the write fails; the peer sees the close
  (void)Enqueue(l, l.to_zero, message, hostile);
}

Status SimNetwork::Decode(const SimFrame& f, wire::Message& out) {
  Result<wire::Message> m = wire::DecodeFrame(std::span(f.frame.words));
  if (!m.ok()) return m.status().WithContext("decoding a simulated frame");
  if (!(*m == f.message)) {
    return Status::Internal("a " + std::string(wire::MessageName(f.message)) +
                            " frame decoded to a different message");
  }
  out = std::move(*m);
  return Status::Ok();
}

Status SimNetwork::TakeForPeer(RankId rank, std::vector<wire::Message>& out) {
  LinkEnds& l = Ends(rank);
  while (!l.to_peer.frames.empty() && l.to_peer.frames.front().at <= now_) {
    wire::Message m;
    Status s = Decode(l.to_peer.frames.front(), m);
    l.to_peer.frames.pop_front();
    if (!s.ok()) return s;
    ++frames_delivered_;
    out.push_back(std::move(m));
  }
  return Status::Ok();
}

bool SimNetwork::PeerSideClosed(RankId rank) const {
  const LinkEnds& l = Ends(rank);
  return l.reset || (l.zero_closed && l.to_peer.frames.empty());
}

Status SimNetwork::DeliverToZero() {
  std::vector<size_t> order(links_.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random_.Below(i)]);
  for (size_t i : order) {
    LinkEnds& l = links_[i];
    while (!l.zero_closed && !l.to_zero.frames.empty() && l.to_zero.frames.front().at <= now_) {
      wire::Message m;
      Status s = Decode(l.to_zero.frames.front(), m);
      hostile_delivered_ += l.to_zero.frames.front().hostile ? 1 : 0;
      ++l.stats.frames_in;
      l.stats.bytes_in += l.to_zero.frames.front().frame.size_bytes();
      l.to_zero.frames.pop_front();
      if (!s.ok()) return s;
      ++frames_delivered_;
      if (l.handlers.on_message) l.handlers.on_message(std::move(m));
    }
  }
  return Status::Ok();
}

void SimNetwork::Reset(RankId rank, const std::string& why) {
  LinkEnds& l = Ends(rank);
  l.reset = true;
  l.stats.frames_dropped += l.to_peer.frames.size();  // a reset loses unsent data
  l.to_peer.frames.clear();
  l.to_zero.frames.clear();
  if (l.zero_closed) return;
  l.zero_closed = true;
  l.state = {wire::LinkPhase::kClosed, wire::CloseCause::kIoError,
             Status::Unavailable("connection reset (simulated: " + why + ")")};
  if (l.handlers.on_closed) l.handlers.on_closed(l.state);
}

void SimNetwork::Blackhole(RankId rank, bool to_peer) {
  LinkEnds& l = Ends(rank);
  Direction& d = to_peer ? l.to_peer : l.to_zero;
  d.blackholed = true;
  for (SimFrame& f : d.frames) f.at = kNever;
}

void SimNetwork::Spike(RankId rank, SimTime extra, SimTime until) {
  LinkEnds& l = Ends(rank);
  l.spike = extra;
  l.spike_until = until;
}

bool SimNetwork::Unresponsive(RankId rank) const {
  const LinkEnds& l = Ends(rank);
  return l.reset || l.to_peer.blackholed || l.to_zero.blackholed;
}

void SimNetwork::ForEachJobToPeer(RankId rank,
                                  const std::function<void(const RecordJob&)>& fn) const {
  for (const SimFrame& f : Ends(rank).to_peer.frames) {
    if (const auto* job = std::get_if<wire::Job>(&f.message)) fn(job->record);
  }
}

}  // namespace strata::sim
