#include "cuda/cufile_api.h"

#include <dlfcn.h>

#include <cerrno>
#include <vector>

#include "cuda/cufile_table.h"

namespace strata {

struct CuFileLibrary::Api {
  void* handle = nullptr;
  StrataCuFileDriverOpenFn driver_open = nullptr;
  StrataCuFileDriverCloseFn driver_close = nullptr;
  StrataCuFileDriverGetPropertiesFn get_properties = nullptr;
  StrataCuFileBufRegisterFn buf_register = nullptr;
  StrataCuFileBufDeregisterFn buf_deregister = nullptr;
  StrataCuFileHandleRegisterFn handle_register = nullptr;
  StrataCuFileHandleDeregisterFn handle_deregister = nullptr;
  StrataCuFileBatchIoSetUpFn batch_setup = nullptr;
  StrataCuFileBatchIoSubmitFn batch_submit = nullptr;
  StrataCuFileBatchIoGetStatusFn batch_status = nullptr;
  StrataCuFileBatchIoDestroyFn batch_destroy = nullptr;
  StrataCuFileBatchIoCancelFn batch_cancel = nullptr;  // optional
  StrataCuFileReadFn read = nullptr;
  StrataCuFileWriteFn write = nullptr;
};

namespace {

bool Bit(uint32_t flags, unsigned bit) { return ((flags >> bit) & 1U) != 0; }

Status Check(StrataCuFileError e, const char* call) {
  if (e.err == kStrataCuFileSuccess) return Status::Ok();
  return Status::Unavailable(std::string(call) + ": cuFile error " + std::to_string(e.err) +
                             " (CUresult " + std::to_string(e.cu_err) + ")");
}

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  return *out != nullptr;
}

}  // namespace

Status CuFileSyncIoStatus(CuFileOp op, int64_t returned, int errno_value, uint64_t bytes) {
  const std::string call = op == CuFileOp::kRead ? "cuFileRead" : "cuFileWrite";
  if (returned >= 0) {
    if (static_cast<uint64_t>(returned) == bytes) return Status::Ok();
    return Status::IoError(call + " moved " + std::to_string(returned) + " of " +
                           std::to_string(bytes) + " bytes");
  }
  if (returned == -1) {
    if (errno_value == 0) return Status::IoError(call + " failed (-1) without an errno");
    return Status::FromErrno(errno_value, call);
  }
  const int64_t error = -returned;
  if (error > kStrataCuFileOpBaseError) {
    return Status::IoError(call + ": cuFile error " + std::to_string(error));
  }
  return Status::FromErrno(static_cast<int>(error), call);
}

bool CuFileProperties::compat_mode_allowed() const {
  return Bit(control_flags, kStrataCuFileAllowCompatMode);
}
bool CuFileProperties::batch_io_supported() const {
  return Bit(feature_flags, kStrataCuFileBatchIo);
}
bool CuFileProperties::nvme_supported() const {
  return Bit(status_flags, kStrataCuFileNvme) || Bit(status_flags, kStrataCuFileNvmeOf) ||
         Bit(status_flags, kStrataCuFileNvmeP2p);
}

CuFileLibrary::CuFileLibrary() : api_(std::make_unique<Api>()) {}

CuFileLibrary::~CuFileLibrary() {
  if (open_) (void)DriverClose();
}

