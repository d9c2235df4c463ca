// --fit-batch's trials on one rank (batch_fit.h): sizes above what fits throw the out-of-memory
// error from inside the model's forward, after it changed a buffer and drew random numbers; the
// fit settles on the largest size that fits, and nothing a trial touched is left changed: the
// buffer, torch's CPU generator, the gradients.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "batch_fit.h"
#include "fault_injection.h"
#include "grad_sync.h"
#include "task.h"

using namespace ddpdesk;

namespace {

// The seed task with a buffer its forward changes (as BatchNorm's running statistics) and a
// random draw (as dropout), running out of memory on batches of more than `limit` samples.
class TrialTask : public Task {
 public:
  TrialTask(std::unique_ptr<Task> real, std::int64_t limit)
      : real_(std::move(real)), limit_(limit) {}
  const Dataset& train_data() const override { return real_->train_data(); }
  const Dataset* eval_data() const override { return real_->eval_data(); }
  std::int64_t eval_batch() const override { return real_->eval_batch(); }
  std::vector<torch::Tensor> parameters() override { return real_->parameters(); }
  std::vector<NamedTensor> buffers() override { return {{"running", running_}}; }
  std::vector<NamedTensor> state() override { return real_->state(); }
  void set_training(bool on) override { real_->set_training(on); }
  torch::Tensor forward(const Batch& b) override {
    sizes.push_back(b.size);
    {
      torch::NoGradGuard no_grad;
      running_.add_(1.0);
    }
    (void)torch::rand({4});
    TORCH_CHECK_WITH(OutOfMemoryError, b.size <= limit_, "out of memory (test)");
    return real_->forward(b);
  }
  torch::Tensor loss_sum(const torch::Tensor& out, const Batch& b) override {
    return real_->loss_sum(out, b);
  }
  double correct(const torch::Tensor& out, const Batch& b) override {
    return real_->correct(out, b);
  }
  bool classification() const override { return real_->classification(); }
  bool draws_random_numbers() const override { return true; }
  TaskSummary summary() const override { return real_->summary(); }

  torch::Tensor running_ = torch::zeros({3});
  std::vector<std::int64_t> sizes;  // the batch size of every forward

 private:
  std::unique_ptr<Task> real_;
  std::int64_t limit_;
};

std::unique_ptr<TrialTask> trial_task(std::int64_t limit) {
  RunSpec s;
  s.task = "seed";
  s.dataset_size = 64;
  return std::make_unique<TrialTask>(make_task(s, torch::Device(torch::kCPU)), limit);
}

}  // namespace

TEST(BatchFitTrials, SettlesOnTheLargestSizeThatFitsAndRestoresWhatTheTrialsTouched) {
  auto task = trial_task(5);
  std::vector<std::int64_t> indices(32);
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<std::int64_t>(i);
  GradSync sync(task->parameters(), nullptr);
  FaultInjection faults(FaultSettings{}, 0);
  FitTrial t;
  t.task = task.get();
  t.indices = &indices;
  t.sync = &sync;
  t.faults = &faults;

  torch::manual_seed(7);
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  const torch::Tensor rng_before = gen.get_state();
  const BatchFit fit = fit_batch(t, 16, 2);
  EXPECT_EQ(fit.micro, 4);
  EXPECT_EQ(fit.accum, 8);
  EXPECT_EQ(fit.line, "micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)");
  EXPECT_EQ(task->sizes, (std::vector<std::int64_t>{16, 8, 4}));
  // Three forwards each added 1 and drew numbers; all of it undone.
  EXPECT_TRUE(torch::equal(task->running_, torch::zeros({3}))) << task->running_;
  EXPECT_TRUE(torch::equal(gen.get_state(), rng_before));
  // The backward of the size that fit wrote gradients; they are zero again.
  for (const auto& p : task->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
  }
}

TEST(BatchFitTrials, NothingFittingIsOneLineNamingTheRank) {
  auto task = trial_task(0);
  std::vector<std::int64_t> indices = {0, 1, 2, 3};
  GradSync sync(task->parameters(), nullptr);
  FaultInjection faults(FaultSettings{}, 0);
  FitTrial t;
  t.task = task.get();
  t.indices = &indices;
  t.sync = &sync;
  t.faults = &faults;
  try {
    fit_batch(t, 4, 1);
    FAIL() << "a fit where nothing fits";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "out of memory on rank 0 even in a micro-batch of 1 sample (--fit-batch): the "
                 "model needs more memory than the rank has");
  }
  EXPECT_EQ(task->sizes, (std::vector<std::int64_t>{4, 2, 1}));
  EXPECT_TRUE(torch::equal(task->running_, torch::zeros({3})));
}
