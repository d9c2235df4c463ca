// The exit code follows the phase, not the exception's type: bad input found while setting a
// run up throws BadInput out of TrainingRun's constructor; once training runs, any exception
// (BadInput's own type included) is a Failed result from run(), which never throws.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <torch/torch.h>

#include "task.h"
#include "trainer.h"

using namespace ddpdesk;

namespace {

RunSpec seed_spec() {
  RunSpec s;
  s.task = "seed";
  s.dataset_size = 64;
  s.batch_size = 8;
  s.epochs = 2;
  return s;
}

// A real seed task whose training loss throws at one call, as a broken model or data file
// might once a run is under way, or (oom) as a TorchScript model running out of GPU memory does:
// LibTorch's interpreter rethrows the allocator's error as a std::runtime_error with its text
// (test_batch_fit runs a real one). Everything else is the real task's.
class ThrowingTask : public Task {
 public:
  ThrowingTask(std::unique_ptr<Task> real, int throw_at_call, bool oom = false)
      : real_(std::move(real)), throw_at_(throw_at_call), oom_(oom) {}
  const Dataset& train_data() const override { return real_->train_data(); }
  const Dataset* eval_data() const override { return real_->eval_data(); }
  std::int64_t eval_batch() const override { return real_->eval_batch(); }
  std::vector<torch::Tensor> parameters() override { return real_->parameters(); }
  std::vector<NamedTensor> buffers() override { return real_->buffers(); }
  std::vector<NamedTensor> state() override { return real_->state(); }
  void set_training(bool on) override { real_->set_training(on); }
  torch::Tensor forward(const Batch& b) override { return real_->forward(b); }
  torch::Tensor loss_sum(const torch::Tensor& out, const Batch& b) override {
    if (++calls_ == throw_at_ && oom_)
      throw std::runtime_error(
          "The following operation failed in the TorchScript interpreter.\n"
          "Traceback of TorchScript (most recent call last):\n"
          "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (test)\n");
    if (calls_ == throw_at_)
      throw BadInput("train_data", "invalid --train-data 'x': thrown mid-run by the test");
    return real_->loss_sum(out, b);
  }
  double correct(const torch::Tensor& out, const Batch& b) override {
    return real_->correct(out, b);
  }
  bool classification() const override { return real_->classification(); }
  bool draws_random_numbers() const override { return real_->draws_random_numbers(); }
  TaskSummary summary() const override { return real_->summary(); }
  int calls() const { return calls_; }

 private:
  std::unique_ptr<Task> real_;
  int throw_at_;
  bool oom_;
  int calls_ = 0;
};

TrainerOptions options(const RunSpec& spec, Task* task) {
  TrainerOptions o;
  o.spec = spec;
  o.task = task;
  return o;
}

}  // namespace

TEST(TrainingPhases, BadResumeIsBadInputFromTheSetUp) {
  RunSpec s = seed_spec();
  s.resume = "/nonexistent/ddpdesk-run";
  auto task = make_task(s, torch::Device(torch::kCPU));
  try {
    TrainingRun run(options(s, task.get()));
    FAIL() << "set-up accepted a resume from nowhere";
  } catch (const BadInput& e) {
    EXPECT_EQ(e.field(), "resume");
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
}

TEST(TrainingPhases, DatasetSmallerThanTheWorldIsBadInputFromTheSetUp) {
  RunSpec s = seed_spec();
  s.dataset_size = 1;
  auto task = make_task(s, torch::Device(torch::kCPU));
  TrainerOptions o = options(s, task.get());
  o.env.world = 2;  // never reaches the communicator: the check comes first
  o.env.master_port = 1;
  EXPECT_THROW(TrainingRun run(o), BadInput);
}

TEST(TrainingPhases, AnExceptionOnceRunningIsAFailedResultWhateverItsType) {
  RunSpec s = seed_spec();
  auto real = make_task(s, torch::Device(torch::kCPU));
  ThrowingTask task(std::move(real), /*throw_at_call=*/3);
  TrainingRun run(options(s, &task));
  TrainResult r;
  ASSERT_NO_THROW(r = run.run());
  EXPECT_EQ(r.kind, TrainResult::Failed);
  EXPECT_EQ(r.message, "invalid --train-data 'x': thrown mid-run by the test");
  EXPECT_EQ(r.step, 2);  // two windows trained before the third one's loss threw
  EXPECT_EQ(task.calls(), 3);
}

TEST(TrainingPhases, AnOutOfMemoryInATorchScriptModelIsTheRunsOutOfMemory) {
  RunSpec s = seed_spec();
  auto real = make_task(s, torch::Device(torch::kCPU));
  ThrowingTask task(std::move(real), /*throw_at_call=*/3, /*oom=*/true);
  TrainingRun run(options(s, &task));
  const TrainResult r = run.run();
  EXPECT_EQ(r.kind, TrainResult::Failed);
  EXPECT_TRUE(r.out_of_memory) << r.message;  // the worker's exit 3
  EXPECT_EQ(r.message,
            "out of memory on rank 0 in a micro-batch of 8 samples (step 3); no checkpoint (no "
            "--run-dir); try --fit-batch or a smaller --batch-size");
}

TEST(TrainingPhases, TheSameTaskWithoutTheFaultFinishes) {
  RunSpec s = seed_spec();
  auto real = make_task(s, torch::Device(torch::kCPU));
  ThrowingTask task(std::move(real), /*throw_at_call=*/-1);
  TrainingRun run(options(s, &task));
  const TrainResult r = run.run();
  EXPECT_EQ(r.kind, TrainResult::Finished) << r.message;
  EXPECT_EQ(r.step, 16);  // 64 samples / batch 8, two epochs
}
