// What `strata version` reports; generated at build time (cmake/build_info.cmake).
#pragma once

namespace strata {

struct BuildInfo {
  const char* version;
  const char* commit;  // short git commit, "-dirty" when built with local edits
  bool cuda_headers;   // cuda.h was present at build time
  bool sanitizers;     // built with ASan + UBSan
};

const BuildInfo& GetBuildInfo();

}  // namespace strata
