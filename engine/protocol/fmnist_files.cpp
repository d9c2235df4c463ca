// The Fashion-MNIST file rule (fmnist_files.h).
#include "fmnist_files.h"

#include <sys/stat.h>

namespace ddpdesk {

bool uses_fmnist(const RunSpec& spec) {
  return spec.task.rfind("fmnist-", 0) == 0;
}

std::string fmnist_file(const std::string& dir, const std::string& split, const std::string& kind) {
  const std::string base = dir.empty() ? kSystemFmnistDir : dir;
  const std::string name =
      split + "-" + kind + (kind == "images" ? "-idx3-ubyte.gz" : "-idx1-ubyte.gz");
  return base.back() == '/' ? base + name : base + "/" + name;
}

std::string fmnist_not_found(const std::string& path) {
  return "Fashion-MNIST file not found: " + path +
         " (install dataset-fashion-mnist, or set DDPDESK_FMNIST_DIR)";
}

std::string fmnist_missing(const std::string& dir) {
  for (const char* split : {"train", "t10k"})
    for (const char* kind : {"images", "labels"}) {
      const std::string path = fmnist_file(dir, split, kind);
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return fmnist_not_found(path);
    }
  return {};
}

}  // namespace ddpdesk
