// Test helper: starts the ranks of one real ddpdesk-worker run the way torchrun would (env
// contract, free port), waits with a deadline, and kills every rank if it passes. Torch-free.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exit_record.h"

namespace ddpdesk::test {

struct RankRun {
  std::vector<int> exit_codes;  // per rank: exit status, or 128 + signal
  std::vector<int> pids;
  // per rank: when its exit was reaped (polled every 10 ms), on the steady clock
  std::vector<std::chrono::steady_clock::time_point> exited_at;
  std::vector<std::string> stderr_text;
  std::vector<std::string> stdout_text;
  bool timed_out = false;
};

struct LaunchOptions {
  int world = 1;
  std::vector<std::string> args;           // "{rank}" in an argument becomes the rank
  std::map<std::string, std::string> env;  // added to the environment
  // false: none of torchrun's variables (RANK, WORLD_SIZE, MASTER_*, ...) are set, so `env`
  // alone says where each rank sits (a Slurm-shaped environment, say).
  bool torchrun_env = true;
  double timeout_s = 240;
  // Optional: called once per 10 ms while ranks run; return true to stop polling it.
  std::function<bool(const std::vector<int>& pids)> while_running;
};

std::string worker_path();
std::string temp_dir(const std::string& tag);  // fresh directory under the test's tmp
int free_port();
RankRun launch_ranks(const LaunchOptions& o);

// A run that should succeed, and every rank's step messages: `o` launched with a metrics file
// per rank (--metrics-file added to its args, in a fresh temp_dir(tag)). `failed` says what went
// wrong (a timeout, a rank's exit code and its stderr), empty when every rank exited 0.
struct RunSteps {
  std::vector<std::vector<nlohmann::json>> steps;  // per rank, in order
  std::string failed;
};
RunSteps run_steps(LaunchOptions o, const std::string& tag);

// Messages of one type from a JSONL metrics file, in order.
std::vector<nlohmann::json> read_messages(const std::string& path, const std::string& type);
// The highest optimizer step in a metrics file so far (0 when none); safe on a growing file.
std::int64_t last_step(const std::string& path);
bool process_alive(int pid);
// What rank `rank` wrote into `run_dir` as it exited (nullopt: nothing, e.g. it was killed).
std::optional<ExitRecord> exit_record(const std::string& run_dir, int rank);

}  // namespace ddpdesk::test
