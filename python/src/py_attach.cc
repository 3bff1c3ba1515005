// The attach channel's client (attach/client/attach_client.h) for a Python
// runtime: memfd regions its tensors live in (torch.frombuffer over the
// region's buffer), or GPU planes shared by legacy IPC handle; attach /
// lookup / store / fetch / poll / close.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <cstring>
#include <mutex>

#include "attach/client/attach_client.h"
#include "attach/client/memfd_region.h"
#include "python/src/py_module.h"
#include "python/src/py_planes.h"
#include "python/src/py_status.h"
#include "python/src/py_store.h"

namespace strata::python {

namespace py = pybind11;
using attach::AttachClient;
using attach::AttachEvent;
using attach::MemfdRegion;

namespace {

// One attached runtime; every call takes the lock with the GIL released.
class AttachHandle {
  AttachClient& Open() {
    if (!client_) throw StatusError(Status::FailedPrecondition("the attach client is closed"));
    return *client_;
  }
  // f(client) with the GIL released and the lock held; its error raised.
  template <typename F>
  auto Call(F&& f) {
    decltype(f(*client_)) r = Status::Internal("unset");
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      r = f(Open());
    }
    return ValueOrThrow(std::move(r));
  }

 public:
  AttachHandle(std::unique_ptr<AttachClient> client, py::object keep_alive)
      : client_(std::move(client)), keep_alive_(std::move(keep_alive)) {}

  uint64_t Lookup(const std::vector<Token>& tokens, uint64_t resident_tokens,
                  std::optional<uint64_t> before) {
    return Call([&](AttachClient& c) {
      return c.Lookup(tokens, resident_tokens, before.value_or(tokens.size()));
    });
  }
  uint64_t BeginLookup(const std::vector<Token>& tokens, uint64_t resident_tokens,
                       std::optional<uint64_t> before) {
    return Call([&](AttachClient& c) {
      return c.BeginLookup(tokens, resident_tokens, before.value_or(tokens.size()));
    });
  }
  uint64_t LookupFor(uint64_t ticket, const std::vector<Token>& tokens, uint64_t resident_tokens,
                     std::optional<uint64_t> before) {
    return Call([&](AttachClient& c) {
      return c.LookupFor(ticket, tokens, resident_tokens, before.value_or(tokens.size()));
    });
  }
  uint64_t TicketStatus(uint64_t ticket) {
    return Call([&](AttachClient& c) { return c.TicketStatus(ticket); });
  }
  void EndLookup(uint64_t ticket) {
    Call([&](AttachClient& c) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(c.EndLookup(ticket));
      return true;
    });
  }
  void Store(const CheckpointIn& in) {
    PublishedCheckpoint c = ValueOrThrow(ToCheckpoint(in));
    Call([&](AttachClient& client) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(client.Store(c));
      return true;
    });
  }
  void Fetch(const HostHit& hit, uint64_t ticket, const std::vector<uint32_t>& page_ids,
             uint32_t row_slot) {
    const InboundTicket t = ToTicket(ticket, page_ids, row_slot);
    Call([&](AttachClient& client) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(client.Fetch(hit, t));
      return true;
    });
  }
  void Evicted(const std::vector<EvictionIn>& notices) {
    const std::vector<EvictionNotice> converted = ValueOrThrow(ToNotices(notices));
    Call([&](AttachClient& client) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(client.Evicted(converted));
      return true;
    });
  }
  void EvictionsLost() {
    Call([&](AttachClient& client) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(client.EvictionsLost());
      return true;
    });
  }
  void ExportPinned(uint64_t export_id, uint64_t start_page, const std::vector<uint32_t>& pages,
                    uint32_t row_slot) {
    const ExportDescription d = ToDescription(start_page, pages, row_slot);
    Call([&](AttachClient& client) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(client.ExportPinned(ExportId(export_id), d));
      return true;
    });
  }
  void ExportRefused(uint64_t export_id, const std::string& reason) {
    const ExportRefusal r = ValueOrThrow(ToRefusal(reason));
    Call([&](AttachClient& client) -> Result<bool> {
      STRATA_RETURN_IF_ERROR(client.ExportRefused(ExportId(export_id), r));
      return true;
    });
  }
  std::vector<PyEvent> Poll() {
    std::vector<AttachEvent> events;
    Status s;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      s = Open().Poll(events);
    }
    if (!s.ok() && events.empty()) ThrowIfError(s);
    std::vector<PyEvent> out;
    out.reserve(events.size());
    for (const AttachEvent& e : events) out.push_back(std::visit(Convert{}, e));
    return out;
  }
  void Close(std::chrono::milliseconds bound) {
    Status s;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      if (!client_) return;
      s = client_->Close(bound);
      if (s.ok()) client_.reset();
    }
    if (!s.ok()) {
      // strata may still copy into the regions: keep them mapped.
      (void)client_.release();
      (void)keep_alive_.release();
    }
    ThrowIfError(s);
  }
  int fd() {
    std::lock_guard lock(mu_);
    return Open().fd();
  }
  // Rank zero's rendezvous (address, secret bytes) from its HelloAccept, or
  // None when the rank gave none (cluster.rendezvous is not "attach").
  std::optional<std::pair<std::string, py::bytes>> Rendezvous() {
    std::lock_guard lock(mu_);
    const attach::AttachRendezvous& r = Open().rendezvous();
    if (r.empty()) return std::nullopt;
    return std::make_pair(r.address, py::bytes(r.secret));
  }

 private:
  struct Convert {
    PyEvent operator()(const attach::LookupResult& r) const {
      PyEvent e;
      e.kind = "lookup";
      e.request_id = r.request_id;
      e.hit = r.hit;
      return e;
    }
    PyEvent operator()(const attach::StoreAnswer& a) const {
      PyEvent e;
      e.kind = "store_answer";
      e.checkpoint_id = a.checkpoint_id;
      e.outcome = std::string(StoreOutcomeName(a.outcome));
      return e;
    }
    PyEvent operator()(const attach::TicketStatusResult& r) const {
      PyEvent e;
      e.kind = "ticket_status";
      e.request_id = r.request_id;
      e.ticket_status = r.status;
      return e;
    }
    PyEvent operator()(const StoreEvent& s) const { return ToPyEvent(s); }
  };

  std::mutex mu_;
  std::unique_ptr<AttachClient> client_;
  py::object keep_alive_;
};

