// CublasGemm: bf16 matrix products through cuBLAS, loaded at run time with
// dlopen (never linked), like the driver, so hosts without cuBLAS run
// everything else. Used by benchmarks only: the model stand-ins of `strata
// bench prefill` (the rank's share of a prefill's GEMMs).
//
// The handle works on the context current when Load runs (the device's
// primary context, which the CUDA runtime under cuBLAS shares).
//
// Thread: one thread at a time, with the same context current.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/driver_api.h"

namespace strata {

// Where Load looks, in order, when no library is named.
std::vector<std::string> CublasLibraryCandidates();

class CublasGemm {
 public:
  // kUnavailable, starting "no cuBLAS: ", when no candidate loads or lacks an
  // entry point; the handle is created in the current context.
  static Result<std::unique_ptr<CublasGemm>> Load(const std::string& library = "");
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  const std::string& library() const { return library_; }
  Status SetStream(CudaStream stream);
  // Sizes later GEMMs for `sms` SMs (0: every SM), as a runtime does to leave
  // SMs to another kernel (cublasSetSmCountTarget). kUnavailable when this
  // cuBLAS lacks it.
  Status SetSmCountTarget(int sms);
  // Column-major C (m x n) = A (m x k) * B (k x n): bf16 operands and
  // result, fp32 accumulation, queued on the stream set last.
  Status GemmBf16(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k);

 private:
  struct Api;
  CublasGemm();
  std::string library_;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
};

}  // namespace strata