Result<std::shared_ptr<CuFileLibrary>> CuFileLibrary::Load(const std::string& library) {
  // RTLD_NODELETE: cuFile's own threads must never outlive its code.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable(library + " not found (" + (why != nullptr ? why : "dlopen") + ")");
  }
  std::shared_ptr<CuFileLibrary> lib(new CuFileLibrary());
  lib->library_ = library;
  Api& a = *lib->api_;
  a.handle = handle;
  const bool close_ok = Resolve(handle, "cuFileDriverClose_v2", &a.driver_close) ||
                        Resolve(handle, "cuFileDriverClose", &a.driver_close);
  struct Need {
    const char* name;
    bool ok;
  };
  const Need needs[] = {
      {"cuFileDriverOpen", Resolve(handle, "cuFileDriverOpen", &a.driver_open)},
      {"cuFileDriverClose", close_ok},
      {"cuFileDriverGetProperties",
       Resolve(handle, "cuFileDriverGetProperties", &a.get_properties)},
      {"cuFileBufRegister", Resolve(handle, "cuFileBufRegister", &a.buf_register)},
      {"cuFileBufDeregister", Resolve(handle, "cuFileBufDeregister", &a.buf_deregister)},
      {"cuFileHandleRegister", Resolve(handle, "cuFileHandleRegister", &a.handle_register)},
      {"cuFileHandleDeregister", Resolve(handle, "cuFileHandleDeregister", &a.handle_deregister)},
      {"cuFileBatchIOSetUp", Resolve(handle, "cuFileBatchIOSetUp", &a.batch_setup)},
      {"cuFileBatchIOSubmit", Resolve(handle, "cuFileBatchIOSubmit", &a.batch_submit)},
      {"cuFileBatchIOGetStatus", Resolve(handle, "cuFileBatchIOGetStatus", &a.batch_status)},
      {"cuFileBatchIODestroy", Resolve(handle, "cuFileBatchIODestroy", &a.batch_destroy)},
      {"cuFileRead", Resolve(handle, "cuFileRead", &a.read)},
      {"cuFileWrite", Resolve(handle, "cuFileWrite", &a.write)},
  };
  for (const Need& n : needs) {
    if (!n.ok) return Status::Unavailable(library + " lacks " + n.name);
  }
  (void)Resolve(handle, "cuFileBatchIOCancel", &a.batch_cancel);  // BatchCancel says when absent
  return lib;
}

Status CuFileLibrary::DriverOpen() {
  if (open_) return Status::Ok();
  STRATA_RETURN_IF_ERROR(Check(api_->driver_open(), "cuFileDriverOpen"));
  open_ = true;
  return Status::Ok();
}

Status CuFileLibrary::DriverClose() {
  if (!open_) return Status::Ok();
  open_ = false;
  return Check(api_->driver_close(), "cuFileDriverClose");
}

Result<CuFileProperties> CuFileLibrary::Properties() const {
  StrataCuFileDrvProps raw{};
  STRATA_RETURN_IF_ERROR(Check(api_->get_properties(&raw), "cuFileDriverGetProperties"));
  CuFileProperties p;
  p.nvfs_major = raw.nvfs.major_version;
  p.nvfs_minor = raw.nvfs.minor_version;
  p.max_direct_io_kib = raw.nvfs.max_direct_io_size;
  p.status_flags = raw.nvfs.dstatusflags;
  p.control_flags = raw.nvfs.dcontrolflags;
  p.feature_flags = raw.fflags;
  p.max_batch_io_entries = raw.max_batch_io_size;
  return p;
}

Status CuFileLibrary::BufRegister(uint64_t device, uint64_t bytes) const {
  return Check(api_->buf_register(reinterpret_cast<const void*>(device), bytes, 0),
               "cuFileBufRegister");
}

Status CuFileLibrary::BufDeregister(uint64_t device) const {
  return Check(api_->buf_deregister(reinterpret_cast<const void*>(device)), "cuFileBufDeregister");
}

Result<CuFileHandle> CuFileLibrary::HandleRegister(int fd) const {
  StrataCuFileDescr descr{};
  descr.type = kStrataCuFileHandleTypeOpaqueFd;
  descr.handle.fd = fd;
  StrataCuFileHandle handle = nullptr;
  STRATA_RETURN_IF_ERROR(Check(api_->handle_register(&handle, &descr), "cuFileHandleRegister"));
  return handle;
}

void CuFileLibrary::HandleDeregister(CuFileHandle handle) const { api_->handle_deregister(handle); }

