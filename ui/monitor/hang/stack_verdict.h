// The hang doctor's verdict: where each rank of a stalled run is, read from its stacks, and which
// rank(s) the others wait for. Pure functions over stack texts (the native ones gdb or eu-stack
// print, the Python ones faulthandler writes), so every rule is unit-tested with stack texts.
//
// A rank's phase comes from its main thread (the thread whose id is the process's pid; in a
// Python dump the thread that runs the script's <module>), else from its other threads, and for a
// Python rank from both its native and its Python stacks. Within a stack, the phases rank
//   collective  >  data loading  >  checkpoint writing  >  compute  >  unknown
// (a wait in a collective is always what a stack is doing at the moment it was taken; data
// loading and checkpoint writing run tensor operations that would otherwise read as compute).
// The patterns for each phase are the table in stack_verdict.cpp: ddpdesk's communicators and
// gradient sync, Gloo, NCCL and torch.distributed for collectives; the engine's data sets, sampler
// and batches, torch.utils.data's DataLoader and a dataset's __getitem__ for data loading; the
// engine's checkpoint writer and torch.save for checkpoints; autograd, ATen kernels, forward and
// backward for compute.
//
// The verdict names the odd ranks out: "rank 1 is in its data loading; rank 0 waits for it in an
// allreduce". Ranks are written as ranges ("ranks 0-2 and 4-7").
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <vector>

namespace ddpdesk {

enum class StackPhase { Unknown, Compute, Checkpoint, DataLoading, Collective };

struct PhaseReading {
  StackPhase phase = StackPhase::Unknown;
  // For a collective: which one ("allreduce", "broadcast", "barrier", "allgather",
  // "reduce_scatter"; "collective" when the stack does not say). Empty otherwise.
  QString collective;
  QString frame;         // the frame that decided it, trimmed (for the stacks file)
  bool taken = true;     // false: no stack of this rank was read (it is left out of the reasoning)
  bool stopped = false;  // stopped by a signal (SIGSTOP, SIGTSTP): not running, whatever its stack
};

// One rank's stacks as they were taken.
struct RankStacks {
  int rank = 0;
  qint64 pid = 0;
  QString native;        // gdb's or eu-stack's output; empty when not taken
  QString python;        // the faulthandler dump; empty when none (not a Python rank, or no client)
  QString problem;       // why a stack is missing or partial, one line ("no gdb or eu-stack ...")
  bool stopped = false;  // in state T (stopped by a signal) before its stacks were taken
};

// "data loading", "compute", "checkpoint writing", "a collective", "an unknown place".
QString phaseName(StackPhase phase);
// The phase of one native stack dump (gdb's "Thread N (... (LWP pid) ...)" or eu-stack's
// "TID pid:" sections), its main thread being the one whose id is `pid` (0: the first thread
// gdb numbers 1, or eu-stack lists first).
PhaseReading classifyNativeStacks(const QString& text, qint64 pid);
// The phase of one faulthandler dump ("Thread 0x...", "Current thread 0x..." sections).
PhaseReading classifyPythonStacks(const QString& text);
// A rank's phase from what was taken of it (the more telling of its native and Python readings).
PhaseReading classifyRank(const RankStacks& stacks);

// "rank 3", "ranks 0-1", "ranks 0-2 and 4-7", "ranks 0, 2 and 5-6" (sorted, duplicates dropped).
QString formatRanks(QList<int> ranks);

// The verdict over every rank's reading (ranks in any order): one line, as the banner, headless
// and the notification show it. A stopped rank comes first, whatever its stack says: "rank 1 is
// stopped (SIGSTOP/SIGTSTP): it is not running, the others wait for it in an allreduce".
QString hangVerdict(const std::vector<std::pair<int, PhaseReading>>& ranks);
// The same, classifying the ranks' stacks first.
QString hangVerdict(const std::vector<RankStacks>& ranks);

}  // namespace ddpdesk
