// FusedAdam follows torch::optim::Adam (L2 weight decay, bias correction) to float precision.
#include <gtest/gtest.h>

#include <torch/optim/adam.h>
#include <torch/torch.h>

#include "fused_adam.h"

using namespace ddpdesk;

TEST(FusedAdam, MatchesTorchAdamOverManySteps) {
  torch::manual_seed(3);
  auto a = torch::randn({37, 5}).requires_grad_();
  auto b = a.detach().clone().requires_grad_();
  AdamOptions o;
  o.lr = 1e-2;
  o.weight_decay = 5e-4;
  FusedAdam mine({a}, o);
  torch::optim::Adam ref({b}, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  for (int step = 0; step < 50; ++step) {
    auto g = torch::randn({37, 5});
    a.mutable_grad() = g.clone();
    b.mutable_grad() = g.clone();
    mine.step();
    ref.step();
  }
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6)) << (a - b).abs().max().item<float>();
  EXPECT_EQ(mine.steps(), 50);
}

TEST(FusedAdam, StateSurvivesSaveAndLoad) {
  auto p = torch::ones({4}).requires_grad_();
  FusedAdam a({p}, {});
  p.mutable_grad() = torch::full({4}, 0.5f);
  a.step();
  torch::serialize::OutputArchive out;
  a.save(out);
  std::stringstream ss;
  out.save_to(ss);
  auto q = p.detach().clone().requires_grad_();
  FusedAdam b({q}, {});
  torch::serialize::InputArchive in;
  in.load_from(ss);
  b.load(in);
  EXPECT_EQ(b.steps(), 1);
  p.mutable_grad() = torch::full({4}, 0.25f);
  q.mutable_grad() = torch::full({4}, 0.25f);
  a.step();
  b.step();
  EXPECT_TRUE(torch::equal(p, q));
}

// The tensor formulation (a CUDA rank's, recordable in a CUDA graph) against torch's Adam and
// against the loop, step by step: begin_step() then update(), as a graphed run calls them, and
// an update() repeated on the same tensors (what a replay does) uses each step's own corrections.
TEST(FusedAdam, TensorOpsMatchTorchAdamAndTheLoop) {
  torch::manual_seed(5);
  auto a = torch::randn({23, 3}).requires_grad_();
  auto b = a.detach().clone().requires_grad_();
  auto c = a.detach().clone().requires_grad_();
  AdamOptions o;
  o.lr = 1e-2;
  o.weight_decay = 1e-3;
  AdamOptions t = o;
  t.tensor_ops = true;
  FusedAdam tensors({a}, t);
  FusedAdam loop({c}, o);
  torch::optim::Adam ref({b}, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  for (int step = 0; step < 40; ++step) {
    auto g = torch::randn({23, 3});
    a.mutable_grad() = g.clone();
    b.mutable_grad() = g.clone();
    c.mutable_grad() = g.clone();
    tensors.begin_step();
    tensors.update();
    loop.step();
    ref.step();
  }
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6)) << (a - b).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(a, c, 1e-5, 1e-6)) << (a - c).abs().max().item<float>();
  EXPECT_FALSE(torch::equal(a, torch::zeros_like(a)));
  EXPECT_EQ(tensors.steps(), 40);
}
