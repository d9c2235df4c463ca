// The lines a rank prints for people and scripts: rank 0's progress line on stderr and its
// machine-readable summary on stdout (benchmarks parse it). Formatting only.
#pragma once

#include <cstdint>
#include <string>

namespace ddpdesk {

struct ProgressFigures {
  std::int64_t epoch = 0;  // 0-based
  int epochs = 0;
  std::int64_t step = 0, total_steps = 0;
  double loss = 0, global_loss = 0, samples_per_s = 0;
};
std::string progress_line(const ProgressFigures& p);

struct SummaryFigures {
  std::string task, device;
  int world = 1, batch = 0, accum = 0, epochs = 0;
  std::string comm;  // the collective used (gloo, shm, nccl, none); empty: not named
  std::int64_t steps = 0;
  std::int64_t trained_samples = 0;  // by this process (a resumed run's earlier part excluded)
  double train_seconds = 0;          // this process's time in training windows
  double final_loss = 0;
  bool has_eval = false;  // a run without validation data has no figures to show
  double eval_loss = 0;
  double accuracy = -1;  // -1: not a classification task
};
// "ddpdesk-worker task=... samples_per_s=... final_loss=... [eval_loss=... [test_acc=...]]"
std::string summary_line(const SummaryFigures& s);

}  // namespace ddpdesk
