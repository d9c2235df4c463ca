// Fashion-MNIST from Debian's dataset-fashion-mnist: gzip'd idx files, read with zlib. The whole
// split is decoded once into a [N, 1, 28, 28] float tensor (188 MB for train), so batch() is one
// index_select and never touches the files again.
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "dataset.h"

namespace ddpdesk {

namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr int kSide = 28;
constexpr float kMean = 0.2860f;  // of the training images scaled to [0, 1]
constexpr float kStd = 0.3530f;

// Owns a gzFile and knows its path, so every error names the file.
class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      throw std::runtime_error(fmnist_not_found(path_));
    }
    file_ = gzopen(path_.c_str(), "rb");
    if (file_ == nullptr) throw std::runtime_error("cannot open Fashion-MNIST file " + path_);
    gzbuffer(file_, 1 << 18);
  }
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  void fail(const std::string& what) const {
    throw std::runtime_error("malformed Fashion-MNIST file " + path_ + ": " + what);
  }

  // Reads exactly `n` bytes (gzread takes an unsigned int count, so large reads go in chunks).
  void read(void* dst, std::size_t n) {
    auto* p = static_cast<unsigned char*>(dst);
    while (n > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
      const int got = gzread(file_, p, chunk);
      if (got < 0) {
        int err = 0;
        fail(std::string("read error: ") + gzerror(file_, &err));
      }
      if (got == 0) fail("unexpected end of file");
      p += got;
      n -= static_cast<std::size_t>(got);
    }
  }

  std::uint32_t read_be32() {
    std::array<unsigned char, 4> b{};
    read(b.data(), b.size());
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

class FmnistDataset final : public Dataset {
 public:
  FmnistDataset(const std::string& dir, const std::string& split, std::int64_t limit) {
    if (split != "train" && split != "t10k") {
      throw std::invalid_argument("Fashion-MNIST split must be \"train\" or \"t10k\", got \"" +
                                  split + "\"");
    }
    const std::string image_path = fmnist_file(dir, split, "images");
    const std::string label_path = fmnist_file(dir, split, "labels");
    GzReader images(image_path);
    GzReader labels(label_path);

    if (images.read_be32() != kImagesMagic) images.fail("bad magic number (not idx3 ubyte)");
    const std::int64_t count = images.read_be32();
    // Guards the allocation below against a corrupt header (the real files hold 60000 / 10000).
    if (count > (1 << 24)) images.fail("implausible image count " + std::to_string(count));
    if (images.read_be32() != kSide || images.read_be32() != kSide) images.fail("images not 28x28");
    if (labels.read_be32() != kLabelsMagic) labels.fail("bad magic number (not idx1 ubyte)");
    if (labels.read_be32() != count) labels.fail("label count differs from " + image_path);

    n_ = (limit > 0 && limit < count) ? limit : count;
    auto raw = torch::empty({n_, 1, kSide, kSide}, torch::kUInt8);
    images.read(raw.data_ptr<std::uint8_t>(), static_cast<std::size_t>(raw.numel()));
    images_ = raw.to(torch::kFloat).div_(255.0f).sub_(kMean).div_(kStd);

    auto raw_labels = torch::empty({n_}, torch::kUInt8);
    labels.read(raw_labels.data_ptr<std::uint8_t>(), static_cast<std::size_t>(n_));
    if (n_ > 0 && raw_labels.max().item<int>() > 9) labels.fail("label outside 0..9");
    labels_ = raw_labels.to(torch::kLong);
  }

  std::int64_t size() const override { return n_; }

  Batch batch(const std::vector<std::int64_t>& indices) const override {
    for (std::int64_t j : indices) {
      if (j < 0 || j >= n_) {
        throw std::out_of_range("Fashion-MNIST: index " + std::to_string(j) + " outside [0, " +
                                std::to_string(n_) + ")");
      }
    }
    const auto b = static_cast<std::int64_t>(indices.size());
    // index_select copies, so viewing the caller's vector without a copy is safe.
    const auto idx = torch::from_blob(const_cast<std::int64_t*>(indices.data()), {b}, torch::kLong);
    Batch out;
    out.size = b;
    out.input = images_.index_select(0, idx);
    out.target = labels_.index_select(0, idx);
    return out;
  }

  std::optional<Batch> whole() const override {
    Batch all;
    all.input = images_;
    all.target = labels_;
    all.size = n_;
    return all;
  }

 private:
  std::int64_t n_ = 0;
  torch::Tensor images_;  // [N, 1, 28, 28] float, normalised
  torch::Tensor labels_;  // [N] int64
};

}  // namespace

std::unique_ptr<Dataset> make_fmnist_dataset(const std::string& dir, const std::string& split,
                                             std::int64_t limit) {
  return std::make_unique<FmnistDataset>(dir, split, limit);
}

}  // namespace ddpdesk
