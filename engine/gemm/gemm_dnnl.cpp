// LibTorch computes every float matrix product through the Fortran BLAS symbol sgemm_, which
// Debian's build takes from the system BLAS (OpenBLAS). A ddpdesk step is mostly such products
// (fmnist-mlp: about 0.2 GFLOP per 64 samples), and oneDNN's sgemm, already loaded as a
// dependency of LibTorch, runs the layer shapes at about twice OpenBLAS's speed on a core with
// AVX-512 (kernels made for the CPU at run time). Every binary that links the engine defines
// sgemm_ itself and exports it (engine/CMakeLists.txt), so the dynamic linker binds LibTorch's
// calls here before the BLAS's. Without AVX-512 oneDNN is the slower one (64 x 512 x 784 on one
// core: 267 us with AVX-512, 799 us on its AVX2 kernels, 700 us on OpenBLAS's), so there, and
// for any call oneDNN refuses, the product goes on to the BLAS's own sgemm_.
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <oneapi/dnnl/dnnl.h>

#include "gemm_backend.h"

namespace {

std::atomic<std::uint64_t> g_calls{0};

using FortranSgemm = void (*)(const char*, const char*, const int*, const int*, const int*,
                              const float*, const float*, const int*, const float*, const int*,
                              const float*, float*, const int*);

// The next sgemm_ in the lookup order after this executable's: the system BLAS.
FortranSgemm blas_sgemm() {
  static const auto fn = reinterpret_cast<FortranSgemm>(dlsym(RTLD_NEXT, "sgemm_"));
  return fn;
}

// oneDNN when its kernels for this CPU have AVX-512 (DNNL_MAX_CPU_ISA can cap them), decided once.
bool onednn_chosen() {
  static const bool chosen = [] {
    const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const unsigned avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
    return (isa & avx512) == avx512;  // the ISA values are nested bit sets
  }();
  return chosen;
}

// BLAS transposition letters ('N', 'T', 'C', any case) as oneDNN's: a real matrix's conjugate
// transpose is its transpose.
char transposition(char t) {
  return t == 'N' || t == 'n' ? 'N' : 'T';
}

// C := beta C over the m x n column-major matrix, beta == 0 writing zeros whatever C held.
void scale_columns(int m, int n, float beta, float* c, int ldc) {
  if (beta == 1.f) return;
  for (int j = 0; j < n; ++j) {
    float* col = c + static_cast<std::ptrdiff_t>(j) * ldc;
    for (int i = 0; i < m; ++i) col[i] = beta == 0.f ? 0.f : beta * col[i];
  }
}

}  // namespace

namespace ddpdesk {

const char* gemm_backend() {
  return onednn_chosen() ? "oneDNN" : "BLAS";
}

std::uint64_t gemm_backend_calls() {
  return g_calls.load(std::memory_order_relaxed);
}

}  // namespace ddpdesk

// Column-major C (m x n) = alpha op(A) op(B) + beta C, as the reference BLAS defines it. The same
// memory read row-major is C^T (n x m) = op(B)^T op(A)^T, which is oneDNN's row-major sgemm with
// the operands swapped.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c,
                       const int* ldc) {
  if (!onednn_chosen()) {
    blas_sgemm()(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (*m <= 0 || *n <= 0) return;
  // Nothing to multiply: the reference BLAS then only scales C (0 * NaN stays out), and reads
  // neither A nor B; oneDNN would leave C as it was for k == 0.
  if (*k <= 0 || *alpha == 0.f) {
    scale_columns(*m, *n, *beta, c, *ldc);
    return;
  }
  const dnnl_status_t status = dnnl_sgemm(transposition(*transb), transposition(*transa), *n, *m,
                                          *k, *alpha, b, *ldb, a, *lda, *beta, c, *ldc);
  if (status == dnnl_success) {
    g_calls.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Arguments oneDNN rejects (a bad transposition letter or leading dimension, which the BLAS
  // reports through xerbla): the BLAS's answer, whatever it is.
  if (const FortranSgemm fn = blas_sgemm())
    fn(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
