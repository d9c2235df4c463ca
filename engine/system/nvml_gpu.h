// NvmlGpu: one GPU's utilisation, memory, temperature and power through NVML, the library the
// NVIDIA driver installs. Loaded at run time with dlopen, so ddpdesk-worker has no link-time
// dependency on it and runs the same on machines without a driver: there available() is false,
// whyNot() says why, and sample() gives nothing. Never throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpdesk {

class NvmlGpu {
 public:
  struct Options {
    std::string library = "libnvidia-ml.so.1";
    int index = 0;  // the CUDA device index, used when pci_bus_id is empty
    // The CUDA device's PCI bus id ("0000:3B:00.0"): the exact device even when
    // CUDA_VISIBLE_DEVICES or CUDA's device order number the devices differently from NVML.
    std::string pci_bus_id;
  };
  // NaN where a query failed (a device may not report power or temperature).
  struct Sample {
    double util_percent;
    double memory_used_bytes;
    double memory_total_bytes;
    double temperature_c;
    double power_w;
  };

  // The GPUs the driver sees, whatever LibTorch was built with: a Python script's ranks use
  // them through their own PyTorch. Empty with `why` set when there is none or no NVML.
  struct Devices {
    std::vector<std::string> names;
    std::vector<std::uint64_t> memory_bytes;  // total, as names
    std::string why;
  };
  static Devices list(const std::string& library = "libnvidia-ml.so.1");

  explicit NvmlGpu(const Options& o);
  ~NvmlGpu();
  NvmlGpu(const NvmlGpu&) = delete;
  NvmlGpu& operator=(const NvmlGpu&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& whyNot() const { return why_not_; }
  // One reading of every quantity; all NaN when !available().
  Sample sample() const;
  // The GPU memory process `pid` holds on this device as NVML accounts it (its CUDA context and
  // allocations); 0 when it holds none there, NaN when NVML cannot tell (no device, a driver
  // without the process list, or a container that hides other pids).
  double processMemoryBytes(unsigned int pid) const;

 private:
  struct Api;
  void* lib_ = nullptr;
  Api* api_ = nullptr;
  void* device_ = nullptr;  // nvmlDevice_t
  std::string why_not_;
};

}  // namespace ddpdesk
