// See worker_probe.h.
#include "worker_probe.h"

#include <dlfcn.h>

#include <cstdint>

#include <torch/cuda.h>
#include <torch/version.h>

#include "communicator.h"
#include "gemm_backend.h"
#include "nvml_gpu.h"

#ifdef DDPDESK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ddpdesk {
namespace {

// OpenBLAS's name for the kernel set it runs ("Haswell", "SkylakeX", ...), "" for another BLAS.
// LibTorch links the system's BLAS; when that is OpenBLAS the symbol is in the process.
std::string openblas_core() {
  using CoreName = char* (*)();
  auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = fn != nullptr ? fn() : nullptr;
  return name != nullptr ? name : "";
}

// Whether this build's LibTorch has CUDA at all: a CUDA LibTorch's libtorch.so loads
// libtorch_cuda.so with it (PyTorch's wheels and archives); Debian's is CPU-only and has none.
bool libtorch_has_cuda() {
  void* lib = dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
  if (lib != nullptr) dlclose(lib);  // NOLOAD took a reference of its own
  return lib != nullptr;
}

}  // namespace

nlohmann::json probe() {
  nlohmann::json j;
  j["torch_version"] = TORCH_VERSION;
  j["gloo"] = gloo_available();
  j["nccl"] = nccl_available();
  const bool cuda = torch::cuda::is_available();
  j["cuda_available"] = cuda;
  j["cuda_built"] = libtorch_has_cuda();
  // Why there is no `cuda` device, for the Device list and a refused CUDA run.
  if (!cuda)
    j["cuda_missing"] =
        libtorch_has_cuda()
            ? "no CUDA device: LibTorch has CUDA but finds no GPU (the NVIDIA driver, or "
              "CUDA_VISIBLE_DEVICES)"
            : "this build's LibTorch " TORCH_VERSION
              " has no CUDA (Debian's is CPU-only): build against a CUDA PyTorch (docs/gpu.md)";
  const int n = cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  j["device_count"] = n;
  nlohmann::json names = nlohmann::json::array(), memory = nlohmann::json::array();
#ifdef DDPDESK_HAVE_CUDA
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    names.push_back(prop.name);
    memory.push_back(static_cast<std::uint64_t>(prop.totalGlobalMem));
  }
#endif
  j["devices"] = names;
  j["device_memory_bytes"] = memory;  // each device's total memory, as `devices`
  // The GPUs the driver sees, whatever this LibTorch has: a Python script's ranks use them
  // through their own PyTorch.
  const NvmlGpu::Devices driver = NvmlGpu::list();
  j["nvml_devices"] = driver.names;
  j["nvml_device_memory_bytes"] = driver.memory_bytes;
  if (!driver.why.empty()) j["nvml_missing"] = driver.why;
  // The BLAS kernel set matters for CPU speed (OPENBLAS_CORETYPE can pin a slower one), unless
  // the matrix products run on oneDNN (gemm).
  j["openblas_core"] = openblas_core();
  j["gemm"] = gemm_backend();
  return j;
}

std::string pci_bus_id(const torch::Device& d) {
#ifdef DDPDESK_HAVE_CUDA
  char id[64] = {0};
  if (d.is_cuda() && d.index() >= 0 &&
      cudaDeviceGetPCIBusId(id, sizeof id, d.index()) == cudaSuccess)
    return id;
#endif
  (void)d;
  return {};
}

}  // namespace ddpdesk
