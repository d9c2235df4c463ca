// What a run directory holds, by name: the one place its file names are written, shared by the
// worker (which writes checkpoints, its metrics file and its exit record) and the monitor (which
// writes the rest and reads everything). Plain C++; the monitor wraps these in QString
// (ui/monitor/run/run_directory.h). The Python client (python/ddpdesk) and the remote follow
// script (ssh/remote_follow_script.cpp) spell metrics/rank-N.jsonl and rank-N.log themselves.
//
//   <dir>/spec.json                 the RunSpec the ranks were started with
//   <dir>/metrics.jsonl             every wire message the monitor accepted
//   <dir>/status.json               how the run ended
//   <dir>/monitor.log               what the monitor saw and did
//   <dir>/rank-N.log                rank N's output
//   <dir>/rank-N.exit.json          how rank N ended, by itself
//   <dir>/metrics/rank-N.jsonl      rank N's own messages (followed runs read these)
//   <dir>/metrics/system.jsonl      the system metrics a script run's monitor sampled for its
//                                   ranks (gauges of every rank; followed runs read it too)
//   <dir>/checkpoints/step-NNNNNNNN.pt   rank 0's checkpoints
#pragma once

#include <cstdint>
#include <string>

namespace ddpdesk::run_layout {

std::string spec_file(const std::string& dir);
std::string metrics_file(const std::string& dir);
std::string status_file(const std::string& dir);
std::string monitor_log(const std::string& dir);
std::string rank_log(const std::string& dir, int rank);
std::string exit_record(const std::string& dir, int rank);
std::string rank_metrics_dir(const std::string& dir);
std::string rank_metrics(const std::string& dir, int rank);
std::string system_metrics(const std::string& dir);
std::string checkpoints_dir(const std::string& dir);
// step-00000120.pt: zero-padded, so names sort by step.
std::string checkpoint_name(std::int64_t step);
// Whether a file name in checkpoints/ is a checkpoint (not a torn .tmp-* or anything else).
bool is_checkpoint_name(const std::string& name);

}  // namespace ddpdesk::run_layout
