// Every DDPDESK_* environment switch a worker reads, in one struct, parsed once when the worker
// starts and passed down to the parts that need it (nothing below the worker calls getenv for
// them). Documented in docs/environment.md. Plain C++, testable without LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rank_env.h"

namespace ddpdesk {

// Test-only faults. Read only in builds configured with DDPDESK_FAULT_INJECTION=ON (the
// default when tests are built; an install/release build turns it off). A build without them
// refuses the variables instead of ignoring them, so a fault test never passes by accident.
struct FaultSettings {
  std::int64_t nan_at_step = -1;         // DDPDESK_FAULT_NAN_AT_STEP: rank 0's loss NaN there
  int slow_rank = -1;                    // DDPDESK_FAULT_SLOW_RANK=RANK:MS: that rank's data
  double slow_ms = 0;                    //   loading MS milliseconds slower per micro-step
  std::int64_t kill_in_checkpoint = -1;  // DDPDESK_FAULT_KILL_IN_CHECKPOINT: SIGKILL half-way
                                         //   through writing that step's checkpoint
  int hold_rank = -1;                    // DDPDESK_FAULT_HOLD_RANK=RANK:STEP: that rank never
  std::int64_t hold_step = -1;           //   leaves its data loading from optimizer step STEP
                                         //   (1-based) on: a hung input pipeline
  std::int64_t oom_above = -1;  // DDPDESK_FAULT_OOM_ABOVE=N[:RANK[:STEP]]: a forward on more than
  int oom_rank = -1;            //   N samples throws CUDA's out-of-memory error, on that rank
  std::int64_t oom_step = 1;    //   (* or unset: every rank, -1 here) from optimizer step STEP
                                //   (1-based) on; N 0: every forward
  bool graphed_cpu = false;     // DDPDESK_FAULT_GRAPHED_CPU=1: a CPU rank trains on --cuda-graph's
                                //   path, nothing recorded (graphed_step.h)
};

// Whether this build reads FaultSettings (CMake option DDPDESK_FAULT_INJECTION).
bool fault_injection_built();

struct WorkerSettings {
  // Set by the monitor for the ranks it starts.
  std::string monitor;  // DDPDESK_MONITOR: the monitor's socket; non-empty = stop if it dies
  std::string token;    // DDPDESK_TOKEN: the run's token, sent in the hello
  // Set by ddpdesk's Slurm batch script: a stop asked for before this rank started (the file
  // exists) stops it at its first step boundary, as a SIGTERM would.
  std::string stop_file;  // DDPDESK_STOP_FILE
  // Where things are.
  std::string fmnist_dir;          // DDPDESK_FMNIST_DIR; empty: the system's (kSystemFmnistDir)
  std::string gloo_socket_ifname;  // GLOO_SOCKET_IFNAME (PyTorch's name): Gloo's network card
  // Choices the engine makes itself, forced for tests and measurements.
  enum class CpuComm { Auto, Shm, Gloo };
  CpuComm cpu_comm = CpuComm::Auto;  // DDPDESK_COMM=auto|shm|gloo
  bool force_comm = false;           // DDPDESK_FORCE_COMM=1: a communicator even for one rank
  std::optional<bool> overlap;       // DDPDESK_OVERLAP=0|1: comm thread overlap (unset: auto)
  std::string gloo_mode = "auto";    // DDPDESK_GLOO_MODE=auto|async|sync|busy
  bool debug_steps = false;          // DDPDESK_DEBUG_STEPS=1: collective counts, parameter hashes
  FaultSettings faults;
};

struct WorkerSettingsResult {
  WorkerSettings settings;
  std::string error;  // one line naming the variable, its value and what is allowed
  bool ok() const { return error.empty(); }
};

WorkerSettingsResult read_worker_settings(const EnvLookup& getenv_fn);
WorkerSettingsResult read_worker_settings();  // from the process environment

}  // namespace ddpdesk
