// The trainer's parts, each on its own: device choice, the choice of collectives and overlap,
// the periodic-checkpoint policy, validation figures, the progress and summary lines, the sizes
// --fit-batch tries and the out-of-memory line, and mixed precision's autocast scope and fp16
// loss scale.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "batch_fit.h"
#include "communicator_choice.h"
#include "device_choice.h"
#include "evaluation.h"
#include "mixed_precision.h"
#include "oom_report.h"
#include "run_checkpoints.h"
#include "run_report.h"
#include "task.h"

using namespace ddpdesk;

namespace {

RankEnv ranks(int world, int local_world) {
  RankEnv e;
  e.world = world;
  e.local_world = local_world;
  return e;
}

}  // namespace

TEST(DeviceChoice, CpuSpecTrainsOnTheCpu) {
  RunSpec s;
  EXPECT_TRUE(choose_device(s, ranks(4, 4)).is_cpu());
}

TEST(DeviceChoice, MoreLocalRanksThanGpusIsBadInputWithTheSpecsOneMessage) {
  RunSpec s;
  s.device = "cuda";
  const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  const RankEnv env = ranks(gpus + 1, gpus + 1);  // always one rank too many for this machine
  try {
    choose_device(s, env);
    FAIL() << "no BadInput";
  } catch (const BadInput& e) {
    const auto want = validate_gpus(s, env.local_world, gpus);
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(e.field(), want[0].field);
    EXPECT_EQ(std::string(e.what()), format_error(want[0], Spelling::Flag));
  }
}

TEST(CommunicatorChoice, Transport) {
  WorkerSettings s;
  EXPECT_EQ(choose_transport(ranks(1, 1), false, s), Transport::None);
  EXPECT_EQ(choose_transport(ranks(1, 1), true, s), Transport::None);
  EXPECT_EQ(choose_transport(ranks(4, 4), false, s), Transport::SharedMemory);
  EXPECT_EQ(choose_transport(ranks(8, 4), false, s), Transport::Gloo);  // two machines
  EXPECT_EQ(choose_transport(ranks(4, 4), true, s), Transport::Nccl);
  // Past shared memory's limit, ranks of one machine still train, over Gloo.
  EXPECT_EQ(choose_transport(ranks(kMaxLocalRanks, kMaxLocalRanks), false, s),
            Transport::SharedMemory);
  EXPECT_EQ(choose_transport(ranks(kMaxLocalRanks + 1, kMaxLocalRanks + 1), false, s),
            Transport::Gloo);
  s.cpu_comm = WorkerSettings::CpuComm::Gloo;
  EXPECT_EQ(choose_transport(ranks(4, 4), false, s), Transport::Gloo);
  s.cpu_comm = WorkerSettings::CpuComm::Shm;
  EXPECT_EQ(choose_transport(ranks(8, 4), false, s), Transport::SharedMemory);
  s.force_comm = true;  // one GPU can still exercise NCCL
  EXPECT_EQ(choose_transport(ranks(1, 1), true, s), Transport::Nccl);
}

TEST(CommunicatorChoice, OverlapNeedsASpareCorePerRank) {
  WorkerSettings s;
  EXPECT_TRUE(overlap_communication(ranks(2, 2), false, s, 4));
  EXPECT_FALSE(overlap_communication(ranks(2, 2), false, s, 3));
  EXPECT_TRUE(overlap_communication(ranks(8, 8), true, s, 1));  // the GPU computes
  s.overlap = false;
  EXPECT_FALSE(overlap_communication(ranks(2, 2), false, s, 64));
  s.overlap = true;
  EXPECT_TRUE(overlap_communication(ranks(2, 2), false, s, 1));
}

TEST(RunCheckpoints, PeriodicByStepsAndByMinutes) {
  RunSpec s;
  EXPECT_FALSE(RunCheckpoints(s, 0).due(10, 1e9));  // no run directory: never
  s.run_dir = "/tmp/nowhere";
  EXPECT_FALSE(RunCheckpoints(s, 0).due(10, 1e9));  // no period set
  s.checkpoint_every = 5;
  RunCheckpoints by_steps(s, 0);
  EXPECT_FALSE(by_steps.due(4, 0));
  EXPECT_TRUE(by_steps.due(5, 0));
  EXPECT_TRUE(by_steps.due(10, 0));
  s.checkpoint_every = 0;
  s.checkpoint_minutes = 2;
  RunCheckpoints by_time(s, 100);
  EXPECT_FALSE(by_time.due(1, 100 + 119));
  EXPECT_TRUE(by_time.due(1, 100 + 120));
}

