// --cuda-graph: a CUDA rank's training step as two recorded graphs, replayed as one launch each.
// A small model's step is mostly kernel launches (forward, backward and Adam are a few hundred
// tiny kernels); recorded once, each replay costs about one. What makes a step recordable:
//   - the data: the whole training set is copied to the GPU once and each epoch's sample order
//     once; a micro-batch is then two index_select kernels into fixed buffers, one per size;
//   - the micro-step (forward under the precision's autocast, the loss sum added into a fixed
//     window-loss tensor, backward of the loss times a fixed multiplier tensor, the gradients
//     accumulating into GradSync's buckets) on the buffers of the run's micro-batch size;
//   - the optimizer update: FusedAdam's tensor ops, its bias corrections in tensors
//     (begin_step() sets them each step outside the graph).
// The first two windows run unrecorded (lazy initialisation, as first steps do); the next
// micro-step of the regular size and the next optimizer update are each run for real and
// recorded (CudaGraph), then replayed. A CUDA rank does all of it on a CaptureStream of its own,
// made by the trainer before the gradient buckets (cuda_graph.h says why). Anything of another size
// (an epoch's short last micro-batch) runs unrecorded. The trainer keeps everything else: the
// gradient allreduce after the window (the bucket hooks stay disarmed during backward), fp16's
// scale (the multiplier), the stop vote and the values read back.
// Without recording (a build without CUDA, or the test-only fault DDPDESK_FAULT_GRAPHED_CPU on a
// CPU rank) every part runs the same way unrecorded: the CPU tests compare that path with the
// ordinary one step by step.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "cuda_graph.h"
#include "dataset.h"
#include "mixed_precision.h"

namespace ddpdesk {

class FusedAdam;
class Task;

class GraphedStep {
 public:
  // `micro`: the run's micro-batch size (after --fit-batch), the one recorded. `record`: whether
  // to record (false: the same path, nothing recorded).
  GraphedStep(Task& task, const torch::Device& device, Precision precision, FusedAdam& optimizer,
              std::int64_t micro, bool record);
  ~GraphedStep();

  // The rank's sample order for an epoch, copied to the device once.
  void set_order(const std::vector<std::int64_t>& indices);
  // A window starts: its loss sum is zeroed and every micro-step's loss is multiplied by
  // `loss_multiplier` (1 / the window's global samples, times fp16's scale) before backward.
  void begin_window(double loss_multiplier);
  // The micro-batch order[begin, end): gathered, forward, its loss sum added to window_loss(),
  // backward (the gradients accumulate into the parameters' .grad).
  void micro_step(std::int64_t begin, std::int64_t end);
  // The window's loss sum so far (0-dim float32 on the device; the same tensor every window).
  const torch::Tensor& window_loss() const { return window_loss_; }
  // The optimizer's step: begin_step() here, the update replayed once recorded.
  void optimizer_step();
  // Whether this object records (a CUDA build asked to); false: the same path unrecorded.
  bool recording() const { return record_; }
  // Once both graphs are recorded, rank 0's line saying so (then empty again); empty otherwise.
  // A recording that fails throws CaptureFailed: the run ends with its line.
  std::string take_line();

 private:
  Batch& buffers(std::int64_t n);
  void capture(CudaGraph& graph, const std::function<void()>& work);
  void run_micro(const Batch& b);

  Task& task_;
  torch::Device device_;
  Precision precision_;
  FusedAdam& optimizer_;
  std::int64_t micro_;
  bool record_;
  Batch whole_;                             // the training set on the device, if it has one
  std::vector<std::int64_t> order_host_;    // where it has none: gathered on the CPU
  torch::Tensor order_;                     // this epoch's sample order on the device
  std::map<std::int64_t, Batch> buffers_;   // fixed micro-batch buffers, by size
  torch::Tensor window_loss_, multiplier_;  // 0-dim float32 on the device
  std::int64_t steps_ = 0;                  // optimizer steps taken through this object
  CudaGraph micro_graph_, optimizer_graph_;
  bool said_ = false;
};

}  // namespace ddpdesk
