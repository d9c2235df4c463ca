#include "communicator_choice.h"

#include "run_spec.h"
#include "store.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

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

// CPU ranks: rank 0's choice holds for all, published through the store. Ranks that chose
// differently (an environment that tells them different things, like srun's before its tasks
// per node were read) would each wait in a rendezvous the other never joins, until a timeout
// that names neither.
static std::unique_ptr<Communicator> make_agreed_cpu_communicator(Transport t, CommOptions co) {
  std::string choice = t == Transport::SharedMemory ? "shm" : "gloo";
  co.store = connect_store(co.env, co.timeout_s, co.stop);
  const std::string key = "comm/cpu";
  if (co.env.rank == 0) {
    co.store->set(key, std::vector<uint8_t>(choice.begin(), choice.end()));
  } else {
    auto v = get_when_set(*co.store, key, co.timeout_s, co.stop);
    choice.assign(v.begin(), v.end());
  }
  return choice == "shm" ? make_shm_communicator(co) : make_gloo_communicator(co);
}

std::unique_ptr<Communicator> make_communicator(Transport t, const CommOptions& options) {
  if (t == Transport::SharedMemory || t == Transport::Gloo)
    return make_agreed_cpu_communicator(t, options);
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