Result<CuFileBatch> CuFileLibrary::BatchSetUp(uint32_t max_entries) const {
  StrataCuFileBatchHandle batch = nullptr;
  STRATA_RETURN_IF_ERROR(Check(api_->batch_setup(&batch, max_entries), "cuFileBatchIOSetUp"));
  return batch;
}

Status CuFileLibrary::BatchSubmit(CuFileBatch batch, std::span<const CuFileIo> ios) const {
  std::vector<StrataCuFileIoParams> params(ios.size());
  for (size_t i = 0; i < ios.size(); ++i) {
    const CuFileIo& io = ios[i];
    StrataCuFileIoParams& p = params[i];
    p.mode = kStrataCuFileBatchMode;
    p.u.batch.devPtr_base = reinterpret_cast<void*>(io.device_base);
    p.u.batch.devPtr_offset = static_cast<off_t>(io.device_offset);
    p.u.batch.file_offset = static_cast<off_t>(io.file_offset);
    p.u.batch.size = io.bytes;
    p.fh = io.file;
    p.opcode = io.op == CuFileOp::kRead ? kStrataCuFileRead : kStrataCuFileWrite;
    p.cookie = reinterpret_cast<void*>(io.cookie);
  }
  return Check(api_->batch_submit(batch, static_cast<unsigned>(params.size()), params.data(), 0),
               "cuFileBatchIOSubmit");
}

Result<size_t> CuFileLibrary::BatchGetStatus(CuFileBatch batch, uint32_t min_events,
                                             std::span<CuFileIoEvent> out,
                                             uint32_t timeout_ms) const {
  std::vector<StrataCuFileIoEvents> raw(out.size());
  unsigned n = static_cast<unsigned>(out.size());
  timespec timeout{.tv_sec = static_cast<time_t>(timeout_ms / 1000),
                   .tv_nsec = static_cast<long>(timeout_ms % 1000) * 1000000L};
  STRATA_RETURN_IF_ERROR(Check(api_->batch_status(batch, min_events, &n, raw.data(), &timeout),
                               "cuFileBatchIOGetStatus"));
  for (unsigned i = 0; i < n && i < out.size(); ++i) {
    CuFileIoEvent& e = out[i];
    e.cookie = reinterpret_cast<uint64_t>(raw[i].cookie);
    e.result = static_cast<int64_t>(raw[i].ret);
    if (raw[i].status == kStrataCuFileComplete) {
      e.state = CuFileIoState::kComplete;
    } else if (raw[i].status == kStrataCuFileWaiting || raw[i].status == kStrataCuFilePending) {
      e.state = CuFileIoState::kPending;
    } else {
      e.state = CuFileIoState::kFailed;
    }
  }
  return static_cast<size_t>(n < out.size() ? n : out.size());
}

void CuFileLibrary::BatchDestroy(CuFileBatch batch) const { api_->batch_destroy(batch); }

Status CuFileLibrary::BatchCancel(CuFileBatch batch) const {
  if (api_->batch_cancel == nullptr) {
    return Status::Unavailable("this libcufile lacks cuFileBatchIOCancel");
  }
  return Check(api_->batch_cancel(batch), "cuFileBatchIOCancel");
}

Status CuFileLibrary::SyncIo(const CuFileIo& io) const {
  const auto file_offset = static_cast<off_t>(io.file_offset);
  const auto device_offset = static_cast<off_t>(io.device_offset);
  errno = 0;
  const ssize_t got = io.op == CuFileOp::kRead
                          ? api_->read(io.file, reinterpret_cast<void*>(io.device_base), io.bytes,
                                       file_offset, device_offset)
                          : api_->write(io.file, reinterpret_cast<const void*>(io.device_base),
                                        io.bytes, file_offset, device_offset);
  const int error = errno;
  return CuFileSyncIoStatus(io.op, static_cast<int64_t>(got), error, io.bytes);
}

}  // namespace strata
