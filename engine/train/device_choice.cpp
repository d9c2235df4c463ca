#include "device_choice.h"

#include <torch/cuda.h>

#include "task.h"

namespace ddpdesk {

torch::Device choose_device(const RunSpec& spec, const RankEnv& env) {
  if (spec.device != "cuda") return torch::Device(torch::kCPU);
  const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  // Every local rank counts itself and its peers: all of them fail alike, not just the last.
  const auto errors = validate_gpus(spec, env.local_world, gpus);
  if (!errors.empty()) throw BadInput(errors.front());
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
}

}  // namespace ddpdesk
