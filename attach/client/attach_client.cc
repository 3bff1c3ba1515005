#include "attach/client/attach_client.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attach/client/unix_channel.h"

namespace strata::attach {

struct AttachClient::Impl {
  explicit Impl(UniqueFd socket) : channel(std::move(socket)) {}

  UnixChannel channel;
  uint64_t next_request_id = 1;
  bool gone = false;                 // strata closed or failed the channel
  std::vector<AttachEvent> pending;  // arrived while Close waited
  AttachRendezvous rendezvous;       // from the HelloAccept (rank zero's rank)

  // Writes a request; a failed write means strata is gone.
  Status Request(const AttachMessage& m) {
    if (gone) return Status::Unavailable("strata rank is gone: offload stopped");
    Status s = channel.Send(m);
    if (!s.ok()) gone = true;
    return s;
  }

  // Sorts one received message into `events`; false for a message a runtime
  // never receives (the channel is then treated as broken).
  static bool Sort(AttachMessage m, std::vector<AttachEvent>& events) {
    if (auto* r = std::get_if<LookupResult>(&m)) return events.emplace_back(std::move(*r)), true;
    if (auto* t = std::get_if<TicketStatusResult>(&m)) return events.emplace_back(*t), true;
    if (auto* a = std::get_if<StoreAnswer>(&m)) return events.emplace_back(*a), true;
    if (auto* e = std::get_if<StoreEvent>(&m)) return events.emplace_back(std::move(*e)), true;
    return false;
  }
};

AttachClient::AttachClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AttachClient::~AttachClient() = default;

Result<std::unique_ptr<AttachClient>> AttachClient::Attach(
    const AttachOptions& options, const AttachIdentity& identity,
    const std::vector<std::vector<SharedAllocation>>& ranks) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options.socket_path.empty() || options.socket_path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("attach socket path \"" + options.socket_path +
                                   "\": empty or too long");
  }
  std::memcpy(addr.sun_path, options.socket_path.data(), options.socket_path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "attach socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::FromErrno(errno, "connecting to strata rank at " + options.socket_path);
  }
  STRATA_RETURN_IF_ERROR(SetSendTimeout(fd.get(), options.send_bound));
  auto impl = std::make_unique<Impl>(std::move(fd));

  AttachHello hello;
  hello.runtime_id = identity.runtime_id;
  hello.model_identity = identity.model_identity;
  hello.state_mode = identity.state_mode;
  hello.page_tokens = identity.page_tokens;
  hello.plane_handle = identity.plane_handle;
  hello.rendezvous = options.rendezvous;
  std::vector<int> fds;
  for (const auto& rank : ranks) {
    std::vector<SizedAllocation>& allocs = hello.ranks.emplace_back();
    for (const SharedAllocation& a : rank) {
      allocs.push_back(a.allocation);
      if (identity.plane_handle == PlaneHandleKind::kCudaIpc) {
        hello.ipc_planes.push_back(a.ipc);
      } else {
        fds.push_back(a.fd);
      }
    }
  }
  // A refusal may come before the Hello is read (another uid): read the
  // answer even when the write failed.
  const Status sent = impl->channel.Send(hello, fds);
  Result<Received> answer = impl->channel.Receive(options.hello_bound);
  if (!answer.ok()) {
    return sent.ok() ? answer.status().WithContext("waiting for strata's answer")
                     : sent.WithContext("sending the Hello");
  }
  if (const auto* reject = std::get_if<HelloReject>(&answer->message)) {
    return Status::InvalidArgument("strata rank refused the attach: " + reject->reason);
  }
  const auto* accept = std::get_if<HelloAccept>(&answer->message);
  if (accept == nullptr) {
    return Status::Corruption("strata rank answered the Hello with another message");
  }
  STRATA_RETURN_IF_ERROR(sent);
  impl->rendezvous = accept->rendezvous;
  return std::unique_ptr<AttachClient>(new AttachClient(std::move(impl)));
}

const AttachRendezvous& AttachClient::rendezvous() const { return impl_->rendezvous; }

Result<uint64_t> AttachClient::Lookup(std::span<const Token> tokens, uint64_t resident_tokens,
                                      uint64_t before) {
  const uint64_t id = impl_->next_request_id++;
  STRATA_RETURN_IF_ERROR(impl_->Request(LookupRequest{.request_id = id,
                                                      .tokens = {tokens.begin(), tokens.end()},
                                                      .resident_tokens = resident_tokens,
                                                      .before = before}));
  return id;
}

