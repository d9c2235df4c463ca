// A JSONL file's path in the temporary directory for one test, named by the test and this
// process, removed before and after (the telemetry tests' metrics files).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace ddpdesk::test {

struct TempJsonl {
  std::filesystem::path path;
  explicit TempJsonl(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("ddpdesk-" + name + "-" + std::to_string(::getpid()) + ".jsonl")) {
    std::filesystem::remove(path);
  }
  ~TempJsonl() { std::filesystem::remove(path); }
  TempJsonl(const TempJsonl&) = delete;
  TempJsonl& operator=(const TempJsonl&) = delete;
};

}  // namespace ddpdesk::test
