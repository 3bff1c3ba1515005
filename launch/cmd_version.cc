#include <CLI/CLI.hpp>
#include <cstdio>

#include "launch/build_info.h"
#include "launch/commands.h"

namespace strata {

void AddVersionCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "version",
      "Print the version, the git commit and whether CUDA headers were present at build");
  cmd->callback([] {
    const BuildInfo& info = GetBuildInfo();
    std::printf("strata %s\n", info.version);
    std::printf("commit: %s\n", info.commit);
    std::printf("cuda headers at build: %s\n", info.cuda_headers ? "yes" : "no");
    std::printf("sanitizers: %s\n", info.sanitizers ? "asan+ubsan" : "off");
  });
}

}  // namespace strata
