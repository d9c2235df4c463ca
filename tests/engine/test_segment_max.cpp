// segment_max: the seed model's masked max. Checked against a plain per-sample loop (the loop
// lives only here), for values and gradients, plus finite differences in double.
#include <gtest/gtest.h>

#include <vector>

#include <torch/torch.h>

#include "models.h"

namespace {

using ddpdesk::segment_max;

torch::Tensor lengths_of(const std::vector<std::int64_t>& l) {
  return torch::tensor(l, torch::kLong);
}

// The obvious reference: slice each sample, take its max, 0 for an empty sample.
torch::Tensor reference(const torch::Tensor& values, const torch::Tensor& lengths) {
  std::vector<torch::Tensor> out;
  std::int64_t start = 0;
  for (std::int64_t i = 0; i < lengths.size(0); ++i) {
    const std::int64_t n = lengths[i].item<std::int64_t>();
    out.push_back(n > 0 ? values.slice(0, start, start + n).max() : values.new_zeros({}));
    start += n;
  }
  return torch::stack(out);
}

TEST(SegmentMax, MatchesPerSampleMaxOnARaggedBatch) {
  const auto values = torch::tensor({3.f, 1.f, 2.f, 5.f, -1.f, 4.f});
  const auto out = segment_max(values, lengths_of({3, 1, 2}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({3.f, 5.f, 4.f})));
}

TEST(SegmentMax, EmptySamplesGiveZero) {
  const auto values = torch::tensor({7.f, 2.f, 9.f});
  const auto out = segment_max(values, lengths_of({0, 2, 0, 1, 0}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({0.f, 7.f, 0.f, 9.f, 0.f})));
}

TEST(SegmentMax, PaddingDoesNotLeakIntoAllNegativeSamples) {
  // The seed padded short samples with zeros, so an all-negative sample came out as 0.
  const auto values = torch::tensor({-5.f, -3.f, -4.f, 10.f, 11.f, 12.f, 13.f});
  const auto out = segment_max(values, lengths_of({3, 4}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({-3.f, 13.f})));
}

TEST(SegmentMax, BatchOfOnlyEmptySamplesStaysDifferentiable) {
  const auto values = torch::empty({0}, torch::requires_grad());
  const auto out = segment_max(values, lengths_of({0, 0, 0}));
  EXPECT_TRUE(torch::equal(out, torch::zeros({3})));
  ASSERT_TRUE(out.requires_grad());  // the trainer calls backward() on every batch
  out.sum().backward();
  EXPECT_EQ(values.grad().numel(), 0);
}

TEST(SegmentMax, EmptyBatch) {
  EXPECT_EQ(segment_max(torch::empty({0}), lengths_of({})).numel(), 0);
}

TEST(SegmentMax, RejectsLengthsThatDoNotSumToRows) {
  EXPECT_THROW(segment_max(torch::zeros({4}), lengths_of({2, 1})), c10::Error);
  EXPECT_THROW(segment_max(torch::zeros({2}), lengths_of({3, -1})), c10::Error);
}

// A random ragged batch in double with distinct values (no ties, so the max is differentiable).
struct Case {
  torch::Tensor values, lengths, weights;
};
Case random_case(std::int64_t seed) {
  torch::manual_seed(seed);
  const auto lengths = torch::randint(0, 9, {9}, torch::kLong);  // 0..8 rows
  lengths[2] = 0;
  const std::int64_t rows = lengths.sum().item<std::int64_t>();
  auto values = torch::randperm(rows, torch::kDouble).sub_(rows / 2.0).div_(3.0);
  return {values.requires_grad_(), lengths, torch::randn({9}, torch::kDouble)};
}

TEST(SegmentMax, ValuesAndGradientsMatchTheLoop) {
  for (std::int64_t seed = 0; seed < 5; ++seed) {
    Case c = random_case(seed);
    const auto out = segment_max(c.values, c.lengths);
    const auto ref = reference(c.values, c.lengths);
    ASSERT_TRUE(torch::allclose(out, ref)) << out << ref;
    const auto g = torch::autograd::grad({(out * c.weights).sum()}, {c.values})[0];
    const auto g_ref = torch::autograd::grad({(ref * c.weights).sum()}, {c.values})[0];
    EXPECT_TRUE(torch::allclose(g, g_ref)) << g << g_ref;
  }
}

TEST(SegmentMax, GradientMatchesFiniteDifferences) {
  Case c = random_case(11);
  auto f = [&](const torch::Tensor& v) {
    return (segment_max(v, c.lengths) * c.weights).sum().item<double>();
  };
  const auto analytic =
      torch::autograd::grad({(segment_max(c.values, c.lengths) * c.weights).sum()}, {c.values})[0];
  const double eps = 1e-6;
  const auto base = c.values.detach();
  for (std::int64_t i = 0; i < base.size(0); ++i) {
    auto plus = base.clone();
    auto minus = base.clone();
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric = (f(plus) - f(minus)) / (2 * eps);
    EXPECT_NEAR(analytic[i].item<double>(), numeric, 1e-6) << "row " << i;
  }
}

TEST(SegmentMax, CudaMatchesCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Case c = random_case(3);
  const auto cpu = segment_max(c.values, c.lengths);
  const auto g_cpu = torch::autograd::grad({(cpu * c.weights).sum()}, {c.values})[0];
  const auto values = c.values.detach().cuda().requires_grad_();
  // Lengths may arrive on either device.
  for (const auto& lengths : {c.lengths, c.lengths.cuda()}) {
    const auto out = segment_max(values, lengths);
    ASSERT_TRUE(out.is_cuda());
    EXPECT_TRUE(torch::equal(out.cpu(), cpu));
    const auto g = torch::autograd::grad({(out * c.weights.cuda()).sum()}, {values})[0];
    EXPECT_TRUE(torch::equal(g.cpu(), g_cpu));
  }
}

}  // namespace
