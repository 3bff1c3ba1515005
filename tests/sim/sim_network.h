// SimNetwork: the simulated network between rank zero and its peer ranks in
// the seeded simulation: one duplex link per peer. Every message travels as
// a real wire frame (wire/codec.h), encoded at the sender and decoded on
// delivery. Each direction is FIFO, as a TCP stream is; links are
// independent, so messages reorder across links. Faults the simulation
// sets: delay spikes, a half-open link (frames in one direction never
// arrive, so the sender's queue fills), a reset (both ends see the close and
// unsent frames are lost), and a peer that stops reading (its side leaves
// frames queued; see SimAgent).
//
// Rank zero's end of each link is a SimChannel (wire::MessageChannel, the
// interface wire::Link serves), feeding rank zero's real LinkInbox through
// the handlers it was started with. Single-threaded and deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "store/base/ids.h"
#include "tests/sim/sim_disk.h"
#include "tests/sim/sim_random.h"
#include "wire/codec.h"
#include "wire/link/link.h"

namespace strata::sim {

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

struct SimFrame {
  SimTime at = 0;  // when it arrives; kNever on a half-open link
  wire::Message message;
  wire::Frame frame;
  bool hostile = false;  // a protocol violation the simulation planted
};

struct SimNetworkOptions {
  uint32_t peers = 1;             // ranks 1 .. peers
  size_t send_queue_frames = 64;  // rank zero's frames not yet delivered to one peer
  SimTime delay_min = 20;
  SimTime delay_max = 800;
};

class SimNetwork {
 public:
  SimNetwork(SimNetworkOptions options, SimRandom& random);

  void set_now(SimTime now) { now_ = now; }
  SimTime now() const { return now_; }

  // Rank zero's end of the link to `rank`, delivering into `handlers`
  // (rank zero's LinkInbox::HandlersFor). Call once per peer.
  std::unique_ptr<wire::MessageChannel> ChannelTo(RankId rank, wire::LinkHandlers handlers);

  // ---- the peer's side ----
  // A peer's send to rank zero; lost when the link is reset or closed.
  // `hostile`: a protocol violation, counted when it reaches rank zero.
  void SendToZero(RankId rank, const wire::Message& message, bool hostile = false);
  // Frames for `rank` due at the current time, decoded, oldest first.
  // Errors: a frame that does not decode back to what was sent (a codec
  // bug; the simulation reports it).
  Status TakeForPeer(RankId rank, std::vector<wire::Message>& out);
  // True once the peer's end is gone (reset, or rank zero closed the link
  // and every queued frame was taken).
  bool PeerSideClosed(RankId rank) const;

  // ---- rank zero's side ----
  // Delivers every frame due for rank zero, visiting links in a random
  // order. Errors: as TakeForPeer.
  Status DeliverToZero();

  // ---- faults ----
  void Reset(RankId rank, const std::string& why);
  void Blackhole(RankId rank, bool to_peer);
  void Spike(RankId rank, SimTime extra, SimTime until);
  bool Unresponsive(RankId rank) const;  // reset or half-open
  // Called after rank zero queues a frame (a simulation that must answer at
  // once, as while rank zero closes, runs its world from here).
  void set_on_send(std::function<void()> hook) { on_send_ = std::move(hook); }

  // Every Job frame still on its way to `rank`.
  void ForEachJobToPeer(RankId rank, const std::function<void(const RecordJob&)>& fn) const;
  uint64_t frames_delivered() const { return frames_delivered_; }
  uint64_t hostile_delivered() const { return hostile_delivered_; }

 private:
  friend class SimChannel;
  struct Direction {
    std::deque<SimFrame> frames;
    SimTime last_at = 0;
    bool blackholed = false;
  };
  struct LinkEnds {
    Direction to_peer;
    Direction to_zero;
    bool zero_closed = false;  // rank zero's end closed (locally or by a reset)
    bool reset = false;
    SimTime spike = 0;
    SimTime spike_until = 0;
    wire::LinkHandlers handlers;
    wire::LinkState state;
    wire::LinkStats stats;
  };
  LinkEnds& Ends(RankId rank) { return links_.at(rank.value - 1); }
  const LinkEnds& Ends(RankId rank) const { return links_.at(rank.value - 1); }
  Status Enqueue(LinkEnds& link, Direction& d, const wire::Message& message, bool hostile = false);
  static Status Decode(const SimFrame& f, wire::Message& out);
  // Rank zero's channel: send and close.
  Status SendFromZero(RankId rank, const wire::Message& message);
  void CloseFromZero(RankId rank);

  SimNetworkOptions options_;
  SimRandom& random_;
  SimTime now_ = 0;
  std::vector<LinkEnds> links_;  // index = rank - 1
  std::function<void()> on_send_;
  uint64_t frames_delivered_ = 0;
  uint64_t hostile_delivered_ = 0;
};

}  // namespace strata::sim
