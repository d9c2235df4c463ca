// The three built-in tasks. Submodules are registered in forward order: DDP-style gradient
// bucketing walks parameters in reverse registration order, expecting that to be roughly the
// order in which backward produces their gradients.
#include "models.h"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

namespace ddpdesk {

namespace {

// Sum, max and min of the lengths, read on the host: straight from memory when they are on the
// CPU (the collated batch's lengths are), else with one device sync for all three.
std::array<std::int64_t, 3> length_stats(const torch::Tensor& lengths) {
  if (lengths.device().is_cpu()) {
    const torch::Tensor l = lengths.to(torch::kLong).contiguous();
    const std::int64_t* p = l.data_ptr<std::int64_t>();
    std::array<std::int64_t, 3> s{0, 0, p[0]};
    for (std::int64_t i = 0; i < l.numel(); ++i) {
      s[0] += p[i];
      s[1] = std::max(s[1], p[i]);
      s[2] = std::min(s[2], p[i]);
    }
    return s;
  }
  const torch::Tensor t = torch::stack({lengths.sum(), lengths.max(), lengths.min()}).cpu();
  const std::int64_t* p = t.data_ptr<std::int64_t>();
  return {p[0], p[1], p[2]};
}

// Each row's slot in the [b, width] buffer, in row order. On the CPU one pass over the lengths
// (a step of the seed task is a few dozen rows, where each tensor op costs more than the loop).
// Elsewhere with tensor ops: arange(rows) plus, repeated over each sample's rows,
// s * width - start_s; output_size spares repeat_interleave a device sync.
torch::Tensor segment_slots(const torch::Tensor& lengths_in, std::int64_t rows, std::int64_t width,
                            const torch::Device& device) {
  if (lengths_in.device().is_cpu()) {
    const torch::Tensor l = lengths_in.to(torch::kLong).contiguous();
    const std::int64_t* len = l.data_ptr<std::int64_t>();
    torch::Tensor slot = torch::empty({rows}, torch::kLong);
    std::int64_t* out = slot.data_ptr<std::int64_t>();
    for (std::int64_t s = 0; s < l.numel(); ++s)
      for (std::int64_t r = 0; r < len[s]; ++r) *out++ = s * width + r;
    return slot.to(device);
  }
  const torch::Tensor lengths = lengths_in.to(device, torch::kLong);
  const torch::Tensor starts = lengths.cumsum(0) - lengths;
  const std::int64_t b = lengths.size(0);
  const torch::Tensor shift = torch::arange(0, b * width, width, lengths.options()) - starts;
  return torch::arange(rows, lengths.options()) +
         shift.repeat_interleave(lengths, 0, c10::optional<std::int64_t>(rows));
}

}  // namespace

torch::Tensor segment_max(const torch::Tensor& values_in, const torch::Tensor& lengths_in) {
  TORCH_CHECK(lengths_in.dim() == 1, "segment_max: lengths must be 1-D, got ", lengths_in.sizes());
  const torch::Tensor values = values_in.reshape({-1});
  const std::int64_t b = lengths_in.size(0);
  const std::int64_t rows = values.size(0);
  if (b == 0) return values.new_zeros({0});

  const auto [sum, longest, shortest] = length_stats(lengths_in);
  TORCH_CHECK(shortest >= 0, "segment_max: negative length");
  TORCH_CHECK(sum == rows, "segment_max: lengths sum to ", sum, " but there are ", rows, " values");
  // At least one column, so a batch of only empty samples still goes through max() and keeps
  // its autograd graph (the loss must be differentiable even then; its gradient is zero).
  const std::int64_t width = std::max<std::int64_t>(longest, 1);

  // Row r of sample s goes to slot s * width + r of a [b, width] buffer. Padding is -inf, so it
  // never wins (the seed padded with zeros, which beat all-negative samples). The out-of-place
  // scatter keeps the autograd graph back to `values`; its targets are distinct, so it is
  // deterministic.
  const torch::Tensor slot = segment_slots(lengths_in, rows, width, values.device());
  const torch::Tensor padded =
      torch::full({b * width}, -std::numeric_limits<double>::infinity(), values.options())
          .scatter(0, slot, values)
          .view({b, width});
  const torch::Tensor out = std::get<0>(padded.max(1));
  // An empty sample's row is all -inf; it gives 0, and masked_fill passes it no gradient.
  if (shortest > 0) return out;
  return out.masked_fill(lengths_in.to(values.device()) == 0, 0);
}

namespace {

class SeedModel final : public TaskModel {
 public:
  SeedModel() : fc_(register_module("fc", torch::nn::Linear(10, 1))) {}

  torch::Tensor forward(const Batch& batch) override {
    return segment_max(fc_->forward(batch.input).reshape({-1}), batch.lengths);
  }
  torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) override {
    return torch::nn::functional::mse_loss(
        output, batch.target.to(output.options()),
        torch::nn::functional::MSELossFuncOptions().reduction(torch::kSum));
  }

 private:
  torch::nn::Linear fc_;
};

// Fashion-MNIST classifiers: a Sequential `net` of the layers, cross-entropy loss.
class Classifier final : public TaskModel {
 public:
  explicit Classifier(torch::nn::Sequential net) : net_(register_module("net", std::move(net))) {}

  torch::Tensor forward(const Batch& batch) override { return net_->forward(batch.input); }
  torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) override {
    return torch::nn::functional::cross_entropy(
        output, batch.target.to(output.device(), torch::kLong),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }
  std::int64_t correct(const torch::Tensor& output, const Batch& batch) override {
    const torch::Tensor target = batch.target.to(output.device(), torch::kLong);
    return output.argmax(1).eq(target).sum().item<std::int64_t>();
  }

 private:
  torch::nn::Sequential net_;
};

// The layers are added one statement at a time, in the order they run, as PyTorch's
// nn.Sequential(...) makes them: each draws its initial weights from torch's generator, and the
// order in which a call's arguments are evaluated is unspecified in C++ (GCC went right to left,
// clang left to right), so layers built as constructor arguments made the initial model, and
// every figure of a run, depend on the compiler.
torch::nn::Sequential mlp() {
  namespace nn = torch::nn;
  nn::Sequential net;
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(784, 512));
  net->push_back(nn::ReLU());
  net->push_back(nn::Linear(512, 256));
  net->push_back(nn::ReLU());
  net->push_back(nn::Linear(256, 10));
  return net;
}

torch::nn::Sequential cnn() {
  namespace nn = torch::nn;
  // 28 -conv3-> 26 -pool2-> 13 -conv3-> 11 -pool2-> 5: 64 * 5 * 5 = 1600 features.
  nn::Sequential net;
  net->push_back(nn::Conv2d(nn::Conv2dOptions(1, 32, 3)));
  net->push_back(nn::ReLU());
  net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
  net->push_back(nn::Conv2d(nn::Conv2dOptions(32, 64, 3)));
  net->push_back(nn::ReLU());
  net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(1600, 128));
  net->push_back(nn::ReLU());
  net->push_back(nn::Linear(128, 10));
  return net;
}

}  // namespace

std::shared_ptr<TaskModel> make_model(const std::string& task) {
  if (task == "seed") return std::make_shared<SeedModel>();
  if (task == "fmnist-mlp") return std::make_shared<Classifier>(mlp());
  if (task == "fmnist-cnn") return std::make_shared<Classifier>(cnn());
  throw std::invalid_argument("unknown task \"" + task +
                              "\" (allowed: seed, fmnist-mlp, fmnist-cnn)");
}

}  // namespace ddpdesk
