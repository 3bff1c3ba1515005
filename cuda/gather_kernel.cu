// The SM copy path (CopyMethod::kKernel): one launch copies a batch of pieces
// between device memory and registered, device-mapped host memory. Compiled
// to PTX by nvcc at build time (cuda/CMakeLists.txt) and loaded with
// cuModuleLoadData; the driver compiles the PTX for the device it runs on.
//
// Block b copies pieces b, b + gridDim.x, ... ; its threads stride over a
// piece in 16-byte words, four loads in flight per thread so reads over PCIe
// (restores read host memory) keep enough requests outstanding.

struct StrataPieceCopy {  // must match PieceCopy in gather_kernel.cc
  unsigned long long src;
  unsigned long long dst;
  unsigned long long bytes;
};

extern "C" __global__ void strata_copy_pieces(const StrataPieceCopy* pieces, unsigned int count) {
  for (unsigned int i = blockIdx.x; i < count; i += gridDim.x) {
    const StrataPieceCopy p = pieces[i];
    unsigned long long done = 0;
    if (((p.src | p.dst) & 15ull) == 0) {
      const uint4* s = reinterpret_cast<const uint4*>(p.src);
      uint4* d = reinterpret_cast<uint4*>(p.dst);
      const unsigned long long words = p.bytes >> 4;
      const unsigned long long step = blockDim.x;
      unsigned long long k = threadIdx.x;
      for (; k + 3 * step < words; k += 4 * step) {
        const uint4 a = s[k];
        const uint4 b = s[k + step];
        const uint4 c = s[k + 2 * step];
        const uint4 e = s[k + 3 * step];
        d[k] = a;
        d[k + step] = b;
        d[k + 2 * step] = c;
        d[k + 3 * step] = e;
      }
      for (; k < words; k += step) d[k] = s[k];
      done = words << 4;
    }
    const unsigned char* s = reinterpret_cast<const unsigned char*>(p.src);
    unsigned char* d = reinterpret_cast<unsigned char*>(p.dst);
    for (unsigned long long k = done + threadIdx.x; k < p.bytes; k += blockDim.x) d[k] = s[k];
  }
}
