// The SM copy path (CopyMethod::kKernel): one launch copies a batch of pieces
// between device memory and registered, device-mapped host memory. Compiled
// to PTX by nvcc at build time (cuda/CMakeLists.txt) and loaded with
// cuModuleLoadData; the driver compiles the PTX for the device it runs on.
//
// One warp per piece (warp w copies pieces w, w + warps, ...): small pieces
// keep many independent streams of requests in flight, which is what hides
// the latency of reads over PCIe (restores read host memory). Lanes stride
// over a piece in 16-byte words, eight loads in flight per lane (a 4 KiB
// piece is one round trip per warp), and each warp loads its next piece's
// descriptor before copying the current one, so the descriptor's latency
// overlaps the copy instead of preceding it.

struct StrataPieceCopy {  // must match KernelPiece in gather_kernel.h
  unsigned long long src;
  unsigned long long dst;
  unsigned long long bytes;
};

// Copies one piece with the 32 lanes of a warp: 16-byte words, eight
// loads in flight per lane where the piece is 16-byte aligned, bytes after.
__device__ __forceinline__ void StrataCopyPiece(unsigned long long src, unsigned long long dst,
                                                unsigned long long bytes, unsigned int lane) {
  unsigned long long done = 0;
  if (((src | dst) & 15ull) == 0) {
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    const unsigned long long words = bytes >> 4;
    unsigned long long k = lane;
    for (; k + 224 < words; k += 256) {
      uint4 v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = s[k + 32 * u];
#pragma unroll
      for (int u = 0; u < 8; ++u) d[k + 32 * u] = v[u];
    }
    for (; k + 96 < words; k += 128) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = s[k + 32 * u];
#pragma unroll
      for (int u = 0; u < 4; ++u) d[k + 32 * u] = v[u];
    }
    for (; k < words; k += 32) d[k] = s[k];
    done = words << 4;
  }
  const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
  unsigned char* d = reinterpret_cast<unsigned char*>(dst);
  for (unsigned long long k = done + lane; k < bytes; k += 32) d[k] = s[k];
}

// Launched with up to 1024 threads per block (the staged path), so registers
// are bounded for that.
extern "C" __global__ void __launch_bounds__(1024)
    strata_copy_pieces(const StrataPieceCopy* pieces, unsigned int count) {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int warps = (gridDim.x * blockDim.x) >> 5;
  unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (i >= count) return;
  StrataPieceCopy next = pieces[i];
  for (; i < count; i += warps) {
    const StrataPieceCopy p = next;
    if (i + warps < count) next = pieces[i + warps];
    StrataCopyPiece(p.src, p.dst, p.bytes, lane);
  }
}

// The scatter with its pieces in the launch's parameters (a restore's list
// then needs no upload, so the DMA stream carries the extents alone): piece
// i copies `bytes` from window + window_offset to `device`. Must match
// KernelParamPieces in gather_kernel.h (at most 4 KiB, the classic
// parameter limit).
struct StrataParamPiece {
  unsigned long long device;
  unsigned int window_offset;
  unsigned int bytes;
};
struct StrataParamPieces {
  unsigned long long window;
  unsigned int count;
  unsigned int unused;
  StrataParamPiece pieces[254];
};

extern "C" __global__ void __launch_bounds__(1024)
    strata_scatter_param_pieces(const StrataParamPieces args) {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int warps = (gridDim.x * blockDim.x) >> 5;
  for (unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < args.count; i += warps) {
    const StrataParamPiece p = args.pieces[i];
    StrataCopyPiece(args.window + p.window_offset, p.device, p.bytes, lane);
  }
}
