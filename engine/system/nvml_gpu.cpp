#include "nvml_gpu.h"

#include <dlfcn.h>

#include <limits>
#include <type_traits>
#include <vector>

namespace ddpdesk {
namespace {

// The few NVML declarations used, as in nvml.h (a stable C ABI; the header is not on every
// machine that builds ddpdesk).
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int NVML_TEMPERATURE_GPU = 0;
// nvmlProcessInfo_t of nvmlDeviceGetComputeRunningProcesses_v2/_v3 (the same layout).
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr unsigned int kMaxProcesses = 256;  // read at once; a device holds far fewer

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

struct NvmlGpu::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*by_pci_bus_id)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*);
  // Optional (older drivers lack _v3, very old ones _v2): without it, no process memory.
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
};

NvmlGpu::NvmlGpu(const Options& o) {
  lib_ = ::dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = ::dlerror();
    why_not_ = "cannot load " + o.library + (e ? std::string(": ") + e : std::string());
    return;
  }
  auto* api = new Api{};
  bool complete = true;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib_, name));
    if (!fn) {
      complete = false;
      if (why_not_.empty()) why_not_ = o.library + " lacks " + name;
    }
  };
  bind(api->init, "nvmlInit_v2");
  bind(api->shutdown, "nvmlShutdown");
  bind(api->error_string, "nvmlErrorString");
  bind(api->by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(api->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(api->utilization, "nvmlDeviceGetUtilizationRates");
  bind(api->memory, "nvmlDeviceGetMemoryInfo");
  bind(api->temperature, "nvmlDeviceGetTemperature");
  bind(api->power, "nvmlDeviceGetPowerUsage");
  if (!complete) {
    delete api;
    return;
  }
  for (const char* name :
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"})
    if (!api->processes)
      api->processes = reinterpret_cast<decltype(api->processes)>(::dlsym(lib_, name));
  if (nvmlReturn_t r = api->init(); r != NVML_SUCCESS) {
    why_not_ = std::string("nvmlInit failed: ") + api->error_string(r);  // no driver loaded
    delete api;
    return;
  }
  api_ = api;
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t r = o.pci_bus_id.empty()
                             ? api_->by_index(static_cast<unsigned>(o.index), &device)
                             : api_->by_pci_bus_id(o.pci_bus_id.c_str(), &device);
  if (r != NVML_SUCCESS) {
    why_not_ = "no NVML device for " +
               (o.pci_bus_id.empty() ? "index " + std::to_string(o.index) : o.pci_bus_id) + ": " +
               api_->error_string(r);
    return;
  }
  device_ = device;
}

NvmlGpu::Devices NvmlGpu::list(const std::string& library) {
  Devices out;
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    out.why = "no NVIDIA driver (cannot load " + library + ")";
    return out;
  }
  using Init = nvmlReturn_t (*)();
  using Count = nvmlReturn_t (*)(unsigned int*);
  using ByIndex = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
  using Name = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
  using Memory = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
  const auto init = reinterpret_cast<Init>(::dlsym(lib, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<Init>(::dlsym(lib, "nvmlShutdown"));
  const auto count = reinterpret_cast<Count>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
  const auto by_index = reinterpret_cast<ByIndex>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  const auto name = reinterpret_cast<Name>(::dlsym(lib, "nvmlDeviceGetName"));
  const auto memory = reinterpret_cast<Memory>(::dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  unsigned int n = 0;
  if (!init || !shutdown || !count || !by_index || !name || !memory) {
    out.why = library + " lacks the NVML entry points ddpdesk reads";
  } else if (init() != NVML_SUCCESS) {
    out.why = "no NVIDIA driver loaded (nvmlInit failed)";
  } else {
    if (count(&n) != NVML_SUCCESS) n = 0;
    for (unsigned int i = 0; i < n; ++i) {
      nvmlDevice_t d = nullptr;
      char text[96] = {};
      nvmlMemory_t m{};
      if (by_index(i, &d) != NVML_SUCCESS) continue;
      out.names.push_back(name(d, text, sizeof text) == NVML_SUCCESS ? text : "GPU");
      out.memory_bytes.push_back(memory(d, &m) == NVML_SUCCESS ? m.total : 0);
    }
    shutdown();
    if (out.names.empty()) out.why = "the NVIDIA driver sees no GPU";
  }
  ::dlclose(lib);
  return out;
}

NvmlGpu::~NvmlGpu() {
  if (api_) api_->shutdown();
  delete api_;
  if (lib_) ::dlclose(lib_);
}

NvmlGpu::Sample NvmlGpu::sample() const {
  Sample s{kNaN, kNaN, kNaN, kNaN, kNaN};
  if (!device_) return s;
  auto* d = static_cast<nvmlDevice_t>(device_);
  if (nvmlUtilization_t u{}; api_->utilization(d, &u) == NVML_SUCCESS) s.util_percent = u.gpu;
  if (nvmlMemory_t m{}; api_->memory(d, &m) == NVML_SUCCESS) {
    s.memory_used_bytes = double(m.used);
    s.memory_total_bytes = double(m.total);
  }
  if (unsigned t = 0; api_->temperature(d, NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS)
    s.temperature_c = t;
  if (unsigned mw = 0; api_->power(d, &mw) == NVML_SUCCESS) s.power_w = mw / 1000.0;
  return s;
}

double NvmlGpu::processMemoryBytes(unsigned int pid) const {
  if (!device_ || !api_->processes) return kNaN;
  std::vector<nvmlProcessInfo_t> infos(kMaxProcesses);
  unsigned int n = kMaxProcesses;
  if (api_->processes(static_cast<nvmlDevice_t>(device_), &n, infos.data()) != NVML_SUCCESS)
    return kNaN;
  for (unsigned int i = 0; i < n && i < kMaxProcesses; ++i)
    if (infos[i].pid == pid) return double(infos[i].usedGpuMemory);
  return 0;  // not on this device (yet): it holds nothing there
}

}  // namespace ddpdesk
