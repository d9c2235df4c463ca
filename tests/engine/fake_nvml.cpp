// A stand-in for the driver's libnvidia-ml.so.1, for the unit test of NvmlGpu's loading and
// reading (tests/engine/test_system_sampler.cpp) on machines without a GPU. It exports the NVML
// entry points ddpdesk binds, with the C ABI of nvml.h, and fixed readings the test checks:
//   device 0 (index 0, PCI bus id "00000000:3B:00.0"): 37 % busy, 3 GiB of 80 GiB used, 55 C,
//   123456 mW; device 1 (index 1): the same, but no temperature or power (NOT_SUPPORTED), as
//   some boards report; nvmlDeviceGetCount_v2 says 2, named "Fake GPU A" and "Fake GPU B". Any
//   other index or bus id: NOT_FOUND. Calls before nvmlInit_v2 fail
//   with UNINITIALIZED, so a reader that skipped init would see errors, not values.
// The real NVML is checked by the GPU machine's test (RealNvmlOnAGpuMachine).
#include <unistd.h>

#include <cstring>

namespace {
constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3,
              kNotFound = 6, kInsufficientSize = 7;
struct Device {
  int index;
};
Device g_devices[2] = {{0}, {1}};
int g_inits = 0;
}  // namespace

extern "C" {
struct FakeUtilization {
  unsigned int gpu, memory;
};
struct FakeMemory {
  unsigned long long total, free, used;
};

__attribute__((visibility("default"))) int nvmlInit_v2() {
  ++g_inits;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlShutdown() {
  if (g_inits == 0) return kUninitialized;
  --g_inits;
  return kSuccess;
}
__attribute__((visibility("default"))) const char* nvmlErrorString(int r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kNotSupported:
      return "Not Supported";
    case kNotFound:
      return "Not Found";
    default:
      return "Unknown Error";
  }
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int i,
                                                                         void** device) {
  if (g_inits == 0) return kUninitialized;
  if (!device) return kInvalidArgument;
  if (i > 1) return kNotFound;
  *device = &g_devices[i];
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByPciBusId_v2(const char* id,
                                                                            void** device) {
  if (g_inits == 0) return kUninitialized;
  if (!id || !device) return kInvalidArgument;
  if (std::strcmp(id, "00000000:3B:00.0") != 0) return kNotFound;
  *device = &g_devices[0];
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void* d,
                                                                         FakeUtilization* u) {
  if (g_inits == 0) return kUninitialized;
  if (!d || !u) return kInvalidArgument;
  *u = {37, 12};
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* d, FakeMemory* m) {
  if (g_inits == 0) return kUninitialized;
  if (!d || !m) return kInvalidArgument;
  constexpr unsigned long long GiB = 1ull << 30;
  *m = {80 * GiB, 77 * GiB, 3 * GiB};
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void* d, int sensor,
                                                                    unsigned int* t) {
  if (g_inits == 0) return kUninitialized;
  if (!d || !t || sensor != 0) return kInvalidArgument;
  if (static_cast<Device*>(d)->index == 1) return kNotSupported;
  *t = 55;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* d, unsigned int* mw) {
  if (g_inits == 0) return kUninitialized;
  if (!d || !mw) return kInvalidArgument;
  if (static_cast<Device*>(d)->index == 1) return kNotSupported;
  *mw = 123456;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int* n) {
  if (g_inits == 0) return kUninitialized;
  if (!n) return kInvalidArgument;
  *n = 2;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void* d, char* name,
                                                             unsigned int length) {
  if (g_inits == 0) return kUninitialized;
  if (!d || !name || length < 16) return kInvalidArgument;
  std::strcpy(name, static_cast<Device*>(d)->index == 0 ? "Fake GPU A" : "Fake GPU B");
  return kSuccess;
}
// Device 0 runs two processes: pid 4242 with 1 GiB and the calling process with 2 GiB; device 1
// none. (The layout of nvmlProcessInfo_t for _v3.)
struct FakeProcess {
  unsigned int pid;
  unsigned long long used;
  unsigned int gpuInstance, computeInstance;
};
__attribute__((visibility("default"))) int nvmlDeviceGetComputeRunningProcesses_v3(
    void* d, unsigned int* n, FakeProcess* out) {
  if (g_inits == 0) return kUninitialized;
  if (!d || !n) return kInvalidArgument;
  if (static_cast<Device*>(d)->index == 1) {
    *n = 0;
    return kSuccess;
  }
  if (*n < 2) {
    *n = 2;
    return kInsufficientSize;
  }
  constexpr unsigned long long GiB = 1ull << 30;
  out[0] = {4242, 1 * GiB, 0, 0};
  out[1] = {static_cast<unsigned int>(getpid()), 2 * GiB, 0, 0};
  *n = 2;
  return kSuccess;
}
// Not NVML: lets the test see that every init was matched by a shutdown.
__attribute__((visibility("default"))) int fakeNvmlOpenInits() {
  return g_inits;
}
}
