// Internal to cuda/ (and the test double tests/fake_cufile): the cuFile ABI
// that CuFileLibrary binds, declared here rather than taken from cufile.h so
// that the build needs no CUDA toolkit. The layouts follow cufile.h of the
// GDS releases shipped with CUDA 12 and 13 (CUfileDrvProps_t, CUfileDescr_t,
// CUfileIOParams_t, CUfileIOEvents_t); a change there must change them here.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstddef>

extern "C" {

// CUfileOpError: 0 is success; errors are 5000 + n (CU_FILE_DRIVER_NOT_INITIALIZED
// is 5001); CU_FILE_CUDA_DRIVER_ERROR carries the CUresult in cu_err.
typedef int StrataCuFileOpError;
inline constexpr StrataCuFileOpError kStrataCuFileSuccess = 0;
// A cuFileRead / cuFileWrite that fails returns -1 with errno set, or the
// negative of a CUfileOpError (above this base); docs also allow -errno.
inline constexpr int kStrataCuFileOpBaseError = 5000;
typedef struct StrataCuFileError {
  StrataCuFileOpError err;
  int cu_err;  // CUresult
} StrataCuFileError;

// CUfileDrvProps_t.
typedef struct StrataCuFileDrvProps {
  struct {
    unsigned int major_version;  // nvidia-fs version; 0 without the module
    unsigned int minor_version;
    size_t poll_thresh_size;     // KiB
    size_t max_direct_io_size;   // KiB
    unsigned int dstatusflags;   // bit positions: StrataCuFileStatusBit
    unsigned int dcontrolflags;  // bit positions: StrataCuFileControlBit
  } nvfs;
  unsigned int fflags;                      // bit positions: StrataCuFileFeatureBit
  unsigned int max_device_cache_size;       // KiB
  unsigned int per_buffer_cache_size;       // KiB
  unsigned int max_device_pinned_mem_size;  // KiB
  unsigned int max_batch_io_size;
  unsigned int max_batch_io_timeout_msecs;
} StrataCuFileDrvProps;

// CUfileDriverStatusFlags_t (bit positions in dstatusflags).
enum StrataCuFileStatusBit : unsigned {
  kStrataCuFileLustre = 0,
  kStrataCuFileWekaFs = 1,
  kStrataCuFileNfs = 2,
  kStrataCuFileGpfs = 3,
  kStrataCuFileNvme = 4,
  kStrataCuFileNvmeOf = 5,
  kStrataCuFileScsi = 6,
  kStrataCuFileBeeGfs = 9,
  kStrataCuFileNvmeP2p = 11,
};
// CUfileDriverControlFlags_t (bit positions in dcontrolflags).
enum StrataCuFileControlBit : unsigned {
  kStrataCuFileUsePollMode = 0,
  kStrataCuFileAllowCompatMode = 1,
};
// CUfileFeatureFlags_t (bit positions in fflags).
enum StrataCuFileFeatureBit : unsigned {
  kStrataCuFileDynRouting = 0,
  kStrataCuFileBatchIo = 1,
  kStrataCuFileStreams = 2,
  kStrataCuFileParallelIo = 3,
};

// CUfileDescr_t with CU_FILE_HANDLE_TYPE_OPAQUE_FD (1).
inline constexpr int kStrataCuFileHandleTypeOpaqueFd = 1;
typedef struct StrataCuFileDescr {
  int type;
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;  // null: cuFile discovers the filesystem with fstat
} StrataCuFileDescr;
typedef void* StrataCuFileHandle;

// CUfileOpcode_t, CUfileStatus_t, CUfileBatchMode_t.
inline constexpr int kStrataCuFileRead = 0;
inline constexpr int kStrataCuFileWrite = 1;
inline constexpr int kStrataCuFileWaiting = 0x01;
inline constexpr int kStrataCuFilePending = 0x02;
inline constexpr int kStrataCuFileInvalid = 0x04;
inline constexpr int kStrataCuFileCanceled = 0x08;
inline constexpr int kStrataCuFileComplete = 0x10;
inline constexpr int kStrataCuFileTimeout = 0x20;
inline constexpr int kStrataCuFileFailed = 0x40;
inline constexpr int kStrataCuFileBatchMode = 1;

// CUfileIOParams_t.
typedef struct StrataCuFileIoParams {
  int mode;  // kStrataCuFileBatchMode
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  StrataCuFileHandle fh;
  int opcode;
  void* cookie;
} StrataCuFileIoParams;

// CUfileIOEvents_t: `ret` is the bytes moved, or a negative error.
typedef struct StrataCuFileIoEvents {
  void* cookie;
  int status;
  size_t ret;
} StrataCuFileIoEvents;
typedef void* StrataCuFileBatchHandle;

// The entry points, by symbol name (cuFileDriverClose is "_v2" in cufile.h
// since 1.8; the unversioned one is the fallback).
typedef StrataCuFileError (*StrataCuFileDriverOpenFn)();
typedef StrataCuFileError (*StrataCuFileDriverCloseFn)();
typedef StrataCuFileError (*StrataCuFileDriverGetPropertiesFn)(StrataCuFileDrvProps*);
typedef StrataCuFileError (*StrataCuFileBufRegisterFn)(const void*, size_t, int);
typedef StrataCuFileError (*StrataCuFileBufDeregisterFn)(const void*);
typedef StrataCuFileError (*StrataCuFileHandleRegisterFn)(StrataCuFileHandle*, StrataCuFileDescr*);
typedef void (*StrataCuFileHandleDeregisterFn)(StrataCuFileHandle);
typedef StrataCuFileError (*StrataCuFileBatchIoSetUpFn)(StrataCuFileBatchHandle*, unsigned);
typedef StrataCuFileError (*StrataCuFileBatchIoSubmitFn)(StrataCuFileBatchHandle, unsigned,
                                                         StrataCuFileIoParams*, unsigned);
typedef StrataCuFileError (*StrataCuFileBatchIoGetStatusFn)(StrataCuFileBatchHandle, unsigned,
                                                            unsigned*, StrataCuFileIoEvents*,
                                                            struct timespec*);
typedef void (*StrataCuFileBatchIoDestroyFn)(StrataCuFileBatchHandle);
typedef StrataCuFileError (*StrataCuFileBatchIoCancelFn)(StrataCuFileBatchHandle);
// cuFileRead / cuFileWrite: `size` bytes between bufPtr_base + bufPtr_offset
// and `file_offset`, synchronously; returns the bytes moved or a negative
// error. bufPtr_base is the registered base when the buffer is registered.
typedef ssize_t (*StrataCuFileReadFn)(StrataCuFileHandle fh, void* bufPtr_base, size_t size,
                                      off_t file_offset, off_t bufPtr_offset);
typedef ssize_t (*StrataCuFileWriteFn)(StrataCuFileHandle fh, const void* bufPtr_base, size_t size,
                                       off_t file_offset, off_t bufPtr_offset);

}  // extern "C"

static_assert(sizeof(StrataCuFileIoParams) == 64, "CUfileIOParams_t layout (LP64)");
static_assert(sizeof(StrataCuFileIoEvents) == 24, "CUfileIOEvents_t layout (LP64)");
static_assert(sizeof(StrataCuFileDrvProps) == 56, "CUfileDrvProps_t layout (LP64)");
