// --fit-batch's trials on one rank (batch_fit.h): sizes above what fits throw the out-of-memory
// error from inside the model's forward, after it changed a buffer and drew random numbers; the
// fit settles on the largest size that fits, and nothing a trial touched is left changed: the
// buffer, torch's CPU generator, the gradients. An out-of-memory raised inside a TorchScript
// module reaches the engine as the interpreter's std::runtime_error and is one all the same.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/library.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "batch_fit.h"
#include "fault_injection.h"
#include "gpu_memory.h"
#include "grad_sync.h"
#include "task.h"

using namespace ddpdesk;

// An operator that runs out of memory as LibTorch's CUDA allocator does, for a TorchScript
// function to call: on CPU nothing else raises c10::OutOfMemoryError inside a scripted module.
TORCH_LIBRARY(ddpdesk_test, m) {
  m.def("oom(Tensor x) -> Tensor", [](const at::Tensor& x) -> at::Tensor {
    TORCH_CHECK_WITH(OutOfMemoryError, false,
                     "CUDA out of memory. Tried to allocate 2.00 GiB (test, ", x.size(0), ")");
  });
}

namespace {

// A scripted function running out of memory: what a TorchScript model's forward raises on a GPU.
void scripted_out_of_memory() {
  // The native resolver knows only `torch`: this one names the test's operators too.
  struct Ops : torch::jit::Resolver {
    std::shared_ptr<torch::jit::SugaredValue> resolveValue(
        const std::string& name, torch::jit::GraphFunction&,
        const torch::jit::SourceRange&) override {
      if (name == "ddpdesk_test") return std::make_shared<torch::jit::BuiltinModule>(name);
      return nullptr;
    }
    c10::TypePtr resolveType(const std::string&, const torch::jit::SourceRange&) override {
      return nullptr;
    }
  };
  static const auto unit = [] {
    auto u = std::make_shared<torch::jit::CompilationUnit>();
    u->define(c10::nullopt, "def f(x):\n    return ddpdesk_test.oom(x)\n", std::make_shared<Ops>(),
              nullptr);
    return u;
  }();
  unit->run_method("f", torch::ones({3}));
}

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
    if (scripted && b.size > limit_) scripted_out_of_memory();
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
  bool scripted = false;            // run out of memory inside a TorchScript function

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

// What fit_batch needs around a task: its epoch's first `n` indices, gradient buckets with no
// communicator, no faults.
struct TrialRig {
  TrialRig(TrialTask& task, std::int64_t n) : sync(task.parameters(), nullptr) {
    for (std::int64_t i = 0; i < n; ++i) indices.push_back(i);
    trial.task = &task;
    trial.indices = &indices;
    trial.sync = &sync;
    trial.faults = &faults;
  }
  std::vector<std::int64_t> indices;
  GradSync sync;
  FaultInjection faults{FaultSettings{}, 0};
  FitTrial trial;
};

}  // namespace

TEST(BatchFitTrials, SettlesOnTheLargestSizeThatFitsAndRestoresWhatTheTrialsTouched) {
  auto task = trial_task(5);
  TrialRig rig(*task, 32);
  const FitTrial& t = rig.trial;

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
  TrialRig rig(*task, 4);
  const FitTrial& t = rig.trial;
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

TEST(BatchFitTrials, AnOutOfMemoryInsideTorchScriptIsOneToo) {
  // The interpreter rethrows the allocator's error as a std::runtime_error with its text.
  try {
    scripted_out_of_memory();
    FAIL() << "the scripted function ran";
  } catch (const c10::OutOfMemoryError&) {
    FAIL() << "the interpreter kept the error's type: no text to recognise it by is needed";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_out_of_memory(e)) << e.what();
  }
  EXPECT_FALSE(is_out_of_memory(std::runtime_error("shape mismatch")));
  EXPECT_FALSE(is_out_of_memory(std::runtime_error("CUDA out of memory, said a script's print")));

  auto task = trial_task(5);
  task->scripted = true;
  TrialRig rig(*task, 32);
  const BatchFit fit = fit_batch(rig.trial, 16, 2);
  EXPECT_EQ(fit.line, "micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)");
  EXPECT_TRUE(torch::equal(task->running_, torch::zeros({3})));
}
