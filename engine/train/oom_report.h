// The one line a rank fails with after an out-of-memory in training: which rank, in which
// micro-batch of which step, the GPU allocator's peak where there is one, and what became of the
// last good step's checkpoint. Plain text, no LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddpdesk {

struct OomReport {
  int rank = 0;
  std::int64_t micro = 0;  // samples of the micro-batch; 0: the error came outside a forward or
                           // backward (the optimizer, validation): no checkpoint is claimed
  std::int64_t step = 1;   // the optimizer step being trained (1-based)
  std::optional<std::int64_t> peak;  // bytes: the allocator's peak (CUDA only)
  std::string checkpoint;            // what became of the checkpoint: "checkpoint of step 11
                                     // written", "no checkpoint (no --run-dir)", ...
  bool fit_batch = false;            // the run already fitted its micro-batch
};

// "7.9 GiB", "512 MiB": bytes as a person reads them.
std::string memory_text(std::int64_t bytes);

// "out of memory on rank 1 in a micro-batch of 64 samples (step 12); checkpoint of step 11
// written; try --fit-batch or a smaller --batch-size"
std::string oom_line(const OomReport& r);

}  // namespace ddpdesk
