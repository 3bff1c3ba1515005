#include "coordinator/rendezvous/rendezvous_roster.h"

#include "store/base/assert.h"

namespace strata {

namespace {

std::string RankList(const std::vector<RankId>& ranks) {
  if (ranks.empty()) return "none";
  std::string out;
  for (RankId r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r.value);
  return out;
}

}  // namespace

const RendezvousPeer* PeerTable::Find(RankId rank) const {
  if (rank.value == 0 || rank.value > peers.size()) return nullptr;
  return &peers[rank.value - 1];
}

RendezvousRoster::RendezvousRoster(uint32_t world_size)
    : world_size_(world_size), peers_(world_size) {
  STRATA_ASSERT(world_size >= 1, "a rendezvous needs at least rank zero");
}

Status RendezvousRoster::Admit(RankId rank, uint32_t world_size, const std::string& address,
                               const Nonce& nonce) {
  const std::string who = "rank " + std::to_string(rank.value) + " (from " + address + ")";
  if (world_size != world_size_) {
    return Status::InvalidArgument(who + " has world size " + std::to_string(world_size) +
                                   " but rank zero has world size " + std::to_string(world_size_) +
                                   " (every rank must be started with the same world size)");
  }
  if (rank.value == 0) {
    return Status::InvalidArgument("a peer at " + address +
                                   " claimed rank 0, which is rank zero's own (two processes "
                                   "were started as rank 0)");
  }
  if (rank.value >= world_size_) {
    return Status::InvalidArgument(who + " is out of range for world size " +
                                   std::to_string(world_size_) + " (peers are ranks 1.." +
                                   std::to_string(world_size_ - 1) + ")");
  }
  std::optional<RendezvousPeer>& slot = peers_[rank.value];
  if (slot.has_value()) {
    return Status::AlreadyExists("rank " + std::to_string(rank.value) + " joined twice: from " +
                                 slot->address + " and from " + address +
                                 " (two processes were started as rank " +
                                 std::to_string(rank.value) + ")");
  }
  slot = RendezvousPeer{rank, address, nonce};
  return Status::Ok();
}

void RendezvousRoster::Withdraw(RankId rank) {
  if (rank.value > 0 && rank.value < world_size_) peers_[rank.value].reset();
}

bool RendezvousRoster::complete() const { return Missing().empty(); }

std::vector<RankId> RendezvousRoster::Missing() const {
  std::vector<RankId> missing;
  for (uint32_t r = 1; r < world_size_; ++r) {
    if (!peers_[r].has_value()) missing.emplace_back(r);
  }
  return missing;
}

std::string RendezvousRoster::MissingSummary() const {
  std::vector<RankId> joined;
  for (uint32_t r = 1; r < world_size_; ++r) {
    if (peers_[r].has_value()) joined.emplace_back(r);
  }
  const std::vector<RankId> missing = Missing();
  return std::string(missing.size() == 1 ? "rank " : "ranks ") + RankList(missing) + " of " +
         std::to_string(world_size_) + " did not join (joined: " + RankList(joined) + ")";
}

const RendezvousPeer* RendezvousRoster::Find(RankId rank) const {
  if (rank.value == 0 || rank.value >= world_size_ || !peers_[rank.value].has_value()) {
    return nullptr;
  }
  return &*peers_[rank.value];
}

PeerTable RendezvousRoster::Table() const {
  STRATA_ASSERT(complete(), "PeerTable of an incomplete rendezvous");
  PeerTable table;
  table.world_size = world_size_;
  for (uint32_t r = 1; r < world_size_; ++r) table.peers.push_back(*peers_[r]);
  return table;
}

}  // namespace strata
