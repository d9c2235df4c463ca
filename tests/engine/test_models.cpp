// The task models: output shapes, parameter counts and registration order (gradient bucketing
// depends on it), summed losses and the accuracy count.
#include <gtest/gtest.h>

#include <numeric>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "models.h"

namespace {

using Shapes = std::vector<std::vector<std::int64_t>>;

std::int64_t count_params(const torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

Shapes param_shapes(const torch::nn::Module& m) {
  Shapes s;
  for (const auto& p : m.parameters()) s.push_back(p.sizes().vec());
  return s;
}

// Equal parameters, tensor by tensor and bit for bit.
void expect_same_parameters(const std::vector<torch::Tensor>& got,
                            const std::vector<torch::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], want[i])) << i;
}

ddpdesk::Batch image_batch(std::int64_t b) {
  ddpdesk::Batch batch;
  batch.input = torch::randn({b, 1, 28, 28});
  batch.target = torch::randint(0, 10, {b}, torch::kLong);
  batch.size = b;
  return batch;
}

TEST(Models, SeedModelShapesAndLoss) {
  torch::manual_seed(0);
  const auto model = ddpdesk::make_model("seed");
  EXPECT_EQ(param_shapes(*model), (Shapes{{1, 10}, {1}}));
  const auto batch = ddpdesk::make_seed_dataset(40, 2)->batch({0, 5, 9, 13, 21, 39});
  const auto out = model->forward(batch);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{6}));
  const auto loss = model->loss_sum(out, batch);
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_NEAR(loss.item<double>(), (out - batch.target).pow(2).sum().item<double>(), 1e-3);
  EXPECT_EQ(model->correct(out, batch), -1);
  loss.backward();
  for (const auto& p : model->parameters()) EXPECT_TRUE(p.grad().defined());
}

TEST(Models, SeedModelEmptySamplesPredictZero) {
  const auto model = ddpdesk::make_model("seed");
  ddpdesk::Batch batch;
  batch.input = torch::randn({0, 10});
  batch.lengths = torch::zeros({2}, torch::kLong);
  batch.target = torch::tensor({1.f, 2.f});
  batch.size = 2;
  const auto out = model->forward(batch);
  EXPECT_TRUE(torch::equal(out, torch::zeros({2})));
  model->loss_sum(out, batch).backward();  // still a graph: a zero gradient, not an error
  EXPECT_EQ(model->parameters()[0].grad().abs().sum().item<float>(), 0.f);
}

TEST(Models, MlpShapesAndParameterOrder) {
  const auto model = ddpdesk::make_model("fmnist-mlp");
  EXPECT_EQ(count_params(*model), 535818);
  EXPECT_EQ(param_shapes(*model), (Shapes{{512, 784}, {512}, {256, 512}, {256}, {10, 256}, {10}}));
  EXPECT_EQ(model->forward(image_batch(5)).sizes(), (std::vector<std::int64_t>{5, 10}));
}

TEST(Models, CnnShapesAndParameterOrder) {
  const auto model = ddpdesk::make_model("fmnist-cnn");
  EXPECT_EQ(count_params(*model), 225034);
  EXPECT_EQ(
      param_shapes(*model),
      (Shapes{{32, 1, 3, 3}, {32}, {64, 32, 3, 3}, {64}, {128, 1600}, {128}, {10, 128}, {10}}));
  EXPECT_EQ(model->forward(image_batch(3)).sizes(), (std::vector<std::int64_t>{3, 10}));
}

TEST(Models, ClassifierLossIsSummedCrossEntropy) {
  torch::manual_seed(1);
  const auto model = ddpdesk::make_model("fmnist-mlp");
  const auto batch = image_batch(8);
  const auto out = model->forward(batch);
  const auto expected = -torch::log_softmax(out, 1).gather(1, batch.target.unsqueeze(1)).sum();
  EXPECT_NEAR(model->loss_sum(out, batch).item<double>(), expected.item<double>(), 1e-4);
}

TEST(Models, CorrectCountsArgmaxMatches) {
  const auto model = ddpdesk::make_model("fmnist-cnn");
  ddpdesk::Batch batch;
  batch.target = torch::tensor({3, 1, 4}, torch::kLong);
  batch.size = 3;
  auto logits = torch::zeros({3, 10});
  logits[0][3] = 1;  // right
  logits[1][2] = 1;  // wrong
  logits[2][4] = 5;  // right
  EXPECT_EQ(model->correct(logits, batch), 2);
}

TEST(Models, InitialisationFollowsTheGlobalSeed) {
  torch::manual_seed(7);
  const auto a = ddpdesk::make_model("fmnist-cnn");
  torch::manual_seed(7);
  const auto b = ddpdesk::make_model("fmnist-cnn");
  expect_same_parameters(a->parameters(), b->parameters());
}

// The layers draw their initial weights in the order they run, as PyTorch's nn.Sequential(...)
// does: built as one call's arguments they drew them in whatever order the compiler evaluated
// those (GCC: last layer first), so the same seed gave another model with another compiler.
TEST(Models, LayersAreInitialisedInTheOrderTheyRun) {
  namespace nn = torch::nn;
  torch::manual_seed(11);
  const auto mlp = ddpdesk::make_model("fmnist-mlp");
  torch::manual_seed(11);
  std::vector<torch::Tensor> expected;
  for (const auto& [in, out] : {std::pair{784, 512}, {512, 256}, {256, 10}}) {
    const nn::Linear layer(in, out);
    expected.push_back(layer->weight);
    expected.push_back(layer->bias);
  }
  expect_same_parameters(mlp->parameters(), expected);

  torch::manual_seed(12);
  const auto cnn = ddpdesk::make_model("fmnist-cnn");
  torch::manual_seed(12);
  const nn::Conv2d c1(nn::Conv2dOptions(1, 32, 3));
  const nn::Conv2d c2(nn::Conv2dOptions(32, 64, 3));
  const nn::Linear l1(1600, 128);
  const nn::Linear l2(128, 10);
  expect_same_parameters(cnn->parameters(), {c1->weight, c1->bias, c2->weight, c2->bias, l1->weight,
                                             l1->bias, l2->weight, l2->bias});
}

TEST(Models, UnknownTaskIsRefused) {
  EXPECT_THROW(ddpdesk::make_model("resnet"), std::invalid_argument);
}

}  // namespace
