#include "evaluation.h"

#include <algorithm>
#include <vector>

#include "communicator.h"
#include "dataset.h"
#include "device_batch.h"
#include "task.h"

namespace ddpdesk {

EvalFigures evaluate(Task& task, const Dataset& eval, const torch::Device& device,
                     Communicator* comm, int rank, int world, Precision precision) {
  torch::NoGradGuard no_grad;
  double loss_sum = 0, correct = 0, count = 0;
  std::vector<std::int64_t> mine;
  for (std::int64_t i = rank; i < eval.size(); i += world) mine.push_back(i);
  const std::size_t eval_batch = static_cast<std::size_t>(task.eval_batch());
  task.set_training(false);
  for (std::size_t s = 0; s < mine.size(); s += eval_batch) {
    auto end = mine.begin() + std::min(mine.size(), s + eval_batch);
    Batch b = to_device(eval.batch(std::vector<std::int64_t>(mine.begin() + s, end)), device);
    torch::Tensor out = precision_forward(task, b, precision, device);
    loss_sum += task.loss_sum(out, b).item<double>();
    const double c = task.correct(out, b);
    if (c >= 0) correct += c;
    count += static_cast<double>(b.size);
  }
  task.set_training(true);
  torch::Tensor sums = torch::tensor({loss_sum, correct, count}, torch::kDouble);
  if (comm) {
    sums = sums.to(device);
    comm->allreduce_sum(sums);
    sums = sums.to(torch::kCPU);
  }
  EvalFigures f;
  const double n = sums[2].item<double>();
  f.samples = static_cast<std::int64_t>(n);
  f.loss = sums[0].item<double>() / n;
  if (task.classification()) f.accuracy = sums[1].item<double>() / n;
  return f;
}

}  // namespace ddpdesk
