// One rank's training run, in two phases with different failure rules:
//  - setting up (TrainingRun's constructor): the data plan, optimizer, resume, communicator and
//    rank 0's weights. Bad input found here throws BadInput (task.h), the worker's exit code 2;
//    any other exception is a failure of the run (exit 1).
//  - running (run()): the epochs, validation, checkpoints, the coordinated stop and the summary.
//    It never throws: whatever goes wrong is a Failed result, whatever the exception's type.
// The parts live in their own files: device_choice, communicator_choice, replica_sync, resume,
// evaluation, run_checkpoints, run_report, fault_injection, mixed_precision, batch_fit,
// oom_report, gpu_memory, step_diagnostics, graphed_step; the Trainer itself is trainer_impl.h
// (its state, and which of trainer.cpp, trainer_setup.cpp and trainer_reports.cpp holds what).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <torch/types.h>

#include "device_choice.h"
#include "rank_env.h"
#include "run_spec.h"
#include "worker_settings.h"

namespace ddpdesk {

class Task;
class Telemetry;
class Trainer;

struct TrainerOptions {
  RunSpec spec;
  RankEnv env;
  WorkerSettings settings;  // the DDPDESK_* switches, read once by the worker
  Task* task = nullptr;     // made by make_task on `device`; the trainer never asks which it is
  torch::Device device{torch::kCPU};
  Telemetry* telemetry = nullptr;
  const std::atomic<bool>* stop_requested = nullptr;  // set by SIGTERM/SIGINT
};

// Outcome of a run, mapped to the worker's exit code by the caller.
struct TrainResult {
  enum Kind { Finished, Stopped, Failed } kind = Finished;
  TrainResult() = default;
  TrainResult(Kind k, std::string why) : kind(k), message(std::move(why)) {}
  std::string message;         // for Failed: one line
  std::int64_t step = 0;       // optimizer steps done when the run ended
  int epoch = 0;               // 0-based
  std::string checkpoint;      // the last checkpoint this rank wrote in this process, if any
  bool out_of_memory = false;  // Failed because this rank ran out of memory (its own exit code)
  int peer_lost = -1;          // Failed because that peer rank is gone (communicator's PeerLost)
};

class TrainingRun {
 public:
  // Sets the run up (see above): throws BadInput for bad input, anything else for a failure.
  explicit TrainingRun(const TrainerOptions& options);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // Runs to completion, a coordinated stop, or a failure. Never throws.
  TrainResult run();

 private:
  std::unique_ptr<Trainer> trainer_;
};

}  // namespace ddpdesk
