#include "launch/runtime/runtime_service.h"

#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "launch/runtime/service_guard.h"

namespace strata {

namespace {
constexpr time_t kIoTimeoutS = 10;
}

Result<std::vector<std::string>> ListRecordFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".ckpt") continue;
    out.push_back(e.path().filename().string() + " " + std::to_string(e.file_size(ec)));
  }
  if (ec) return Status::IoError("listing " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

struct RuntimeService::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

namespace {

// Refuses, before the body is read, a request without the job's token or
// with a body above `body_max` (runtime_service.h).
httplib::Server::HandlerResponse Guard(const std::string& token, uint64_t body_max,
                                       const httplib::Request& req, httplib::Response& res) {
  auto refuse = [&res](int status, const std::string& why) {
    res.status = status;
    res.set_header("Connection", "close");  // the unread body must not be taken as a request
    res.set_content(why, "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  };
  switch (AdmitRequest(req.get_header_value(std::string(kRuntimeServiceAuthHeader)), token)) {
    case ServiceAdmission::kNoToken:
      res.set_header("WWW-Authenticate", "Bearer");
      return refuse(401, "the job's runtime service token is required");
    case ServiceAdmission::kWrongToken: return refuse(403, "not this job's token");
    case ServiceAdmission::kAdmit: break;
  }
  if (req.has_header("Content-Length")) {
    const std::string length = req.get_header_value("Content-Length");
    const bool numeric = !length.empty() && length.size() <= 19 &&
                         length.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric || std::stoull(length) > body_max) {
      return refuse(413, "body above " + std::to_string(body_max) + " bytes");
    }
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

}  // namespace

Result<std::unique_ptr<RuntimeService>> RuntimeService::Start(
    DevicePlanes& planes, const std::string& record_dir, const RuntimeServiceOptions& options) {
  STRATA_ASSERT(!options.token.empty(), "the runtime service needs the job's token");
  auto impl = std::make_unique<Impl>();
  httplib::Server& s = impl->server;
  s.set_tcp_nodelay(true);  // one small request at a time: no Nagle/delayed-ACK stalls
  const RankGeometry& g = planes.geometry().ranks.at(0);
  const uint64_t body_max = RuntimeServiceBodyMax(g);
  s.set_pre_routing_handler(
      [token = options.token, body_max](const httplib::Request& req, httplib::Response& res) {
        return Guard(token, body_max, req, res);
      });
  s.set_payload_max_length(body_max);  // bounds a chunked body too
  auto fail = [](httplib::Response& res, const Status& st) {
    res.status = st.code() == StatusCode::kInvalidArgument ? 400 : 500;
    res.set_content(st.ToString(), "text/plain");
  };
  s.Put(R"(/page/(\d+)/(\d+))",
        [&planes, g, fail](const httplib::Request& req, httplib::Response& res) {
          const uint32_t plane = static_cast<uint32_t>(std::stoul(req.matches[1]));
          if (plane >= g.page_planes.size())
            return fail(res, Status::InvalidArgument("no such plane"));
          Status st = planes.WritePage(
              0, plane, PageId(static_cast<uint32_t>(std::stoul(req.matches[2]))),
              {reinterpret_cast<const uint8_t*>(req.body.data()), req.body.size()});
          if (!st.ok()) fail(res, st);
        });
  s.Get(R"(/page/(\d+)/(\d+))", [&planes, g, fail](const httplib::Request& req,
                                                   httplib::Response& res) {
    const uint32_t plane = static_cast<uint32_t>(std::stoul(req.matches[1]));
    if (plane >= g.page_planes.size()) return fail(res, Status::InvalidArgument("no such plane"));
    std::string body(g.page_planes[plane].unit_bytes, '\0');
    Status st = planes.ReadPage(0, plane, PageId(static_cast<uint32_t>(std::stoul(req.matches[2]))),
                                {reinterpret_cast<uint8_t*>(body.data()), body.size()});
    if (!st.ok()) return fail(res, st);
    res.set_content(body, "application/octet-stream");
  });
  s.Put(R"(/row/(\d+))", [&planes, fail](const httplib::Request& req, httplib::Response& res) {
    Status st =
        planes.WriteRow(0, StateSlot(static_cast<uint32_t>(std::stoul(req.matches[1]))),
                        {reinterpret_cast<const uint8_t*>(req.body.data()), req.body.size()});
    if (!st.ok()) fail(res, st);
  });
  s.Get(R"(/row/(\d+))", [&planes, g, fail](const httplib::Request& req, httplib::Response& res) {
    std::string body(g.row.unit_bytes, '\0');
    Status st = planes.ReadRow(0, StateSlot(static_cast<uint32_t>(std::stoul(req.matches[1]))),
                               {reinterpret_cast<uint8_t*>(body.data()), body.size()});
    if (!st.ok()) return fail(res, st);
    res.set_content(body, "application/octet-stream");
  });
  s.Get("/records", [record_dir, fail](const httplib::Request&, httplib::Response& res) {
    Result<std::vector<std::string>> files = ListRecordFiles(record_dir);
    if (!files.ok()) return fail(res, files.status());
    std::string body;
    for (const std::string& f : *files) body += f + "\n";
    res.set_content(body, "text/plain");
  });
  const time_t io_timeout_s = static_cast<time_t>(options.io_timeout.count());
  s.set_read_timeout(io_timeout_s, 0);
  s.set_write_timeout(io_timeout_s, 0);
  const std::string& bind = options.bind;
  const uint16_t port = options.port;
  impl->port = port == 0 ? s.bind_to_any_port(bind) : (s.bind_to_port(bind, port) ? port : -1);
  if (impl->port <= 0) {
    return Status::Unavailable("runtime service cannot listen on " + bind + ":" +
                               std::to_string(port));
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  return std::unique_ptr<RuntimeService>(new RuntimeService(std::move(impl)));
}

RuntimeService::RuntimeService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RuntimeService::~RuntimeService() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t RuntimeService::port() const { return static_cast<uint16_t>(impl_->port); }

struct RemotePlanes::Peer {
  Peer(const std::string& endpoint, const std::string& token) : client("http://" + endpoint) {
    client.set_bearer_token_auth(token);
    client.set_connection_timeout(kIoTimeoutS, 0);
    client.set_read_timeout(kIoTimeoutS, 0);
    client.set_write_timeout(kIoTimeoutS, 0);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
  }
  httplib::Client client;
};

RemotePlanes::RemotePlanes(const CacheGeometry& geometry, DevicePlanes& local,
                           const std::vector<std::string>& endpoints, const std::string& token)
    : geometry_(geometry), local_(local) {
  STRATA_ASSERT(endpoints.size() + 1 == geometry.rank_count(), "one endpoint per peer rank");
  for (const std::string& e : endpoints) peers_.push_back(std::make_unique<Peer>(e, token));
}

RemotePlanes::~RemotePlanes() = default;

RankPlanes RemotePlanes::planes(uint32_t rank) const {
  STRATA_ASSERT(rank == 0, "only rank zero's planes are addressable in this process");
  return local_.planes(0);
}

namespace {
Status Unreachable(uint32_t rank, httplib::Error error) {
  return Status::Unavailable("rank " + std::to_string(rank) +
                             " runtime service: " + httplib::to_string(error) +
                             " (does that rank's runtime.service_bind listen on an address this "
                             "host reaches?)");
}
}  // namespace

Status RemotePlanes::Put(uint32_t rank, const std::string& path, std::span<const uint8_t> bytes) {
  auto res = peers_.at(rank - 1)->client.Put(
      path, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
      "application/octet-stream");
  if (!res) return Unreachable(rank, res.error());
  if (res->status != 200) return Status::IoError("rank " + std::to_string(rank) + ": " + res->body);
  return Status::Ok();
}

Status RemotePlanes::Get(uint32_t rank, const std::string& path, std::span<uint8_t> bytes) {
  auto res = peers_.at(rank - 1)->client.Get(path);
  if (!res) return Unreachable(rank, res.error());
  if (res->status != 200) return Status::IoError("rank " + std::to_string(rank) + ": " + res->body);
  if (res->body.size() != bytes.size()) {
    return Status::Corruption("rank " + std::to_string(rank) + " returned " +
                              std::to_string(res->body.size()) + " bytes for " + path);
  }
  std::copy(res->body.begin(), res->body.end(), reinterpret_cast<char*>(bytes.data()));
  return Status::Ok();
}

Status RemotePlanes::WritePage(uint32_t rank, uint32_t plane, PageId page,
                               std::span<const uint8_t> bytes) {
  if (rank == 0) return local_.WritePage(0, plane, page, bytes);
  return Put(rank, "/page/" + std::to_string(plane) + "/" + std::to_string(page.value), bytes);
}

Status RemotePlanes::ReadPage(uint32_t rank, uint32_t plane, PageId page,
                              std::span<uint8_t> bytes) {
  if (rank == 0) return local_.ReadPage(0, plane, page, bytes);
  return Get(rank, "/page/" + std::to_string(plane) + "/" + std::to_string(page.value), bytes);
}

Status RemotePlanes::WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) {
  if (rank == 0) return local_.WriteRow(0, slot, bytes);
  return Put(rank, "/row/" + std::to_string(slot.value), bytes);
}

Status RemotePlanes::ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) {
  if (rank == 0) return local_.ReadRow(0, slot, bytes);
  return Get(rank, "/row/" + std::to_string(slot.value), bytes);
}

Result<std::vector<std::string>> RemotePlanes::Records(uint32_t rank) {
  auto res = peers_.at(rank - 1)->client.Get("/records");
  if (!res || res->status != 200) {
    return Status::Unavailable("rank " + std::to_string(rank) + " record listing failed");
  }
  std::vector<std::string> out;
  size_t at = 0;
  while (at < res->body.size()) {
    size_t nl = res->body.find('\n', at);
    if (nl == std::string::npos) nl = res->body.size();
    if (nl > at) out.push_back(res->body.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

}  // namespace strata
