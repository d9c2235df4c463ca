// GradSync without peers: bucket layout (reverse registration order, a small first bucket) and
// gradients accumulating in place in the bucket views across micro-steps.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "grad_sync.h"
#include "models.h"

using namespace ddpdesk;

TEST(GradSync, BucketsInReverseOrderWithASmallFirstBucket) {
  torch::manual_seed(0);
  auto model = make_model("fmnist-mlp");
  GradSync sync(model->parameters(), nullptr);
  // fc3, fc2 and fc1's bias fit the 1 MiB first bucket; fc1's 401,408 weights go on their own,
  // plus the two extras (loss sum, stop votes) riding in the last bucket.
  EXPECT_EQ(sync.bucket_sizes(), (std::vector<std::int64_t>{2570 + 131328 + 512, 401408 + 2}));
  for (const auto& p : model->parameters()) ASSERT_TRUE(p.grad().defined());
}

TEST(GradSync, GradientsAccumulateInPlaceInTheBuckets) {
  torch::manual_seed(0);
  auto model = make_model("seed");
  auto params = model->parameters();
  GradSync sync(params, nullptr);
  const void* before = params[0].grad().data_ptr();
  auto x = torch::randn({22, 10});
  Batch batch{x, torch::tensor({11, 11}, torch::kLong), torch::tensor({1.0f, 2.0f}), 2};
  sync.set_boundary(false);
  model->loss_sum(model->forward(batch), batch).backward();
  auto once = params[0].grad().clone();
  sync.set_boundary(true);
  model->loss_sum(model->forward(batch), batch).backward();
  sync.finish_window();
  EXPECT_EQ(params[0].grad().data_ptr(), before);  // still the bucket view
  EXPECT_TRUE(torch::allclose(params[0].grad(), 2 * once));
  sync.zero_grads();
  EXPECT_EQ(params[0].grad().abs().sum().item<float>(), 0.0f);
}
