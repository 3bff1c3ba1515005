// What the GPU tests over cuFile share: whether the test-only compatibility
// switch is set, and whether this host's disk lets cuFile register a file at
// all. On the project's H200 container a virtio disk without udev properties
// makes cuFileHandleRegister fail with error 5027 unless
// /run/udev/data/b254:0 exists (docs/operations.md, "GPUDirect Storage");
// tests skip there naming the error rather than fail.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "cuda/cufile_api.h"
#include "cuda/cufile_policy.h"
#include "launch/rank/rank_transport.h"

namespace strata::testing {

// The reason to skip a test that needs the switch, or nullopt when it is set.
inline std::optional<std::string> CuFileCompatSwitchMissing() {
  if (TestCompatModeFromEnvironment() == CompatMode::kAllowedForTests) return std::nullopt;
  return std::string("set ") + kTestCompatSwitch +
         "=1 (test-only) to run the store tests over the direct transport in cuFile's "
         "compatibility mode";
}

// Opens cuFile (compatibility mode allowed) and registers a new O_DIRECT file
// in `dir`: the reason to skip (no libcufile, or error 5027 at
// registration), or nullopt when a file registers. Other failures are
// returned too, prefixed "cuFile failed:", for the caller to fail on.
inline std::optional<std::string> CuFileCannotRegisterFiles(const std::string& dir) {
  CuFilePolicy policy;
  policy.compat = CompatMode::kAllowedForTests;
  if (Result<std::string> installed = InstallCuFilePolicy(policy); !installed.ok()) {
    return "cuFile failed: " + installed.status().ToString();
  }
  Result<std::shared_ptr<CuFileLibrary>> library = CuFileLibrary::Load();
  if (!library.ok()) return library.status().ToString();
  if (Status s = (*library)->DriverOpen(); !s.ok()) return "cuFile failed: " + s.ToString();
  const std::string path = dir + "/strata-cufile-register-check";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
  if (fd < 0) return "cuFile failed: cannot open " + path + " with O_DIRECT";
  Result<CuFileHandle> handle = (*library)->HandleRegister(fd);
  std::optional<std::string> why;
  if (handle.ok()) {
    (*library)->HandleDeregister(*handle);
  } else if (handle.status().message().find("5027") != std::string::npos) {
    why =
        "this host's disk cannot be registered with cuFile (create /run/udev/data/b254:0, "
        "docs/operations.md): " +
        handle.status().ToString();
  } else {
    why = "cuFile failed: " + handle.status().ToString();
  }
  ::close(fd);
  ::unlink(path.c_str());
  return why;
}

}  // namespace strata::testing