// One allocation's legacy IPC share, as strata._cuda_ipc_plane gives it.
using IpcIn = std::pair<py::bytes, uint64_t>;

// Either every allocation's memfd region, or (GPU planes) every
// allocation's IPC handle and offset.
std::unique_ptr<AttachHandle> Attach(const std::string& socket_path, const std::string& runtime_id,
                                     const std::string& model_identity, uint32_t page_tokens,
                                     const std::vector<AllocationIn>& allocations,
                                     const std::vector<MemfdRegion*>& regions,
                                     std::chrono::milliseconds hello_bound, py::object keep_alive,
                                     const std::string& rendezvous_address,
                                     const std::string& job_secret, const std::vector<IpcIn>& ipc) {
  const bool by_ipc = !ipc.empty();
  if (allocations.size() != (by_ipc ? ipc.size() : regions.size()) ||
      (by_ipc && !regions.empty())) {
    throw StatusError(Status::InvalidArgument(
        "one memfd region, or one IPC handle, per allocation (never both)"));
  }
  std::vector<attach::SharedAllocation> shared;
  for (size_t i = 0; i < allocations.size(); ++i) {
    const AllocationIn& a = allocations[i];
    if (a.owner == MemoryOwner::kPeer) {
      throw StatusError(Status::InvalidArgument("allocation '" + a.name +
                                                "': a peer's memory is not shared at attach"));
    }
    const SizedAllocation sized{a.name, a.group, a.unit_bytes, a.count, a.owner};
    if (by_ipc) {
      const std::string handle = ipc[i].first;
      if (handle.size() != kIpcMemHandleBytes) {
        throw StatusError(Status::InvalidArgument("allocation '" + a.name + "': an IPC handle is " +
                                                  std::to_string(kIpcMemHandleBytes) +
                                                  " bytes, not " + std::to_string(handle.size())));
      }
      attach::SharedAllocation s{.allocation = sized, .fd = -1};
      std::memcpy(s.ipc.handle.data(), handle.data(), handle.size());
      s.ipc.offset = ipc[i].second;
      shared.push_back(s);
      continue;
    }
    if (a.count == 0 || a.unit_bytes > regions[i]->bytes() / a.count) {
      throw StatusError(Status::InvalidArgument(
          "allocation '" + a.name + "' declares " + std::to_string(a.count) + " x " +
          std::to_string(a.unit_bytes) + " bytes but its memfd region holds " +
          std::to_string(regions[i]->bytes())));
    }
    shared.push_back({sized, regions[i]->fd()});
  }
  attach::AttachOptions options{
      .socket_path = socket_path,
      .hello_bound = hello_bound,
      .rendezvous = {.address = rendezvous_address, .secret = job_secret}};
  attach::AttachIdentity identity{
      .runtime_id = runtime_id,
      .model_identity = model_identity,
      .state_mode = StateMode::kOrdinary,
      .page_tokens = page_tokens,
      .plane_handle = by_ipc ? PlaneHandleKind::kCudaIpc : PlaneHandleKind::kMemfd};
  Result<std::unique_ptr<AttachClient>> client = Status::Internal("unset");
  {
    py::gil_scoped_release release;
    client = AttachClient::Attach(options, identity, {shared});
  }
  return std::make_unique<AttachHandle>(ValueOrThrow(std::move(client)), std::move(keep_alive));
}

}  // namespace

