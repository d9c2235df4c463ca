// The seed task's data, made reproducible. The seed script draws every sample's length and noise
// from the global RNG inside __getitem__, so no two runs (or ranks) see the same data; here sample
// i is a pure function of (seed, i), using our own splitmix64 + Box-Muller so the values do not
// depend on the platform's <random> implementation or on LibTorch's RNG.
//
// Like the seed, all rows of one sample are identical (i + one noise vector of 10 values), so we
// precompute just that row and the length per sample: 44 bytes per sample instead of up to 99
// rows, and batch() is then nothing but memcpy's (the seed step is ~0.1 ms; collation must not
// dominate it).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dataset.h"

namespace ddpdesk {

namespace {

constexpr int kCols = 10;
constexpr int kRowsPerUnit = 11;  // lengths are 11 * k, k in [0, 9]
constexpr int kMaxUnits = 9;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A per-sample stream: seeds that differ in one bit, or neighbouring i, give unrelated streams.
std::uint64_t sample_state(std::int64_t seed, std::int64_t i) {
  std::uint64_t s = static_cast<std::uint64_t>(seed);
  std::uint64_t h = splitmix64(s);
  std::uint64_t t = h ^ static_cast<std::uint64_t>(i);
  return splitmix64(t);
}

// Uniform in (0, 1] (never 0, so log() is finite) and [0, 1), from the top 53 bits.
double uniform_open0(std::uint64_t& st) {
  return ((splitmix64(st) >> 11) + 1) * 0x1.0p-53;
}
double uniform_open1(std::uint64_t& st) {
  return (splitmix64(st) >> 11) * 0x1.0p-53;
}

std::int64_t checked_size(std::int64_t n) {
  if (n < 0) throw std::invalid_argument("seed dataset: negative size " + std::to_string(n));
  return n;
}

class SeedDataset final : public Dataset {
 public:
  SeedDataset(std::int64_t n, std::int64_t seed, std::int64_t first)
      : n_(checked_size(n)),
        first_(first),
        rows_(static_cast<std::size_t>(n) * kCols),
        lengths_(static_cast<std::size_t>(n)) {
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t i = first + j;
      std::uint64_t st = sample_state(seed, i);
      // 2^64 % 10 / 2^64 ~ 1e-19: the modulo bias is irrelevant.
      lengths_[j] = static_cast<std::uint8_t>(kRowsPerUnit * (splitmix64(st) % (kMaxUnits + 1)));
      float* row = &rows_[static_cast<std::size_t>(j) * kCols];
      for (int c = 0; c < kCols; c += 2) {  // Box-Muller gives normals in pairs
        const double r = std::sqrt(-2.0 * std::log(uniform_open0(st)));
        const double a = kTwoPi * uniform_open1(st);
        row[c] = static_cast<float>(static_cast<double>(i) + r * std::cos(a));
        row[c + 1] = static_cast<float>(static_cast<double>(i) + r * std::sin(a));
      }
    }
  }

  std::int64_t size() const override { return n_; }

  Batch batch(const std::vector<std::int64_t>& indices) const override {
    const auto b = static_cast<std::int64_t>(indices.size());
    Batch out;
    out.size = b;
    out.lengths = torch::empty({b}, torch::kLong);
    out.target = torch::empty({b}, torch::kFloat);
    auto* len = out.lengths.data_ptr<std::int64_t>();
    auto* tgt = out.target.data_ptr<float>();
    std::int64_t total = 0;
    for (std::int64_t k = 0; k < b; ++k) {
      const std::int64_t j = indices[k];
      if (j < 0 || j >= n_) {
        throw std::out_of_range("seed dataset: index " + std::to_string(j) + " outside [0, " +
                                std::to_string(n_) + ")");
      }
      len[k] = lengths_[j];
      tgt[k] = static_cast<float>(first_ + j);
      total += len[k];
    }
    out.input = torch::empty({total, kCols}, torch::kFloat);
    char* dst = reinterpret_cast<char*>(out.input.data_ptr<float>());
    constexpr std::size_t kRowBytes = kCols * sizeof(float);
    for (std::int64_t k = 0; k < b; ++k) {
      const std::size_t rows = static_cast<std::size_t>(len[k]);
      if (rows == 0) continue;
      // One row, then double the filled span: ~log2(99) memcpy's per sample.
      std::memcpy(dst, &rows_[static_cast<std::size_t>(indices[k]) * kCols], kRowBytes);
      for (std::size_t done = 1; done < rows;) {
        const std::size_t step = std::min(done, rows - done);
        std::memcpy(dst + done * kRowBytes, dst, step * kRowBytes);
        done += step;
      }
      dst += rows * kRowBytes;
    }
    return out;
  }

 private:
  std::int64_t n_;
  std::int64_t first_;
  std::vector<float> rows_;            // [n, 10]: the row every row of sample j repeats
  std::vector<std::uint8_t> lengths_;  // [n]: rows of sample j (0..99)
};

}  // namespace

std::unique_ptr<Dataset> make_seed_dataset(std::int64_t n, std::int64_t seed, std::int64_t first) {
  return std::make_unique<SeedDataset>(n, seed, first);
}

}  // namespace ddpdesk
