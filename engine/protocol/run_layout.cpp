// The run directory's file names (run_layout.h).
#include "run_layout.h"

#include <cstdio>

namespace ddpdesk::run_layout {
namespace {

std::string in(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}
std::string ranked(const char* prefix, int rank, const char* suffix) {
  return prefix + std::to_string(rank) + suffix;
}

}  // namespace

std::string spec_file(const std::string& dir) {
  return in(dir, "spec.json");
}
std::string metrics_file(const std::string& dir) {
  return in(dir, "metrics.jsonl");
}
std::string status_file(const std::string& dir) {
  return in(dir, "status.json");
}
std::string monitor_log(const std::string& dir) {
  return in(dir, "monitor.log");
}
std::string rank_log(const std::string& dir, int rank) {
  return in(dir, ranked("rank-", rank, ".log"));
}
std::string exit_record(const std::string& dir, int rank) {
  return in(dir, ranked("rank-", rank, ".exit.json"));
}
std::string rank_metrics_dir(const std::string& dir) {
  return in(dir, "metrics");
}
std::string rank_metrics(const std::string& dir, int rank) {
  return in(rank_metrics_dir(dir), ranked("rank-", rank, ".jsonl"));
}
std::string system_metrics(const std::string& dir) {
  return in(rank_metrics_dir(dir), "system.jsonl");
}
std::string checkpoints_dir(const std::string& dir) {
  return in(dir, "checkpoints");
}

std::string checkpoint_name(std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%08lld.pt", static_cast<long long>(step));
  return name;
}

bool is_checkpoint_name(const std::string& name) {
  return name.size() > 8 && name.rfind("step-", 0) == 0 &&
         name.compare(name.size() - 3, 3, ".pt") == 0;
}

}  // namespace ddpdesk::run_layout