void RegisterAttach(py::module_& m) {
  py::class_<MemfdRegion>(m, "MemfdRegion", py::buffer_protocol(),
                          "Host memory shared with `strata rank`: wrap it with torch.frombuffer.")
      .def(py::init([](const std::string& name, uint64_t bytes) {
             return ValueOrThrow(MemfdRegion::Create(name, bytes));
           }),
           py::arg("name"), py::arg("bytes"))
      .def_property_readonly("fd", &MemfdRegion::fd)
      .def_property_readonly("bytes", &MemfdRegion::bytes)
      .def_property_readonly(
          "address", [](const MemfdRegion& r) { return reinterpret_cast<uint64_t>(r.data()); })
      .def_buffer([](MemfdRegion& r) {
        return py::buffer_info(r.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(r.bytes())}, {1});
      });
  py::class_<AttachHandle>(m, "_AttachClient")
      .def("lookup", &AttachHandle::Lookup, py::arg("tokens"), py::arg("resident_tokens") = 0,
           py::arg("before") = py::none())
      .def("begin_lookup", &AttachHandle::BeginLookup, py::arg("tokens"),
           py::arg("resident_tokens") = 0, py::arg("before") = py::none())
      .def("lookup_for", &AttachHandle::LookupFor, py::arg("ticket"), py::arg("tokens"),
           py::arg("resident_tokens") = 0, py::arg("before") = py::none())
      .def("ticket_status", &AttachHandle::TicketStatus, py::arg("ticket"))
      .def("end_lookup", &AttachHandle::EndLookup, py::arg("ticket"))
      .def("evicted", &AttachHandle::Evicted, py::arg("notices"))
      .def("evictions_lost", &AttachHandle::EvictionsLost)
      .def("export_pinned", &AttachHandle::ExportPinned, py::arg("export_id"),
           py::arg("start_page"), py::arg("pages"), py::arg("row_slot"))
      .def("export_refused", &AttachHandle::ExportRefused, py::arg("export_id"), py::arg("reason"))
      .def(
          "store",
          [](AttachHandle& h, uint64_t checkpoint_id, std::vector<Token> tokens, uint64_t consumed,
             std::vector<uint32_t> chain, uint32_t row_slot,
             std::optional<uint64_t> parent_consumed, std::optional<uint32_t> tail_pages,
             uint64_t generation) {
            h.Store({checkpoint_id, std::move(tokens), consumed, parent_consumed, std::move(chain),
                     tail_pages, row_slot, generation});
          },
          py::arg("checkpoint_id"), py::arg("tokens"), py::arg("consumed"), py::arg("chain"),
          py::arg("row_slot"), py::arg("parent_consumed") = py::none(),
          py::arg("tail_pages") = py::none(), py::arg("generation") = 0)
      .def("fetch", &AttachHandle::Fetch, py::arg("hit"), py::arg("ticket"), py::arg("page_ids"),
           py::arg("row_slot"))
      .def("poll", &AttachHandle::Poll)
      .def("close", &AttachHandle::Close, py::arg("timeout"))
      .def("fileno", &AttachHandle::fd)
      .def_property_readonly("rendezvous", &AttachHandle::Rendezvous);
  m.def("_attach", &Attach, py::arg("socket_path"), py::arg("runtime_id"),
        py::arg("model_identity"), py::arg("page_tokens"), py::arg("allocations"),
        py::arg("regions"), py::arg("hello_bound"), py::arg("keep_alive"),
        py::arg("rendezvous_address") = "", py::arg("job_secret") = py::bytes(),
        py::arg("ipc") = std::vector<IpcIn>{});
}

}  // namespace strata::python
