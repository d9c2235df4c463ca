// `ddpdesk-worker --probe`: what this build can run on, as one JSON object (LibTorch's version
// and whether it has CUDA, the GPUs it sees with their memory, the GPUs the driver sees through
// NVML, Gloo and NCCL, the CPU matrix-product library); and the PCI bus id by which NVML knows a
// rank's GPU.
#pragma once

#include <string>

#include <torch/types.h>
#include <nlohmann/json.hpp>

namespace ddpdesk {

nlohmann::json probe();

// The rank's GPU as NVML names it, for the system sampler: CUDA's device numbers need not match
// NVML's (CUDA_VISIBLE_DEVICES, CUDA's own device order), its PCI bus id does. Empty on CPU.
std::string pci_bus_id(const torch::Device& d);

}  // namespace ddpdesk
