#include "communicator_choice.h"

#include "run_spec.h"

namespace ddpdesk {

Transport choose_transport(const RankEnv& env, bool cuda, const WorkerSettings& settings) {
  if (env.world == 1 && !settings.force_comm) return Transport::None;
  if (cuda) return Transport::Nccl;
  switch (settings.cpu_comm) {
    case WorkerSettings::CpuComm::Shm:
      return Transport::SharedMemory;
    case WorkerSettings::CpuComm::Gloo:
      return Transport::Gloo;
    case WorkerSettings::CpuComm::Auto:
      break;
  }
  const bool all_here = env.local_world == env.world;
  return all_here && env.world <= kMaxLocalRanks ? Transport::SharedMemory : Transport::Gloo;
}

bool overlap_communication(const RankEnv& env, bool cuda, const WorkerSettings& settings,
                           unsigned cores) {
  if (settings.overlap) return *settings.overlap;
  if (cuda) return true;
  return cores >= 2u * static_cast<unsigned>(env.local_world);
}

std::unique_ptr<Communicator> make_communicator(Transport t, const CommOptions& options) {
  switch (t) {
    case Transport::None:
      return nullptr;
    case Transport::SharedMemory:
      return make_shm_communicator(options);
    case Transport::Gloo:
      return make_gloo_communicator(options);
    case Transport::Nccl:
      return make_nccl_communicator(options);
  }
  return nullptr;
}

}  // namespace ddpdesk
