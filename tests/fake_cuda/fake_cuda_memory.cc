// The fake CUDA driver's memory, copy and kernel entry points (see fake_cuda.cc).
#include <sys/mman.h>

#include <algorithm>
#include <vector>

#include "tests/fake_cuda/fake_cuda_state.h"

namespace fake_cuda {

CUresult CUDAAPI FakeMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CheckedCopy(reinterpret_cast<uint64_t>(dst), src, bytes) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI FakeMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                     CUstream stream) {
  FAKE_ENTER("cuMemcpyHtoDAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CheckedCopy(dst, reinterpret_cast<uint64_t>(src), bytes) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

// Synchronous copies take any host memory.
CUresult CUDAAPI FakeMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!IsDevice(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!IsDevice(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

// Device memory is shared anonymous host memory, so that an IPC open can
// alias it at another address (fake_cuda_ipc.cc), as the real driver does.
CUresult CUDAAPI FakeMemAlloc(CUdeviceptr* p, size_t bytes) {
  FAKE_ENTER("cuMemAlloc");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* m = ::mmap(nullptr, MappedBytes(bytes), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(S().mu);
  S().device[reinterpret_cast<uint64_t>(m)] = {bytes};
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemFree(CUdeviceptr p) {
  FAKE_ENTER("cuMemFree");
  std::lock_guard lock(S().mu);
  auto it = S().device.find(p);
  if (it == S().device.end()) return CUDA_ERROR_INVALID_VALUE;
  ::munmap(reinterpret_cast<void*>(p), MappedBytes(it->second.bytes));
  S().device.erase(it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemsetD8(CUdeviceptr p, unsigned char value, size_t bytes) {
  FAKE_ENTER("cuMemsetD8");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!IsDevice(p, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(p), value, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FAKE_ENTER("cuMemGetInfo");
  *free_bytes = size_t{64} << 30;
  *total_bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemAllocHost(void** p, size_t bytes) {
  FAKE_ENTER("cuMemAllocHost");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  void* m = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(S().mu);
  S().pinned[reinterpret_cast<uint64_t>(m)] = {bytes};
  *p = m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemFreeHost(void* p) {
  FAKE_ENTER("cuMemFreeHost");
  std::lock_guard lock(S().mu);
  if (S().pinned.erase(reinterpret_cast<uint64_t>(p)) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  FAKE_ENTER("cuMemHostRegister");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  if (Within(S().pinned, reinterpret_cast<uint64_t>(p), 1)) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  S().values["register_flags"] = flags;
  S().pinned[reinterpret_cast<uint64_t>(p)] = {bytes};
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemHostUnregister(void* p) {
  FAKE_ENTER("cuMemHostUnregister");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  if (S().pinned.erase(reinterpret_cast<uint64_t>(p)) == 0) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  return CUDA_SUCCESS;
}

// The device address of registered memory: its host address, plus the
// test's "device_pointer_offset" setting (strata_fake_cuda_set_value).
CUresult CUDAAPI FakeMemHostGetDevicePointer(CUdeviceptr* out, void* p, unsigned int flags) {
  FAKE_ENTER("cuMemHostGetDevicePointer");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(S().mu);
  if (!Within(S().pinned, reinterpret_cast<uint64_t>(p), 1)) return CUDA_ERROR_INVALID_VALUE;
  auto offset = S().values.find("device_pointer_offset");
  *out = reinterpret_cast<uint64_t>(p) +
         static_cast<uint64_t>(offset == S().values.end() ? 0 : offset->second);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeModuleLoadData(CUmodule* module, const void* image) {
  FAKE_ENTER("cuModuleLoadData");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  const char* text = static_cast<const char*>(image);
  if (text == nullptr || std::strstr(text, ".entry strata_copy_pieces") == nullptr ||
      std::strstr(text, ".entry strata_scatter_param_pieces") == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;  // not the PTX strata embeds
  }
  *module = reinterpret_cast<CUmodule>(module_token);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeModuleUnload(CUmodule) {
  FAKE_ENTER("cuModuleUnload");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeModuleGetFunction(CUfunction* fn, CUmodule, const char* name) {
  FAKE_ENTER("cuModuleGetFunction");
  if (std::strcmp(name, "strata_copy_pieces") == 0) {
    *fn = reinterpret_cast<CUfunction>(function_token);
  } else if (std::strcmp(name, "strata_scatter_param_pieces") == 0) {
    *fn = reinterpret_cast<CUfunction>(param_function_token);
  } else {
    return CUDA_ERROR_NOT_FOUND;
  }
  return CUDA_SUCCESS;
}

// Runs strata_copy_pieces(const PieceCopy* pieces, unsigned count) on the
// host; the piece list must be in device memory or pinned host memory (which
// a UVA device addresses by its host pointer).
CUresult CUDAAPI FakeLaunchKernel(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                  unsigned block_x, unsigned block_y, unsigned block_z, unsigned,
                                  CUstream stream, void** params, void** extra) {
  FAKE_ENTER("cuLaunchKernel");
  {
    std::lock_guard lock(S().mu);
    S().values["launch_grid_max"] = std::max<long long>(S().values["launch_grid_max"], grid_x);
    S().values["launch_block"] = block_x;
  }
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  const bool listed = fn == reinterpret_cast<CUfunction>(function_token);
  const bool in_params = fn == reinterpret_cast<CUfunction>(param_function_token);
  if ((!listed && !in_params) || stream == nullptr || params == nullptr || extra != nullptr ||
      grid_x == 0 || grid_y != 1 || grid_z != 1 || block_x == 0 || block_x > 1024 || block_y != 1 ||
      block_z != 1) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct PieceCopy {
    uint64_t src, dst, bytes;
  };
  std::vector<PieceCopy> list;
  if (in_params) {
    // strata_scatter_param_pieces(StrataParamPieces args), by value.
    struct ParamPiece {
      uint64_t device;
      uint32_t window_offset, bytes;
    };
    struct ParamPieces {
      uint64_t window;
      uint32_t count, unused;
      ParamPiece pieces[254];
    };
    const auto* args = static_cast<const ParamPieces*>(params[0]);
    if (args->count > 254) return CUDA_ERROR_INVALID_VALUE;
    for (uint32_t i = 0; i < args->count; ++i) {
      const ParamPiece& p = args->pieces[i];
      list.push_back({args->window + p.window_offset, p.device, p.bytes});
    }
  } else {
    const PieceCopy* pieces = *static_cast<const PieceCopy* const*>(params[0]);
    const unsigned count = *static_cast<const unsigned*>(params[1]);
    if (!IsDevice(reinterpret_cast<uint64_t>(pieces), sizeof(PieceCopy) * count) &&
        !IsPinned(reinterpret_cast<uint64_t>(pieces), sizeof(PieceCopy) * count)) {
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    list.assign(pieces, pieces + count);
  }
  long long bytes = 0;
  for (const PieceCopy& p : list) {
    if (!KernelCopy(p.dst, p.src, p.bytes)) return CUDA_ERROR_ILLEGAL_ADDRESS;
    bytes += static_cast<long long>(p.bytes);
  }
  std::lock_guard lock(S().mu);
  S().values["kernel_bytes"] += bytes;
  S().values["launch_bytes_max"] = std::max(S().values["launch_bytes_max"], bytes);
  if (in_params) S().values["param_launches"] += 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                      size_t count, CUmemcpyAttributes* attrs, size_t* attr_idxs,
                                      size_t num_attrs, CUstream stream) {
  FAKE_ENTER("cuMemcpyBatchAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (count == 0 || stream == nullptr || num_attrs == 0 || num_attrs > count || attr_idxs[0] != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t a = 0; a < num_attrs; ++a) {
    if (attrs[a].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID)
      return CUDA_ERROR_INVALID_VALUE;
  }
  {
    std::lock_guard lock(S().mu);
    S().values["batch_entries_max"] =
        std::max<long long>(S().values["batch_entries_max"], static_cast<long long>(count));
  }
  for (size_t i = 0; i < count; ++i) {
    if (!CheckedCopy(dsts[i], srcs[i], sizes[i])) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

namespace {

bool CopyOperand2D(const CUmemcpy3DOperand& o, const CUextent3D& e, uint64_t& base,
                   uint64_t& pitch) {
  if (o.type != CU_MEMCPY_OPERAND_TYPE_POINTER) return false;
  pitch = o.op.ptr.rowLength == 0 ? e.width : o.op.ptr.rowLength;
  if (pitch < e.width) return false;
  base = o.op.ptr.ptr;
  return true;
}

}  // namespace

CUresult CUDAAPI FakeMemcpy3DBatchAsync(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops,
                                        unsigned long long flags, CUstream stream) {
  FAKE_ENTER("cuMemcpy3DBatchAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (count == 0 || stream == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    const CUextent3D& e = op.extent;
    if (e.width == 0 || e.height == 0 || e.depth != 1 ||
        op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t src = 0, src_pitch = 0, dst = 0, dst_pitch = 0;
    if (!CopyOperand2D(op.src, e, src, src_pitch) || !CopyOperand2D(op.dst, e, dst, dst_pitch)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t row = 0; row < e.height; ++row) {
      if (!CheckedCopy(dst + row * dst_pitch, src + row * src_pitch, e.width)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace fake_cuda