TEST(Evaluation, OneRankMatchesTheLossComputedByHand) {
  RunSpec s;
  s.task = "seed";
  s.dataset_size = 90;
  auto task = make_task(s, torch::Device(torch::kCPU));
  const Dataset& eval = *task->eval_data();
  const EvalFigures f = evaluate(*task, eval, torch::Device(torch::kCPU), nullptr, 0, 1);
  EXPECT_EQ(f.samples, eval.size());
  EXPECT_EQ(f.accuracy, -1);  // regression: no accuracy

  torch::NoGradGuard no_grad;
  std::vector<std::int64_t> all(static_cast<std::size_t>(eval.size()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  task->set_training(false);
  Batch b = eval.batch(all);
  const double want = task->loss_sum(task->forward(b), b).item<double>() / eval.size();
  EXPECT_NEAR(f.loss, want, 1e-6 * std::abs(want));
}

TEST(RunReport, SummaryLineScriptsParse) {
  SummaryFigures f;
  f.task = "fmnist-mlp";
  f.device = "cpu";
  f.world = 2;
  f.batch = 64;
  f.accum = 2;
  f.epochs = 1;
  f.steps = 469;
  f.trained_samples = 60000;
  f.train_seconds = 2.0;
  f.final_loss = 0.5;
  EXPECT_EQ(summary_line(f),
            "ddpdesk-worker task=fmnist-mlp device=cpu world=2 batch=64 accum=2 epochs=1 "
            "steps=469 train_time=2.000s samples_per_s=30000.0 final_loss=0.5");
  f.has_eval = true;
  f.eval_loss = 0.25;
  EXPECT_EQ(summary_line(f).substr(summary_line(f).rfind(' ') + 1), "eval_loss=0.25");
  f.accuracy = 0.875;
  EXPECT_EQ(summary_line(f).substr(summary_line(f).rfind(' ') + 1), "test_acc=0.8750");
}

TEST(RunReport, ProgressLine) {
  ProgressFigures p;
  p.epoch = 0;
  p.epochs = 3;
  p.step = 7;
  p.total_steps = 30;
  p.loss = 1.5;
  p.global_loss = 1.25;
  p.samples_per_s = 1234.4;
  EXPECT_EQ(progress_line(p),
            "ddpdesk-worker[0] epoch 1/3 step 7/30 loss 1.5 global 1.25 1234 samples/s");
}

TEST(MixedPrecision, AutocastScopeCastsTheForwardAndRestoresTheStateAfter) {
  torch::Tensor a = torch::randn({4, 8}), w = torch::randn({3, 8});
  {
    AutocastScope bf16(Precision::BF16, torch::kCPU);
    EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kBFloat16);
    {
      AutocastScope nested(Precision::BF16, torch::kCPU);
      EXPECT_EQ(torch::matmul(a, w.t()).scalar_type(), torch::kBFloat16);
    }
    EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kBFloat16);  // the outer one still holds
  }
  EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kFloat);
  {
    AutocastScope fp32(Precision::FP32, torch::kCPU);
    EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kFloat);
  }
}

