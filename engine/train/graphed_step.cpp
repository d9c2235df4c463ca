#include "graphed_step.h"

#include <ATen/ATen.h>

#include "fused_adam.h"
#include "task.h"

namespace ddpdesk {
namespace {

constexpr std::size_t kWholeOnDevice = std::size_t{2} << 30;  // 2 GiB
// Optimizer steps run unrecorded before the recording: lazy initialisation (cuBLAS workspaces,
// cuDNN's choices, a TorchScript executor's first runs) happens there, not in the graph.
constexpr std::int64_t kUnrecordedSteps = 2;

}  // namespace

GraphedStep::GraphedStep(Task& task, const torch::Device& device, Precision precision,
                         FusedAdam& optimizer, std::int64_t micro, bool record)
    : task_(task),
      device_(device),
      precision_(precision),
      optimizer_(optimizer),
      micro_(micro),
      record_(record && CudaGraph::available()) {
  // Up to kWholeOnDevice bytes the training set lives on the device; a larger one is gathered on
  // the CPU and copied per micro-batch (a copy the recording does not hold).
  std::optional<Batch> all = task.train_data().whole();
  if (all && all->input.nbytes() + all->target.nbytes() <= kWholeOnDevice) {
    whole_ = *all;
    whole_.input = whole_.input.to(device);
    whole_.target = whole_.target.to(device);
  }
  const auto scalar = torch::TensorOptions().dtype(torch::kFloat).device(device);
  window_loss_ = torch::zeros({}, scalar);
  multiplier_ = torch::zeros({}, scalar);
}

GraphedStep::~GraphedStep() = default;

void GraphedStep::set_order(const std::vector<std::int64_t>& indices) {
  if (whole_.input.defined()) {
    order_ = torch::tensor(indices, torch::kLong).to(device_);
  } else {
    order_host_ = indices;
  }
}

void GraphedStep::begin_window(double loss_multiplier) {
  window_loss_.zero_();
  multiplier_.fill_(loss_multiplier);
}

Batch& GraphedStep::buffers(std::int64_t n) {
  auto it = buffers_.find(n);
  if (it != buffers_.end()) return it->second;
  Batch b;
  b.size = n;
  if (whole_.input.defined()) {
    auto shape = whole_.input.sizes().vec();
    shape[0] = n;
    b.input = torch::empty(shape, whole_.input.options());
    shape = whole_.target.sizes().vec();
    shape[0] = n;
    b.target = torch::empty(shape, whole_.target.options());
  }
  return buffers_.emplace(n, std::move(b)).first->second;
}

void GraphedStep::micro_step(std::int64_t begin, std::int64_t end) {
  const std::int64_t n = end - begin;
  Batch& b = buffers(n);
  if (whole_.input.defined()) {
    const torch::Tensor idx = order_.narrow(0, begin, n);
    at::index_select_out(b.input, whole_.input, 0, idx);
    at::index_select_out(b.target, whole_.target, 0, idx);
  } else {
    const Batch cpu = task_.train_data().batch(
        std::vector<std::int64_t>(order_host_.begin() + begin, order_host_.begin() + end));
    // Into the buffers of this size: the same shapes for a recordable task every time (a task of
    // varying shapes, run on this path only by the CPU test, gets new ones when they change).
    const auto into = [this](torch::Tensor& buffer, const torch::Tensor& from) {
      if (!from.defined()) return;
      if (!buffer.defined() || !buffer.sizes().equals(from.sizes()))
        buffer = torch::empty(from.sizes(), from.options().device(device_));
      buffer.copy_(from);
    };
    into(b.input, cpu.input);
    into(b.lengths, cpu.lengths);
    into(b.target, cpu.target);
  }
  // Recorded from the third window on (the first two initialise what first steps do).
  if (record_ && n == micro_ && steps_ >= kUnrecordedSteps) {
    if (micro_graph_.captured()) {
      micro_graph_.replay();
    } else {
      capture(micro_graph_, [this, &b] { run_micro(b); });
    }
    return;
  }
  run_micro(b);
}

void GraphedStep::run_micro(const Batch& b) {
  torch::Tensor loss = task_.loss_sum(precision_forward(task_, b, precision_, device_), b);
  window_loss_.add_(loss.detach());
  (loss * multiplier_).backward();
}

void GraphedStep::optimizer_step() {
  optimizer_.begin_step();
  if (record_ && steps_ >= kUnrecordedSteps) {
    if (optimizer_graph_.captured()) {
      optimizer_graph_.replay();
    } else {
      capture(optimizer_graph_, [this] { optimizer_.update(); });
    }
  } else {
    optimizer_.update();
  }
  ++steps_;
}

// A failed recording ends the run (cuda_graph.h says why), in one line that says what to do.
void GraphedStep::capture(CudaGraph& graph, const std::function<void()>& work) {
  try {
    graph.run_then_capture(device_.index(), work);
  } catch (const CaptureFailed& e) {
    const std::string what = e.what();
    throw CaptureFailed("--cuda-graph: the training step could not be recorded as a CUDA graph (" +
                        what.substr(0, what.find('\n')) + "); run without --cuda-graph");
  }
}

std::string GraphedStep::take_line() {
  if (!record_ || said_ || !micro_graph_.captured() || !optimizer_graph_.captured()) return {};
  said_ = true;
  return "CUDA graphs: the micro-step of " + std::to_string(micro_) +
         " samples and the optimizer update recorded; replayed from now on";
}

}  // namespace ddpdesk
