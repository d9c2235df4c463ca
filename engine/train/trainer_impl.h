// The Trainer behind TrainingRun (trainer.h), private to the engine's training code: its state and
// where each part is defined.
//   trainer.cpp          run() (the never-throwing outcome), train() (epochs), train_window() (one
//                        optimizer step: the micro-batches, or --cuda-graph's, the gradient sync,
//                        fp16's scale, the stop vote) and the coordinated stop
//   trainer_setup.cpp    the constructor and set_up() (data plan, optimizer, resume, communicator,
//                        --fit-batch, --cuda-graph); an out-of-memory's ending
//   trainer_reports.cpp  the step message, validation, checkpoints, the progress and summary lines
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "checkpoint.h"
#include "communicator.h"
#include "cuda_graph.h"
#include "evaluation.h"
#include "fault_injection.h"
#include "fused_adam.h"
#include "grad_sync.h"
#include "graphed_step.h"
#include "mixed_precision.h"
#include "run_checkpoints.h"
#include "sampler.h"
#include "step_clock.h"
#include "task.h"
#include "trainer.h"
#include "window_plan.h"
#include "wire.h"

namespace ddpdesk {

class Trainer {
 public:
  // Sets the run up (trainer.h's first phase).
  explicit Trainer(const TrainerOptions& o);
  TrainResult run();

 private:
  enum class StepOutcome { Ok, Stop, NonFinite };

  static double now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  }
  double run_time() const { return pos_.train_seconds + (now_s() - t0_); }

  // trainer_setup.cpp
  // The data plan, the optimizer, a resume, the communicator and rank 0's weights, then
  // --fit-batch and --cuda-graph.
  void set_up();
  // --fit-batch (batch_fit.h): the micro-batch and accumulation every rank agreed on. A resumed
  // run fits again (it may run on other GPUs); the windows hold the same samples either way.
  void fit_micro_batch();
  void set_up_cuda_graphs();
  // An out-of-memory in a forward or backward leaves the parameters and optimizer state those of
  // the last optimizer step, equal on every rank: this rank writes that step's checkpoint itself
  // (its peers fail when it is gone). Anywhere else (the optimizer) nothing is claimed.
  TrainResult out_of_memory();

  // trainer.cpp
  // The epochs, from where a resume left off; validation after each; the final checkpoint.
  TrainResult train();
  // One optimizer step over the window at pos_.window of this epoch's `indices`.
  StepOutcome train_window(const std::vector<std::int64_t>& indices);
  // Contributions that ride along with the last gradient bucket's allreduce.
  void set_extras(const torch::Tensor& window_loss);
  // --cuda-graph's micro-steps (graphed_step.h): the window's micro-batches, forward and
  // backward together (a replay cannot be split, so the step clock counts both as backward).
  torch::Tensor graphed_window(std::int64_t m0, std::int64_t m1, double scale);
  TrainResult stop();

  // trainer_reports.cpp
  void send(const wire::Message& m);
  wire::Event event(const char* name);
  void send_step(const torch::Tensor& window_loss, std::int64_t local_n, double global_sum,
                 std::int64_t global_n);
  void validate();
  // What a checkpoint keeps of where training stands: the position, the clock, fp16's scale.
  TrainPosition checkpoint_position() const;
  void write_checkpoint();
  void progress(const wire::Step& s);
  // One machine-readable line on stdout for scripts and benchmarks.
  void summary();

  TrainerOptions o_;
  RunSpec spec_;
  RankEnv env_;
  Task& task_;
  torch::Device device_;
  FaultInjection faults_;
  Precision precision_;
  LossScaler scaler_;
  RunCheckpoints checkpoints_;
  SamplerOptions sampler_;
  WindowPlan plan_;
  std::vector<torch::Tensor> params_;
  std::vector<NamedTensor> buffers_;
  bool seed_rng_ = false;
  StepClock clock_;
  std::unique_ptr<FusedAdam> optimizer_;
  std::unique_ptr<CaptureStream> capture_stream_;  // --cuda-graph on CUDA; destroyed last of these
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<GradSync> sync_;        // declared after comm_: destroyed first
  std::unique_ptr<GraphedStep> graphed_;  // --cuda-graph's step; null: the ordinary one
  TrainPosition pos_;
  std::string resumed_from_;
  std::string fit_line_;      // --fit-batch's outcome, for the started event
  std::int64_t micro_n_ = 0;  // samples of the micro-batch in forward or backward; 0: none
  std::int64_t resumed_samples_ = 0;
  double t0_ = 0, train_time_ = 0, last_progress_ = 0, last_log_time_ = 0;
  std::int64_t last_log_samples_ = 0;
  double last_global_loss_ = 0;
  EvalFigures eval_;
};

}  // namespace ddpdesk
