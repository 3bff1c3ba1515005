#include "cuda/cublas_gemm.h"

#include <dlfcn.h>

namespace strata {

namespace {

// cuBLAS's C ABI, declared here so no cuBLAS header is needed: its enums are
// ints (values from cublas_api.h and library_types.h, stable since CUDA 11).
using CublasCreate = int (*)(void** handle);
using CublasDestroy = int (*)(void* handle);
using CublasSetStream = int (*)(void* handle, void* stream);
using CublasSetSmCountTarget = int (*)(void* handle, int sms);
using CublasGemmEx = int (*)(void* handle, int transa, int transb, int m, int n, int k,
                             const void* alpha, const void* a, int a_type, int lda, const void* b,
                             int b_type, int ldb, const void* beta, void* c, int c_type, int ldc,
                             int compute_type, int algo);
constexpr int kOpN = 0;           // CUBLAS_OP_N
constexpr int kBf16 = 14;         // CUDA_R_16BF
constexpr int kCompute32F = 68;   // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;  // CUBLAS_GEMM_DEFAULT

}  // namespace

struct CublasGemm::Api {
  void* library = nullptr;
  CublasCreate create = nullptr;
  CublasDestroy destroy = nullptr;
  CublasSetStream set_stream = nullptr;
  CublasGemmEx gemm = nullptr;
  CublasSetSmCountTarget set_sm_count_target = nullptr;  // optional
};

std::vector<std::string> CublasLibraryCandidates() {
  return {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
          "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so"};
}

CublasGemm::CublasGemm() : api_(std::make_unique<Api>()) {}

CublasGemm::~CublasGemm() {
  if (handle_ != nullptr) (void)api_->destroy(handle_);
  // The library stays loaded (RTLD_NODELETE), like the driver.
}

Result<std::unique_ptr<CublasGemm>> CublasGemm::Load(const std::string& library) {
  std::vector<std::string> candidates =
      library.empty() ? CublasLibraryCandidates() : std::vector<std::string>{library};
  std::string tried;
  std::unique_ptr<CublasGemm> g(new CublasGemm());
  for (const std::string& name : candidates) {
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h != nullptr) {
      g->library_ = name;
      g->api_->library = h;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + (why != nullptr ? std::string(why) : name);
  }
  if (g->api_->library == nullptr) return Status::Unavailable("no cuBLAS: " + tried);
  Api& a = *g->api_;
  a.create = reinterpret_cast<CublasCreate>(dlsym(a.library, "cublasCreate_v2"));
  a.destroy = reinterpret_cast<CublasDestroy>(dlsym(a.library, "cublasDestroy_v2"));
  a.set_stream = reinterpret_cast<CublasSetStream>(dlsym(a.library, "cublasSetStream_v2"));
  a.gemm = reinterpret_cast<CublasGemmEx>(dlsym(a.library, "cublasGemmEx"));
  a.set_sm_count_target =
      reinterpret_cast<CublasSetSmCountTarget>(dlsym(a.library, "cublasSetSmCountTarget"));
  if (a.create == nullptr || a.destroy == nullptr || a.set_stream == nullptr || a.gemm == nullptr) {
    return Status::Unavailable("no cuBLAS: " + g->library_ + " lacks cublasGemmEx or friends");
  }
  if (int r = a.create(&g->handle_); r != 0) {
    g->handle_ = nullptr;
    return Status::Unavailable("no cuBLAS: cublasCreate_v2 returned " + std::to_string(r));
  }
  return g;
}

Status CublasGemm::SetStream(CudaStream stream) {
  if (int r = api_->set_stream(handle_, stream); r != 0) {
    return Status::IoError("cublasSetStream_v2 returned " + std::to_string(r));
  }
  return Status::Ok();
}

Status CublasGemm::SetSmCountTarget(int sms) {
  if (api_->set_sm_count_target == nullptr) {
    return Status::Unavailable(library_ + " lacks cublasSetSmCountTarget");
  }
  if (int r = api_->set_sm_count_target(handle_, sms); r != 0) {
    return Status::IoError("cublasSetSmCountTarget returned " + std::to_string(r));
  }
  return Status::Ok();
}

Status CublasGemm::GemmBf16(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k) {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const int r = api_->gemm(handle_, kOpN, kOpN, m, n, k, &alpha, reinterpret_cast<void*>(a), kBf16,
                           m, reinterpret_cast<void*>(b), kBf16, k, &beta,
                           reinterpret_cast<void*>(c), kBf16, m, kCompute32F, kGemmDefault);
  if (r != 0) return Status::IoError("cublasGemmEx returned " + std::to_string(r));
  return Status::Ok();
}

}  // namespace strata
