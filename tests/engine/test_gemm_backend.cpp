// LibTorch's float matrix products on oneDNN (engine/gemm): the sgemm_ this process exports must
// compute what the system BLAS's sgemm_ computes, for every transposition, leading dimension,
// alpha and beta LibTorch may pass, and LibTorch's own calls must arrive there. Skipped (visibly)
// in a build that leaves the products to the BLAS.
#include <dlfcn.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gemm_backend.h"

namespace {

using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                       const float*, const int*, const float*, const int*, const float*, float*,
                       const int*);

bool on_onednn() {
  return std::string(ddpdesk::gemm_backend()) == "oneDNN";
}

// The sgemm_ LibTorch binds to (the first in the process's lookup order: the executable's), and
// the BLAS's one behind it.
Sgemm process_sgemm() {
  return reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"));
}
Sgemm blas_sgemm() {
  return reinterpret_cast<Sgemm>(dlsym(RTLD_NEXT, "sgemm_"));
}

struct Case {
  char ta, tb;
  int m, n, k;
  float alpha, beta;
  int pad;  // extra leading dimension beyond the minimum
};

std::vector<float> random_floats(std::size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// C as both sgemm_s leave it, from the same A, B and starting C.
void expect_same_as_blas(const Case& c, std::mt19937& gen) {
  const bool ta = c.ta != 'N' && c.ta != 'n', tb = c.tb != 'N' && c.tb != 'n';
  // Column-major: op(A) is m x k, stored k x m when transposed; likewise B.
  const int a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;
  const int b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
  const int lda = std::max(1, a_rows) + c.pad, ldb = std::max(1, b_rows) + c.pad,
            ldc = std::max(1, c.m) + c.pad;
  const auto a = random_floats(static_cast<std::size_t>(lda) * std::max(1, a_cols), gen);
  const auto b = random_floats(static_cast<std::size_t>(ldb) * std::max(1, b_cols), gen);
  const auto c0 = random_floats(static_cast<std::size_t>(ldc) * std::max(1, c.n), gen);
  auto ours = c0, theirs = c0;
  process_sgemm()(&c.ta, &c.tb, &c.m, &c.n, &c.k, &c.alpha, a.data(), &lda, b.data(), &ldb, &c.beta,
                  ours.data(), &ldc);
  blas_sgemm()(&c.ta, &c.tb, &c.m, &c.n, &c.k, &c.alpha, a.data(), &lda, b.data(), &ldb, &c.beta,
               theirs.data(), &ldc);
  for (int j = 0; j < c.n; ++j)
    for (int i = 0; i < ldc; ++i) {
      const std::size_t at = static_cast<std::size_t>(j) * ldc + i;
      if (i >= c.m) {  // padding between columns: neither may touch it
        ASSERT_EQ(ours[at], c0[at]) << "wrote outside C at row " << i << " column " << j;
        continue;
      }
      // Sums of k products of numbers in [-1, 1], summed in another order.
      const float tol = 1e-5f * static_cast<float>(c.k + 1) * (std::abs(c.alpha) + 1) + 1e-6f;
      ASSERT_NEAR(ours[at], theirs[at], tol)
          << c.ta << c.tb << " m=" << c.m << " n=" << c.n << " k=" << c.k << " alpha=" << c.alpha
          << " beta=" << c.beta << " pad=" << c.pad << " at (" << i << ", " << j << ")";
    }
}

TEST(GemmBackend, EverySgemmCallComputesWhatTheBlasComputes) {
  if (!on_onednn()) GTEST_SKIP() << "this build computes matrix products with the BLAS";
  ASSERT_NE(blas_sgemm(), nullptr) << "no BLAS sgemm_ behind ours";
  ASSERT_NE(process_sgemm(), blas_sgemm()) << "the process's sgemm_ is the BLAS's: not exported";
  std::mt19937 gen(7);
  for (const char ta : {'N', 'T', 'n', 't', 'C'})
    for (const char tb : {'N', 'T', 'c'})
      for (const auto& [m, n, k] : std::vector<std::array<int, 3>>{
               {64, 512, 784}, {10, 64, 256}, {1, 7, 3}, {5, 1, 9}, {3, 4, 1}, {17, 33, 65}})
        for (const int pad : {0, 3}) expect_same_as_blas({ta, tb, m, n, k, 1.f, 0.f, pad}, gen);
  // alpha and beta as addmm passes them, and the BLAS's special cases: beta 0 ignores what C
  // held, alpha 0 only scales C, empty shapes change nothing.
  for (const auto& c : std::vector<Case>{{'N', 'N', 8, 6, 5, 0.5f, 2.f, 1},
                                         {'T', 'N', 8, 6, 5, -1.f, 1.f, 0},
                                         {'N', 'T', 8, 6, 5, 0.f, 3.f, 2},
                                         {'N', 'N', 8, 6, 0, 1.f, 0.5f, 0},
                                         {'N', 'N', 8, 6, 0, 1.f, 0.f, 1},
                                         {'T', 'T', 8, 6, 5, 0.f, 0.f, 0},
                                         {'N', 'N', 0, 6, 5, 1.f, 0.f, 0},
                                         {'N', 'N', 8, 0, 5, 1.f, 0.f, 0}})
    expect_same_as_blas(c, gen);
}

TEST(GemmBackend, AlphaZeroReadsNeitherOperandAndBetaZeroOverwritesC) {
  if (!on_onednn()) GTEST_SKIP() << "this build computes matrix products with the BLAS";
  const float nan = std::nanf("");
  const int m = 3, n = 2, k = 4;
  const float alpha = 0.f, beta = 0.f;
  std::vector<float> a(m * k, nan), b(k * n, nan), c(m * n, nan);
  process_sgemm()("N", "N", &m, &n, &k, &alpha, a.data(), &m, b.data(), &k, &beta, c.data(), &m);
  for (const float x : c) EXPECT_EQ(x, 0.f);
}

TEST(GemmBackend, LibTorchMatrixProductsArriveAtOnednn) {
  if (!on_onednn()) GTEST_SKIP() << "this build computes matrix products with the BLAS";
  torch::manual_seed(3);
  const auto x = torch::randn({64, 784});
  torch::nn::Linear layer(784, 512);
  const auto before = ddpdesk::gemm_backend_calls();
  const auto y = layer->forward(x);
  y.sum().backward();
  // Forward x W^T, and backward dY W (input grad not needed: x needs none) and dY^T x.
  EXPECT_GE(ddpdesk::gemm_backend_calls() - before, 2u);
  // The same products in double precision (dgemm_, the BLAS's): float rounding apart, equal.
  const auto w = layer->weight.detach().to(torch::kDouble);
  const auto expected =
      torch::addmm(layer->bias.detach().to(torch::kDouble), x.to(torch::kDouble), w.t());
  EXPECT_TRUE(torch::allclose(y.detach().to(torch::kDouble), expected, 1e-5, 1e-5));
  const auto grad_expected = torch::ones({64, 512}, torch::kDouble).t().mm(x.to(torch::kDouble));
  EXPECT_TRUE(torch::allclose(layer->weight.grad().to(torch::kDouble), grad_expected, 1e-5, 1e-4));
}

}  // namespace
