// A rank's own account of how it ended, written into the run directory as it exits:
//   <run_dir>/rank-<N>.exit.json
// The monitor's status.json says how the run ended when a monitor saw the end; these records say
// it when nobody did (the monitor was killed, or the ranks ran under torchrun or Slurm). A rank
// killed with SIGKILL writes nothing: the others' records name it. Written atomically (temporary
// file, fsync, rename) so a reader never sees half a record. Plain C++, no LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddpdesk {

// What ddpdesk-worker exits with, besides 0 (finished or stopped) and 1 (failed): input it
// refuses, and a failure because it ran out of memory (the same micro-batch would again; a
// restart does not help without --fit-batch: ui/monitor/run/restart_policy.h).
constexpr int kExitBadInput = 2;
constexpr int kExitOutOfMemory = 3;

struct ExitRecord {
  int rank = 0;
  int world = 1;
  long pid = 0;
  std::string host;
  std::string outcome;        // "finished", "stopped" or "failed"
  int exit_code = 0;          // what the process exits with
  std::string reason;         // one line: why it stopped or failed; empty when finished
  std::int64_t step = 0;      // optimizer steps done when it ended
  int epoch = 0;              // 0-based, as the worker counts
  std::string checkpoint;     // the last checkpoint this rank wrote (rank 0), else empty
  std::string stop_signal;    // "SIGTERM" or "SIGINT" when a signal asked for the stop
  bool monitor_gone = false;  // started by a monitor that had died by the time the rank exited
  // Messages for the monitor's socket that were dropped, not sent: its queue was full (a monitor
  // that does not read), or still held them when the rank closed it. The metrics file has them.
  std::int64_t monitor_dropped = 0;
};

std::string exit_record_path(const std::string& run_dir, int rank);

// Writes the record atomically; on failure returns false and says why in *error.
bool write_exit_record(const std::string& run_dir, const ExitRecord& record,
                       std::string* error = nullptr);
// Removes a record left by an earlier run in the same directory (a resume), so a rank that dies
// this time is not reported with last time's ending.
void remove_exit_record(const std::string& run_dir, int rank);
// Reads a record back; nullopt if absent or not a valid record.
std::optional<ExitRecord> read_exit_record(const std::string& path);

}  // namespace ddpdesk
