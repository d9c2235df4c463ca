// Epoch cutting: micro-batches and accumulation windows, including short last ones.
#include <gtest/gtest.h>

#include "window_plan.h"

using ddpdesk::WindowPlan;

TEST(WindowPlan, EvenSplit) {
  WindowPlan p{480, 4, 2};
  EXPECT_EQ(p.micro_batches(), 120);
  EXPECT_EQ(p.windows(), 60);
  EXPECT_EQ(p.window_samples(0), 8);
  EXPECT_EQ(p.window_samples(59), 8);
}

TEST(WindowPlan, ShortLastMicroBatchAndWindow) {
  WindowPlan p{50, 4, 4};  // 13 micro-batches, the last holding 2; 4 windows, the last with 1
  EXPECT_EQ(p.micro_batches(), 13);
  EXPECT_EQ(p.windows(), 4);
  EXPECT_EQ(p.first_micro(3), 12);
  EXPECT_EQ(p.end_micro(3), 13);
  EXPECT_EQ(p.micro_end(12), 50);
  EXPECT_EQ(p.window_samples(2), 16);
  EXPECT_EQ(p.window_samples(3), 2);
  std::int64_t total = 0;
  for (std::int64_t w = 0; w < p.windows(); ++w) total += p.window_samples(w);
  EXPECT_EQ(total, 50);
}

TEST(WindowPlan, SamplesAddUpForManyShapes) {
  for (std::int64_t n : {1, 7, 100, 999})
    for (std::int64_t b : {1, 3, 64})
      for (std::int64_t a : {1, 2, 5}) {
        WindowPlan p{n, b, a};
        std::int64_t total = 0;
        for (std::int64_t w = 0; w < p.windows(); ++w) {
          EXPECT_GT(p.window_samples(w), 0);
          total += p.window_samples(w);
        }
        EXPECT_EQ(total, n) << n << " " << b << " " << a;
      }
}
