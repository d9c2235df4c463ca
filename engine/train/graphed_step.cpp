#include "graphed_step.h"

#include <ATen/ATen.h>

#include "fused_adam.h"
#include "task.h"

namespace ddpdesk {
namespace {

constexpr std::size_t kWholeOnDevice = std::size_t{2} << 30;  // 2 GiB

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
  // Recorded from the second window on (the first one initialised what a first step does).
  if (record_ && n == micro_ && steps_ >= 1) {
    if (micro_graph_.captured()) {
      micro_graph_.replay();
    } else {
      try {
        micro_graph_.run_then_capture(device_.index(), [this, &b] { run_micro(b); });
      } catch (const CaptureFailed& e) {
        stop_recording(e);
      }
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
  if (record_ && steps_ >= 1) {
    if (optimizer_graph_.captured()) {
      optimizer_graph_.replay();
    } else {
      try {
        optimizer_graph_.run_then_capture(device_.index(), [this] { optimizer_.update(); });
      } catch (const CaptureFailed& e) {
        stop_recording(e);
      }
    }
  } else {
    optimizer_.update();
  }
  ++steps_;
}

// The real run had finished when the recording failed: the step goes on, and every later one
// runs unrecorded (a recording that did succeed is dropped with the rest, for one rule).
void GraphedStep::stop_recording(const std::exception& e) {
  record_ = false;
  const std::string what = e.what();
  line_ = "CUDA graphs: the step could not be recorded (" + what.substr(0, what.find('\n')) +
          "); it runs unrecorded from now on";
}

std::string GraphedStep::take_line() {
  if (record_ && !said_ && micro_graph_.captured() && optimizer_graph_.captured()) {
    said_ = true;
    line_ = "CUDA graphs: the micro-step of " + std::to_string(micro_) +
            " samples and the optimizer update recorded; replayed from now on";
  }
  std::string out;
  out.swap(line_);
  return out;
}

}  // namespace ddpdesk
