// The seed task's generated data (deterministic, shaped like the seed's) and Fashion-MNIST from
// Debian's idx files (sizes, labels, normalisation, errors).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include <torch/torch.h>

#include "dataset.h"

namespace {

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

bool same_batch(const ddpdesk::Batch& a, const ddpdesk::Batch& b) {
  return a.size == b.size && torch::equal(a.input, b.input) && torch::equal(a.target, b.target) &&
         a.lengths.defined() == b.lengths.defined() &&
         (!a.lengths.defined() || torch::equal(a.lengths, b.lengths));
}

// ---- seed task --------------------------------------------------------------------------------

TEST(SeedDataset, DeterministicPerSeed) {
  const auto a = ddpdesk::make_seed_dataset(900, 3)->batch(iota(900));
  const auto b = ddpdesk::make_seed_dataset(900, 3)->batch(iota(900));
  const auto c = ddpdesk::make_seed_dataset(900, 4)->batch(iota(900));
  EXPECT_TRUE(same_batch(a, b));
  EXPECT_FALSE(torch::equal(a.lengths, c.lengths));
}

TEST(SeedDataset, ShapesLengthsAndTargets) {
  const auto ds = ddpdesk::make_seed_dataset(900, 0);
  ASSERT_EQ(ds->size(), 900);
  const auto b = ds->batch(iota(900));
  ASSERT_EQ(b.size, 900);
  EXPECT_EQ(b.lengths.scalar_type(), torch::kLong);
  EXPECT_EQ(b.input.scalar_type(), torch::kFloat);
  EXPECT_EQ(b.input.size(0), b.lengths.sum().item<std::int64_t>());
  EXPECT_EQ(b.input.size(1), 10);
  EXPECT_TRUE(torch::equal(b.lengths.remainder(11), torch::zeros({900}, torch::kLong)));
  EXPECT_GE(b.lengths.min().item<std::int64_t>(), 0);
  EXPECT_LE(b.lengths.max().item<std::int64_t>(), 99);
  // k uniform in 0..9: every length occurs, empty samples included (~90 of 900).
  const auto counts = torch::bincount(b.lengths.div(11, "floor"), {}, 10);
  EXPECT_GT(counts.min().item<std::int64_t>(), 50) << counts;
  EXPECT_TRUE(torch::equal(b.target, torch::arange(900, torch::kFloat)));
}

TEST(SeedDataset, RowsAreIndexPlusOneSharedStandardNormalVector) {
  const auto ds = ddpdesk::make_seed_dataset(900, 1);
  std::vector<torch::Tensor> noise;
  for (std::int64_t i = 0; i < 900; ++i) {
    const auto b = ds->batch({i});
    if (b.input.size(0) == 0) continue;
    // Like the seed: every row of a sample is the same vector.
    EXPECT_TRUE(torch::equal(b.input, b.input[0].expand_as(b.input))) << "sample " << i;
    noise.push_back(b.input[0].to(torch::kDouble) - static_cast<double>(i));
  }
  const auto all = torch::stack(noise);
  EXPECT_NEAR(all.mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(all.std().item<double>(), 1.0, 0.05);
}

TEST(SeedDataset, BatchOfAnyIndicesIsTheConcatenationOfSamples) {
  const auto ds = ddpdesk::make_seed_dataset(50, 9);
  const std::vector<std::int64_t> idx = {7, 3, 3, 49, 0, 21, 7};
  std::vector<torch::Tensor> inputs, lengths, targets;
  for (std::int64_t i : idx) {
    const auto one = ds->batch({i});
    inputs.push_back(one.input);
    lengths.push_back(one.lengths);
    targets.push_back(one.target);
  }
  const auto b = ds->batch(idx);
  EXPECT_EQ(b.size, 7);
  EXPECT_TRUE(torch::equal(b.input, torch::cat(inputs)));
  EXPECT_TRUE(torch::equal(b.lengths, torch::cat(lengths)));
  EXPECT_TRUE(torch::equal(b.target, torch::cat(targets)));
  EXPECT_EQ(ds->batch({}).size, 0);
  EXPECT_THROW(ds->batch({50}), std::out_of_range);
  EXPECT_THROW(ds->batch({-1}), std::out_of_range);
}

TEST(SeedDataset, OffsetSplitIsTheSameSamples) {
  // A validation set [900, 1000) holds exactly samples 900.. of a bigger set with the same seed.
  const auto full = ddpdesk::make_seed_dataset(1000, 5);
  const auto valid = ddpdesk::make_seed_dataset(100, 5, 900);
  std::vector<std::int64_t> shifted = iota(100);
  for (auto& i : shifted) i += 900;
  EXPECT_TRUE(same_batch(valid->batch(iota(100)), full->batch(shifted)));
}

// ---- Fashion-MNIST ----------------------------------------------------------------------------

bool have_fmnist() {
  struct stat st {};
  return ::stat((std::string(ddpdesk::kSystemFmnistDir) + "/train-images-idx3-ubyte.gz").c_str(),
                &st) == 0;
}

#define REQUIRE_FMNIST() \
  if (!have_fmnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed"

TEST(FmnistDataset, LoadsBothSplits) {
  REQUIRE_FMNIST();
  const auto train = ddpdesk::make_fmnist_dataset(std::string(ddpdesk::kSystemFmnistDir), "train");
  const auto test = ddpdesk::make_fmnist_dataset(std::string(ddpdesk::kSystemFmnistDir), "t10k");
  ASSERT_EQ(train->size(), 60000);
  ASSERT_EQ(test->size(), 10000);
  const auto b = train->batch(iota(60000));
  EXPECT_EQ(b.input.sizes(), (std::vector<std::int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(b.input.scalar_type(), torch::kFloat);
  EXPECT_EQ(b.target.scalar_type(), torch::kLong);
  EXPECT_FALSE(b.lengths.defined());
  // Labels 0..9, balanced: 6000 of each class in the training split.
  EXPECT_TRUE(
      torch::equal(torch::bincount(b.target, {}, 10), torch::full({10}, 6000, torch::kLong)));
  // Normalised with the training set's mean and std.
  const auto first = b.input.slice(0, 0, 10000).to(torch::kDouble);
  EXPECT_NEAR(first.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(first.std().item<double>(), 1.0, 0.02);
  EXPECT_NEAR(b.input.min().item<float>(), -0.2860f / 0.3530f, 1e-5);
}

TEST(FmnistDataset, LimitKeepsTheFirstImages) {
  REQUIRE_FMNIST();
  const auto dir = std::string(ddpdesk::kSystemFmnistDir);
  const auto small = ddpdesk::make_fmnist_dataset(dir, "t10k", 100);
  ASSERT_EQ(small->size(), 100);
  const auto full = ddpdesk::make_fmnist_dataset(dir, "t10k");
  const std::vector<std::int64_t> idx = {99, 0, 42, 42};
  EXPECT_TRUE(same_batch(small->batch(idx), full->batch(idx)));
  EXPECT_THROW(small->batch({100}), std::out_of_range);
}

std::string error_of(const std::string& dir, const std::string& split = "train") {
  try {
    ddpdesk::make_fmnist_dataset(dir, split);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(FmnistDataset, MissingDirectoryNamesThePathAndThePackage) {
  const std::string msg = error_of("/nonexistent/fmnist");
  EXPECT_NE(msg.find("/nonexistent/fmnist/train-images-idx3-ubyte.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
  // An unknown split is refused before any file is touched, naming what is allowed.
  EXPECT_NE(error_of("/nonexistent", "test").find("t10k"), std::string::npos);
}

TEST(FmnistDataset, MalformedFileNamesTheFile) {
  // zlib reads a file that is not gzip'd as is, so plain bytes make a (broken) idx file.
  // Under TMPDIR, removed however the test ends.
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ddpdesk-fmnist-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_at_end{dir};
  const std::string images = dir + "/train-images-idx3-ubyte.gz";
  const std::string labels = dir + "/train-labels-idx1-ubyte.gz";
  std::ofstream(images, std::ios::binary) << std::string("\0\0\x08\x04\0\0\0\x01", 8);
  std::ofstream(labels, std::ios::binary) << std::string("\0\0\x08\x01\0\0\0\x01\x03", 9);
  std::string msg = error_of(dir);
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  // Right magic, but the file ends inside the header.
  std::ofstream(images, std::ios::binary) << std::string("\0\0\x08\x03\0\0\0\x01\0\0", 10);
  msg = error_of(dir);
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("end of file"), std::string::npos) << msg;
}

}  // namespace
