// A build without oneDNN: LibTorch calls the system's BLAS as it was linked.
#include "gemm_backend.h"

namespace ddpdesk {

const char* gemm_backend() {
  return "BLAS";
}

std::uint64_t gemm_backend_calls() {
  return 0;
}

}  // namespace ddpdesk
