#pragma once
// Which library computes LibTorch's float matrix products (Linear layers, matrix products in
// TorchScript models, convolutions lowered to them) in this process.
#include <cstdint>

namespace ddpdesk {

// "oneDNN" when this process routes LibTorch's sgemm_ calls to oneDNN (a build with oneDNN, on a
// CPU with AVX-512: gemm_dnnl.cpp), "BLAS" when they go to the system's BLAS.
const char* gemm_backend();

// Matrix products oneDNN has computed in this process (0 with the BLAS): a test can see that
// LibTorch's calls really arrive here.
std::uint64_t gemm_backend_calls();

}  // namespace ddpdesk