TEST(MixedPrecision, DisabledScalerIsOneAndChecksNothing) {
  LossScaler off(false);
  EXPECT_EQ(off.scale(), 1.0);
  torch::Tensor g = torch::full({3}, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(off.unscale({g}));
  EXPECT_TRUE(std::isinf(g[0].item<float>()));  // untouched
}

TEST(MixedPrecision, LossScaleUnscalesSkipsOnOverflowAndGrows) {
  LossScaler s(true);
  EXPECT_EQ(s.scale(), 65536.0);
  torch::Tensor a = torch::full({4}, 65536.0f), b = torch::full({2}, -131072.0f);
  EXPECT_TRUE(s.unscale({a, b}));
  EXPECT_TRUE(torch::equal(a, torch::ones({4})));
  EXPECT_TRUE(torch::equal(b, torch::full({2}, -2.0f)));
  s.update(true);
  EXPECT_EQ(s.state().growth, 1);

  // One inf or NaN anywhere: skip, halve the scale, start counting clean windows again.
  torch::Tensor c = torch::ones({5});
  c[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(s.unscale({torch::ones({2}), c}));
  s.update(false);
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_EQ(s.state().growth, 0);
  EXPECT_EQ(s.state().skipped, 1);

  // kGrowthInterval clean windows in a row double it.
  for (std::int64_t i = 0; i < LossScaler::kGrowthInterval - 1; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 32768.0);
  s.update(true);
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.state().growth, 0);

  // What a checkpoint keeps comes back.
  LossScaler resumed(true);
  resumed.restore({1024.0, 7, 3});
  EXPECT_EQ(resumed.scale(), 1024.0);
  EXPECT_EQ(resumed.state().growth, 7);
  EXPECT_EQ(resumed.state().skipped, 3);
}

TEST(BatchFit, CandidatesAreTheDivisorsOfTheWindowUpToTheBatchLargestFirst) {
  EXPECT_EQ(fit_candidates(64, 2), (std::vector<std::int64_t>{64, 32, 16, 8, 4, 2, 1}));
  EXPECT_EQ(fit_candidates(12, 1), (std::vector<std::int64_t>{12, 6, 4, 3, 2, 1}));
  // 6 x 5 = 30: 5 and 3 divide the window though not the batch; 4 divides neither.
  EXPECT_EQ(fit_candidates(6, 5), (std::vector<std::int64_t>{6, 5, 3, 2, 1}));
  EXPECT_EQ(fit_candidates(1, 7), (std::vector<std::int64_t>{1}));
  for (std::int64_t m : fit_candidates(48, 3)) EXPECT_EQ(48 * 3 % m, 0) << m;
}

TEST(BatchFit, LocalFitsStopAtTheFirstSizeThatFits) {
  const std::vector<std::int64_t> sizes = {16, 8, 4, 2, 1};
  std::vector<std::int64_t> tried;
  auto above = [&](std::int64_t limit) {
    return [&tried, limit](std::int64_t n) {
      tried.push_back(n);
      TORCH_CHECK_WITH(OutOfMemoryError, n <= limit, "out of memory");
    };
  };
  EXPECT_EQ(local_fits(sizes, above(5)), (std::vector<double>{0, 0, 1, 1, 1}));
  EXPECT_EQ(tried, (std::vector<std::int64_t>{16, 8, 4}));  // nothing smaller is tried
  tried.clear();
  EXPECT_EQ(local_fits(sizes, above(100)), (std::vector<double>{1, 1, 1, 1, 1}));
  EXPECT_EQ(tried, (std::vector<std::int64_t>{16}));
  EXPECT_EQ(local_fits(sizes, above(0)), (std::vector<double>{0, 0, 0, 0, 0}));
  // Another error is no out-of-memory: it is not taken for "does not fit".
  EXPECT_THROW(local_fits(sizes, [](std::int64_t) { throw std::runtime_error("broken"); }),
               std::runtime_error);
}

TEST(OomReport, OneLineNamesRankMicroBatchStepAndCheckpoint) {
  OomReport r;
  r.rank = 1;
  r.micro = 64;
  r.step = 12;
  r.checkpoint = "checkpoint of step 11 written";
  EXPECT_EQ(oom_line(r),
            "out of memory on rank 1 in a micro-batch of 64 samples (step 12); checkpoint of step "
            "11 written; try --fit-batch or a smaller --batch-size");
  r.peak = std::int64_t(78) * 1024 * 1024 * 1024 + 100 * 1024 * 1024;
  r.fit_batch = true;
  r.micro = 1;
  EXPECT_EQ(oom_line(r),
            "out of memory on rank 1 in a micro-batch of 1 sample (step 12; GPU memory peak 78.1 "
            "GiB); checkpoint of step 11 written; try a smaller --batch-size");
  OomReport outside;
  outside.step = 3;
  EXPECT_EQ(oom_line(outside),
            "out of memory on rank 0 (step 3); try --fit-batch or a smaller --batch-size");
  EXPECT_EQ(memory_text(512 * 1024 * 1024), "512 MiB");
}
