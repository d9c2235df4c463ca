// Which collectives a rank uses, and whether gradient buckets overlap backward: decided from
// where the ranks sit, the device and the worker's settings, apart from building them, so the
// choice is testable without starting a communicator.
#pragma once

#include <memory>

#include "communicator.h"
#include "rank_env.h"
#include "worker_settings.h"

namespace ddpdesk {

enum class Transport { None, SharedMemory, Gloo, Nccl };

// None for a single rank (unless forced, so one GPU can still exercise NCCL); NCCL on CUDA; on
// CPU shared memory when every rank is on this machine and they fit its limit
// (kMaxLocalRanks), Gloo over TCP otherwise. DDPDESK_COMM forces the CPU transport.
Transport choose_transport(const RankEnv& env, bool cuda, const WorkerSettings& settings);

// Overlapping the allreduce with backward needs a core for the comm thread: CUDA always has one
// (the GPU), CPU ranks only when this machine has at least two cores per local rank (measured:
// on 2 cores with 2 ranks, inline reduction is ~1.5x faster). DDPDESK_OVERLAP overrides.
bool overlap_communication(const RankEnv& env, bool cuda, const WorkerSettings& settings,
                           unsigned cores);

// Builds `t` (null for None). Throws std::runtime_error when the peers cannot be reached.
std::unique_ptr<Communicator> make_communicator(Transport t, const CommOptions& options);

}  // namespace ddpdesk
