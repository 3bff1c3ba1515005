#include "cuda/gds_host_facts.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "store/record/record_file.h"

namespace strata {

namespace {

bool HasEntries(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  return !ec && it != std::filesystem::directory_iterator();
}

}  // namespace

PeerDma ReadPeerDma(const std::string& sys_root, const std::string& proc_cmdline) {
  if (!HasEntries(sys_root + "/kernel/iommu_groups")) return PeerDma::kAcsUnverified;
  std::ifstream in(proc_cmdline);
  std::stringstream text;
  text << in.rdbuf();
  std::istringstream words(text.str());
  for (std::string w; words >> w;) {
    if (w == "iommu=pt" || w == "iommu.passthrough=1" || w == "iommu=off" ||
        w == "intel_iommu=off" || w == "amd_iommu=off") {
      return PeerDma::kAcsUnverified;
    }
  }
  return PeerDma::kIommuTranslating;
}

GdsProbeResult ProbeGdsHost(FileSystem& fs, const GdsProbeInputs& inputs) {
  GdsProbeResult out;
  GdsFacts& f = out.facts;
  std::error_code ec;
  f.nvidia_fs_loaded = std::filesystem::exists(inputs.sys_root + "/module/nvidia_fs", ec);
  f.peer_dma = ReadPeerDma(inputs.sys_root, inputs.proc_cmdline);

  Result<int> dir = fs.OpenDirectory(inputs.record_dir, DirectoryMissing::kCreate);
  if (!dir.ok()) {
    f.o_direct_error = dir.status().message();
  } else {
    f.filesystem = fs.FilesystemName(*dir);
    Status probe = ProbeDirectIo(fs, *dir, inputs.record_dir);
    if (!probe.ok()) f.o_direct_error = probe.message();
    fs.Close(*dir);
  }

  Result<std::shared_ptr<CuFileLibrary>> lib = CuFileLibrary::Load(inputs.library);
  if (!lib.ok()) {
    f.library_error = lib.status().message();
    return out;
  }
  Result<std::string> policy = InstallCuFilePolicy(inputs.policy);
  if (!policy.ok()) {
    f.driver_error = "installing cufile.json: " + policy.status().message();
    return out;
  }
  if (Status open = (*lib)->DriverOpen(); !open.ok()) {
    f.driver_error = open.message();
    return out;
  }
  Result<CuFileProperties> props = (*lib)->Properties();
  if (!props.ok()) {
    f.driver_error = props.status().message();
    return out;
  }
  f.properties = *props;
  out.library = *lib;
  return out;
}

}  // namespace strata
