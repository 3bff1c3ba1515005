#include "python/src/py_multi_process.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include "coordinator/coordinator.h"
#include "coordinator/rendezvous/kv_rendezvous.h"
#include "coordinator/rendezvous/rendezvous_join.h"
#include "python/src/py_kv_store.h"
#include "python/src/py_status.h"
#include "rank_agent/rank_agent.h"
#include "store/record/fingerprint.h"

namespace strata::python {

namespace py = pybind11;

namespace {

// Members are destroyed coordinator first, then the rendezvous and planes.
class CoordinatorOwner final : public StoreOwner {
 public:
  CoordinatorOwner(std::unique_ptr<RuntimePlanes> planes, std::unique_ptr<PyKeyValueStore> kv)
      : planes_(std::move(planes)), kv_(std::move(kv)) {}
  ~CoordinatorOwner() override { coordinator_.reset(); }

  Status Start(const MultiProcessOptions& o) {
    const CacheGeometry& g = planes_->geometry();
    CoordinatorOptions co;
    co.world_size = o.world_size;
    co.geometry = g;
    co.identity = ComputeNamespaceIdentity(o.model_identity, StateMode::kOrdinary);
    co.disk.base_dir = o.directory;
    co.disk.durability = o.durability;
    co.disk.registrar = planes_->registrar();
    co.disk_limit_bytes = o.disk_bytes;
    co.listen = wire::Endpoint{o.record_host, 0};
    co.join_timeout = o.join_timeout;
    KvRendezvousServer server(*kv_, o.prefix, o.record_host, OsNonceSource());
    planes_->set_transfer_threads(o.threads);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, planes_->MakeTransfers());
    STRATA_ASSIGN_OR_RETURN(coordinator_, Coordinator::Start(std::move(co), server, std::move(t)));
    return Status::Ok();
  }

  HostStore& store() override { return coordinator_->store(); }
  Status Close() override {
    Status s = coordinator_->Close();
    if (!s.ok()) {
      (void)coordinator_.release();
      (void)planes_.release();
    }
    return s;
  }
  std::string record_dir() const override { return coordinator_->record_dir(); }

 private:
  std::unique_ptr<RuntimePlanes> planes_;
  std::unique_ptr<PyKeyValueStore> kv_;
  std::unique_ptr<Coordinator> coordinator_;
};

// A ticket the caller already holds: the KV rendezvous runs on the thread
// that builds the agent (a Python store may hold the GIL while it waits, so
// it is never called from the agent's own thread).
class JoinedRendezvous final : public RendezvousClient {
 public:
  explicit JoinedRendezvous(JoinTicket ticket) : ticket_(std::move(ticket)) {}
  Result<JoinTicket> Join(RankId, uint32_t, RendezvousDeadline) override { return ticket_; }

 private:
  JoinTicket ticket_;
};

// A peer rank: its agent serves rank zero's jobs on this process's planes
// until rank zero closes the session or close() stops it.
class AgentHandle {
 public:
  AgentHandle(std::unique_ptr<RuntimePlanes> planes, std::unique_ptr<PyKeyValueStore> kv,
              std::string prefix, py::object keep_alive)
      : planes_(std::move(planes)),
        kv_(std::move(kv)),
        client_(
            std::make_unique<KvRendezvousClient>(*kv_, std::move(prefix), RoutedLocalAddress())),
        keep_alive_(std::move(keep_alive)) {}
  ~AgentHandle() {
    py::gil_scoped_release release;
    (void)Stop();  // a failure leaks what copies may touch; nothing to raise in a destructor
  }

  void Start(uint32_t rank, const MultiProcessOptions& o) {
    RankAgentOptions ao;
    ao.rank = RankId(rank);
    ao.world_size = o.world_size;
    ao.geometry = planes_->geometry();
    ao.identity = ComputeNamespaceIdentity(o.model_identity, StateMode::kOrdinary);
    ao.disk.base_dir = o.directory;
    ao.disk.durability = o.durability;
    ao.disk.registrar = planes_->registrar();
    ao.disk_limit_bytes = o.disk_bytes;
    ao.join_timeout = o.join_timeout;
    py::gil_scoped_release release;
    JoinTicket ticket = ValueOrThrow(
        client_->Join(RankId(rank), o.world_size, RendezvousClock::now() + o.join_timeout));
    joined_ = std::make_unique<JoinedRendezvous>(std::move(ticket));
    planes_->set_transfer_threads(o.threads);
    std::unique_ptr<Transfers> t = ValueOrThrow(planes_->MakeTransfers());
    agent_ = ValueOrThrow(RankAgent::Start(
        std::move(ao), JoinThroughRendezvous(*joined_, RankId(rank), o.world_size), std::move(t)));
  }

  std::string state() const { return std::string(AgentStateName(agent_->state())); }
  std::string record_dir() const { return agent_->record_dir(); }

  // Whether the agent ended within `timeout`; raises its error if it ended
  // with one (other than a stop asked here).
  bool Wait(std::chrono::milliseconds timeout) {
    std::optional<Status> outcome;
    {
      py::gil_scoped_release release;
      outcome = agent_->Wait(std::chrono::steady_clock::now() + timeout);
    }
    if (!outcome) return false;
    ThrowIfError(*outcome);
    return true;
  }

