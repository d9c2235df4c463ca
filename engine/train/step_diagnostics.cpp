#include "step_diagnostics.h"

#include <cstdio>

namespace ddpdesk {

std::string hash_tensors(const std::vector<torch::Tensor>& tensors) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a's offset basis
  for (const auto& t : tensors) {
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    for (std::int64_t i = 0, n = c.numel() * c.element_size(); i < n; ++i) {
      h ^= bytes[i];
      h *= 1099511628211ULL;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string hash_tensors(const std::vector<NamedTensor>& tensors) {
  std::vector<torch::Tensor> t;
  for (const auto& n : tensors) t.push_back(n.tensor);
  return hash_tensors(t);
}

std::uint64_t step_seed(std::int64_t seed, int rank, std::int64_t step) {
  std::uint64_t x = static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ULL ^
                    (static_cast<std::uint64_t>(rank) << 32) ^ static_cast<std::uint64_t>(step);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;  // splitmix64's finaliser
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace ddpdesk
