// What Slurm says about a job, parsed from its tools' text (pure functions, no I/O):
//   squeue -h -j ID -O 'State:0|,Reason:0|,NodeList:0|,RestartCnt:0'
//                                         while the job is in the queue (pending/running)
//   scontrol show job ID                  after it left the queue, while slurmctld remembers it
//                                         (MinJobAge, 300 s by default)
//   sacct -n -X -P -j ID -o State,ExitCode,NodeList   from accounting (needs slurmdbd)
#pragma once

#include <QString>
#include <optional>
#include <vector>

namespace ddpdesk {

struct SlurmJobStatus {
  enum class State { Pending, Running, Completed, Failed, Cancelled, TimedOut };
  State state = State::Pending;
  QString slurmState;  // Slurm's own word: PENDING, RUNNING, COMPLETING, NODE_FAIL, ...
  QString reason;      // why it is pending (Resources, Priority, ...); empty or "None" otherwise
  QString nodes;       // the node list (compressed, as Slurm prints it)
  QString exitCode;    // "0:0" (code:signal) once it ended, when the tool says
  int restarts =
      -1;  // times Slurm requeued it (squeue's RestartCnt, scontrol's Restarts); -1: not said
  bool ended() const { return state != State::Pending && state != State::Running; }
};

// Slurm's state word (any case; "CANCELLED by 0" and "CANCELLED+" as sacct prints them) to ours:
// PENDING, CONFIGURING, REQUEUED, ... -> Pending; RUNNING, COMPLETING, SUSPENDED, ... ->
// Running; COMPLETED; CANCELLED; TIMEOUT -> TimedOut; FAILED, NODE_FAIL, OUT_OF_MEMORY,
// BOOT_FAIL, DEADLINE, PREEMPTED and anything unknown -> Failed. nullopt for an empty word.
std::optional<SlurmJobStatus::State> mapSlurmState(const QString& word);
// "pending", "running", "completed", "failed", "cancelled", "timed out".
QString slurmStateName(SlurmJobStatus::State s);
// One line for people: "pending (Resources)", "pending (launch failed requeued held)", "running
// on node[1-2]", "failed (exit 1:0)". A held job (JobHeldUser, JobHeldAdmin, "job requeued in
// held state", "launch failed requeued held") is pending with Slurm's reason, which says so.
QString describeSlurmStatus(const SlurmJobStatus& s);

// Whether the job's exit code is that of ranks ended by a stop signal: 143 / 130 (a shell's or
// Python's 128 + SIGTERM / SIGINT) or the signal itself (":15", ":2"). A script without the
// client ends so on a stop, as under torchrun; the job is then "failed" with that code.
bool endedByStopSignal(const SlurmJobStatus& s);

// nullopt when the text holds no job (empty: squeue no longer lists it).
std::optional<SlurmJobStatus> parseSqueue(const QString& text);
std::optional<SlurmJobStatus> parseScontrolJob(const QString& text);
std::optional<SlurmJobStatus> parseSacct(const QString& text);

// srun's word on a task that went wrong, from the batch job's output:
//   "srun: error: node7: task 1: Exited with exit code 3" / "...: task 0: Killed"
// The first such line (srun reports the task that failed first, when the tasks end at different
// moments), nullopt when there is none.
struct SrunTaskError {
  QString node;
  int task = -1;
  QString what;  // "Exited with exit code 3", "Killed", "Segmentation fault"
};
// Every single-task error line srun wrote in the job's output, in order.
std::vector<SrunTaskError> srunTaskErrors(const QString& batchOutput);
std::optional<SrunTaskError> firstSrunTaskError(const QString& batchOutput);
// The task srun's lines name as the cause. srun reports tasks that ended within one moment in
// task order, not in the order they failed, so with workerRanks (ddpdesk-worker ranks, whose exit
// 3 is an out-of-memory and whose peers then exit 1, the rank gone) the first task that exited
// with code 3 is the cause, before the first line; else the first line.
std::optional<SrunTaskError> causeSrunTaskError(const QString& batchOutput, bool workerRanks);

}  // namespace ddpdesk
