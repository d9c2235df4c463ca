// One rank's training run: data, model, optimizer, exact gradient accumulation with bucketed
// overlapping sync, validation, checkpoints, telemetry and the coordinated stop.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "rank_env.h"
#include "run_spec.h"

namespace ddpdesk {

class Telemetry;

struct TrainerOptions {
  RunSpec spec;
  RankEnv env;
  Telemetry* telemetry = nullptr;
  const std::atomic<bool>* stop_requested = nullptr;  // set by SIGTERM/SIGINT
  bool debug_steps = false;  // add collective counts and parameter hashes to step messages
};

// Outcome of a run, mapped to the worker's exit code by the caller.
struct TrainResult {
  enum Kind { Finished, Stopped, Failed } kind = Finished;
  std::string message;  // for Failed: one line
};

// Runs to completion, a coordinated stop, or a failure. Throws only for setup problems that are
// bad input (std::invalid_argument); everything else becomes a Failed result.
TrainResult run_training(const TrainerOptions& options);

}  // namespace ddpdesk