  void Close() {
    Status s;
    {
      py::gil_scoped_release release;
      s = Stop();
    }
    ThrowIfError(s);
  }

 private:
  // Without the GIL. OK when the agent ended cleanly or was stopped here.
  Status Stop() {
    if (!agent_) return Status::Ok();
    const bool serving =
        agent_->state() != AgentState::kClosed && agent_->state() != AgentState::kFailed;
    agent_->Stop();
    std::optional<Status> outcome =
        agent_->Wait(std::chrono::steady_clock::now() + std::chrono::minutes(2));
    if (!outcome || outcome->message().find("keep device memory") != std::string::npos) {
      // Copies may still run: keep the agent and the runtime's memory.
      (void)agent_.release();
      (void)planes_.release();
      py::gil_scoped_acquire gil;
      (void)keep_alive_.release();
      return outcome ? *outcome : Status::Unavailable("rank agent did not stop");
    }
    agent_.reset();
    if (serving && outcome->code() == StatusCode::kAborted) return Status::Ok();
    return *outcome;
  }

  std::unique_ptr<RuntimePlanes> planes_;
  std::unique_ptr<PyKeyValueStore> kv_;
  std::unique_ptr<KvRendezvousClient> client_;
  std::unique_ptr<JoinedRendezvous> joined_;
  std::unique_ptr<RankAgent> agent_;
  py::object keep_alive_;
};

}  // namespace

std::unique_ptr<StoreOwner> OpenCoordinator(std::unique_ptr<RuntimePlanes> planes, py::object kv,
                                            const MultiProcessOptions& o) {
  auto owner = std::make_unique<CoordinatorOwner>(
      std::move(planes), ValueOrThrow(PyKeyValueStore::Wrap(std::move(kv))));
  Status s;
  {
    py::gil_scoped_release release;
    s = owner->Start(o);
  }
  ThrowIfError(s);
  return owner;
}

std::unique_ptr<AgentHandle> StartAgent(const PlanesIn& planes, py::object kv, uint32_t rank,
                                        const MultiProcessOptions& o, py::object keep_alive) {
  auto agent = std::make_unique<AgentHandle>(ValueOrThrow(RuntimePlanes::Create(planes)),
                                             ValueOrThrow(PyKeyValueStore::Wrap(std::move(kv))),
                                             o.prefix, std::move(keep_alive));
  agent->Start(rank, o);
  return agent;
}

void RegisterMultiProcess(py::module_& m) {
  py::class_<MultiProcessOptions>(m, "_MultiProcessOptions")
      .def(py::init<>())
      .def_readwrite("world_size", &MultiProcessOptions::world_size)
      .def_readwrite("directory", &MultiProcessOptions::directory)
      .def_readwrite("disk_bytes", &MultiProcessOptions::disk_bytes)
      .def_readwrite("model_identity", &MultiProcessOptions::model_identity)
      .def_readwrite("prefix", &MultiProcessOptions::prefix)
      .def_readwrite("record_host", &MultiProcessOptions::record_host)
      .def_readwrite("join_timeout", &MultiProcessOptions::join_timeout)
      .def_property(
          "durable", [](const MultiProcessOptions& o) { return o.durability == Durability::kSync; },
          [](MultiProcessOptions& o, bool durable) {
            o.durability = durable ? Durability::kSync : Durability::kNone;
          })
      .def_property(
          "copy_out_rate",
          [](const MultiProcessOptions& o) { return o.threads.copy_out_bytes_per_s; },
          [](MultiProcessOptions& o, uint64_t rate) { o.threads.copy_out_bytes_per_s = rate; })
      .def_property(
          "restore_rate",
          [](const MultiProcessOptions& o) { return o.threads.restore_bytes_per_s; },
          [](MultiProcessOptions& o, uint64_t rate) { o.threads.restore_bytes_per_s = rate; });
  py::class_<AgentHandle>(m, "_RankAgent")
      .def_property_readonly("state", &AgentHandle::state)
      .def_property_readonly("record_dir", &AgentHandle::record_dir)
      .def("wait", &AgentHandle::Wait, py::arg("timeout"))
      .def("close", &AgentHandle::Close);
  m.def("_start_agent", &StartAgent, py::arg("planes"), py::arg("kv"), py::arg("rank"),
        py::arg("options"), py::arg("keep_alive"));
  m.def(
      "_open_coordinator",
      [](const PlanesIn& planes, py::object kv, const MultiProcessOptions& o,
         py::object keep_alive) {
        return std::make_unique<StoreHandle>(
            OpenCoordinator(ValueOrThrow(RuntimePlanes::Create(planes)), std::move(kv), o),
            "coordinator of " + std::to_string(o.world_size) + " ranks", std::move(keep_alive));
      },
      py::arg("planes"), py::arg("kv"), py::arg("options"), py::arg("keep_alive"));
}

}  // namespace strata::python
