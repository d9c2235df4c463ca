// StackCollector: takes the stacks of running processes without ending them, asynchronously
// (QProcess and timers: the GUI never waits), each process bounded by a timeout.
//   - native stacks of every thread: `gdb -p PID -batch -nx -ex "thread apply all bt"` (gdb
//     attaches, prints, detaches: the process goes on), or `eu-stack -p PID` (elfutils) where gdb
//     is missing; with neither, the note says which Debian packages give them (gdb, elfutils);
//   - Python stacks, for a rank whose ddpdesk client registered faulthandler
//     (python/ddpdesk/_stacks.py): its file <run_dir>/python-stacks/rank-N.txt begins with the
//     rank's pid and the signal; the collector sends that signal to the rank's main thread (where
//     faulthandler's alternate signal stack is: the handler never runs on a thread that computes)
//     and reads what the dump appended. The Python dump is taken first, before gdb stops the
//     process.
// A process stopped by a signal (state T in /proc/PID/stat before anything is done to it: SIGSTOP,
// SIGTSTP) is marked RankStacks::stopped, gets no Python signal, and is stopped again after its
// native stack was taken (a tracer's detach may resume it). Any other process that is still
// stopped after its stack was taken (a gdb killed at its timeout) gets SIGCONT. Up to kParallel
// processes at once.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <deque>
#include <vector>

#include "hang/stack_verdict.h"

class QProcess;

namespace ddpdesk {

struct StackTarget {
  int rank = 0;
  qint64 pid = 0;   // 0: nothing to take (problem says why)
  QString problem;  // why this rank is not taken ("runs on node7"), when pid is 0
};

class StackCollector : public QObject {
  Q_OBJECT
 public:
  explicit StackCollector(QObject* parent = nullptr);
  ~StackCollector() override;

  // The native stack tool on PATH: "gdb", else "eu-stack", else empty.
  static QString nativeTool();
  // What to install for native stacks when nativeTool() is empty (one line).
  static QString missingToolNote();
  // The Python stack file of `rank` in `runDir` (the client writes it; see above).
  static QString pythonStackFile(const QString& runDir, int rank);

  // Milliseconds one process may take (gdb's attach loads every library's symbols: a LibTorch
  // rank takes seconds). Default 30 s.
  void setTimeout(int ms) { timeout_ms_ = ms; }
  // Takes every target's stacks; collected() follows (even for no targets). False when a
  // collection is already under way.
  bool collect(const std::vector<StackTarget>& targets, const QString& runDir);
  bool busy() const { return busy_; }
  // The native tool of the latest collection ("gdb", "eu-stack" or empty).
  QString tool() const { return tool_; }

  static constexpr int kParallel = 4;
  static constexpr int kPythonWaitMs = 3000;

 Q_SIGNALS:
  // In rank order. `note`: one line about the tools (empty when gdb or eu-stack was found).
  void collected(const std::vector<ddpdesk::RankStacks>& stacks, const QString& note);

 private:
  struct Job {
    StackTarget target;
    RankStacks out;
    qint64 pyOffset = -1;  // the Python file's size before the signal; -1: no Python dump
    qint64 pySize = -1;    // its size at the last poll
    QElapsedTimer pyClock;
    QProcess* process = nullptr;
  };
  void startNext();
  void startPython(Job& job);
  void pollPython(Job* job);
  void startNative(Job& job);
  void nativeDone(Job* job, const QString& problem);
  void jobDone(Job* job);

  QString run_dir_;
  QString tool_;
  int timeout_ms_ = 30000;
  bool busy_ = false;
  std::deque<Job> jobs_;
  std::size_t next_ = 0;
  int running_ = 0;
  int done_ = 0;
};

}  // namespace ddpdesk
