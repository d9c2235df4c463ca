// One rank's training run: data, model, optimizer, exact gradient accumulation with bucketed
// overlapping sync, validation, checkpoints, telemetry and the coordinated stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <torch/types.h>

#include "rank_env.h"
#include "run_spec.h"

namespace ddpdesk {

class Task;
class Telemetry;

// The device this rank trains on: CPU, or the GPU its local rank names (one GPU per rank).
// Throws BadInput (task.h) when the spec asks for CUDA that this machine cannot give.
torch::Device choose_device(const RunSpec& spec, const RankEnv& env);

struct TrainerOptions {
  RunSpec spec;
  RankEnv env;
  Task* task = nullptr;  // made by make_task on `device`; the trainer never asks which it is
  torch::Device device{torch::kCPU};
  Telemetry* telemetry = nullptr;
  const std::atomic<bool>* stop_requested = nullptr;  // set by SIGTERM/SIGINT
  bool debug_steps = false;  // add collective counts and parameter hashes to step messages
};

// Outcome of a run, mapped to the worker's exit code by the caller.
struct TrainResult {
  enum Kind { Finished, Stopped, Failed } kind = Finished;
  TrainResult() = default;
  TrainResult(Kind k, std::string why) : kind(k), message(std::move(why)) {}
  std::string message;     // for Failed: one line
  std::int64_t step = 0;   // optimizer steps done when the run ended
  int epoch = 0;           // 0-based
  std::string checkpoint;  // the last checkpoint this rank wrote in this process, if any
};

// Runs to completion, a coordinated stop, or a failure. Throws only for setup problems that are
// bad input (std::invalid_argument); everything else becomes a Failed result.
TrainResult run_training(const TrainerOptions& options);

}  // namespace ddpdesk