Result<uint64_t> AttachClient::BeginLookup(std::span<const Token> tokens, uint64_t resident_tokens,
                                           uint64_t before) {
  const uint64_t id = impl_->next_request_id++;
  STRATA_RETURN_IF_ERROR(impl_->Request(LookupRequest{.request_id = id,
                                                      .tokens = {tokens.begin(), tokens.end()},
                                                      .resident_tokens = resident_tokens,
                                                      .before = before,
                                                      .step = LookupStep::kBegin}));
  return id;
}

Result<uint64_t> AttachClient::LookupFor(uint64_t ticket, std::span<const Token> tokens,
                                         uint64_t resident_tokens, uint64_t before) {
  if (ticket == 0) return Status::InvalidArgument("LookupFor of ticket 0");
  const uint64_t id = impl_->next_request_id++;
  STRATA_RETURN_IF_ERROR(impl_->Request(LookupRequest{.request_id = id,
                                                      .tokens = {tokens.begin(), tokens.end()},
                                                      .resident_tokens = resident_tokens,
                                                      .before = before,
                                                      .step = LookupStep::kAdmit,
                                                      .begun = ticket}));
  return id;
}

Result<uint64_t> AttachClient::TicketStatus(uint64_t ticket) {
  const uint64_t id = impl_->next_request_id++;
  STRATA_RETURN_IF_ERROR(impl_->Request(TicketStatusRequest{.request_id = id, .begun = ticket}));
  return id;
}

Status AttachClient::EndLookup(uint64_t ticket) {
  return impl_->Request(attach::EndLookup{ticket});
}

Status AttachClient::Store(const PublishedCheckpoint& checkpoint) {
  return impl_->Request(StoreRequest{checkpoint});
}

Status AttachClient::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  return impl_->Request(FetchRequest{hit, ticket});
}

Status AttachClient::Evicted(std::span<const EvictionNotice> notices) {
  for (size_t at = 0; at < notices.size(); at += kAttachNoticesMax) {
    const size_t n = std::min(kAttachNoticesMax, notices.size() - at);
    STRATA_RETURN_IF_ERROR(
        impl_->Request(EvictedNotices{{notices.begin() + at, notices.begin() + at + n}}));
  }
  return Status::Ok();
}

Status AttachClient::EvictionsLost() { return impl_->Request(attach::EvictionsLost{}); }

Status AttachClient::ExportPinned(ExportId export_id, const ExportDescription& description) {
  return impl_->Request(ExportPinnedReply{.export_id = export_id, .description = description});
}

Status AttachClient::ExportRefused(ExportId export_id, ExportRefusal reason) {
  return impl_->Request(ExportRefusedReply{.export_id = export_id, .reason = reason});
}

Status AttachClient::Poll(std::vector<AttachEvent>& events) {
  for (AttachEvent& e : impl_->pending) events.push_back(std::move(e));
  impl_->pending.clear();
  if (impl_->gone) return Status::Unavailable("strata rank is gone: offload stopped");
  while (true) {
    Result<std::optional<Received>> got = impl_->channel.TryReceive();
    if (got.ok() && !got->has_value()) return Status::Ok();
    if (got.ok() && Impl::Sort(std::move((*got)->message), events)) continue;
    impl_->gone = true;
    StoreEvent stopped;
    stopped.kind = StoreEvent::Kind::kStopped;
    stopped.status =
        got.ok() ? Status::Corruption("an unexpected message from strata rank") : got.status();
    events.emplace_back(std::move(stopped));
    return Status::Unavailable("strata rank is gone: offload stopped");
  }
}

int AttachClient::fd() const { return impl_->channel.fd(); }

Status AttachClient::Close(std::chrono::milliseconds bound) {
  STRATA_RETURN_IF_ERROR(impl_->Request(CloseRequest{}));
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    Result<Received> got = impl_->channel.Receive(std::max(left, std::chrono::milliseconds(0)));
    if (!got.ok()) {
      impl_->gone = true;
      return got.status().WithContext("waiting for strata to detach");
    }
    if (auto* done = std::get_if<CloseDone>(&got->message)) {
      impl_->gone = true;
      return done->status;
    }
    if (!Impl::Sort(std::move(got->message), impl_->pending)) {
      impl_->gone = true;
      return Status::Corruption("an unexpected message from strata rank while closing");
    }
  }
}

}  // namespace strata::attach
