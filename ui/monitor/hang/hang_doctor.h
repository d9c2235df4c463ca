// HangDoctor: what ddpdesk does when a run hangs, or when someone asks where its ranks are. It
// takes every rank's stack that runs on this machine (StackCollector: gdb or eu-stack, and the
// Python client's faulthandler dump), reads them (stack_verdict.h), and writes them, the verdict
// first, into <run_dir>/stacks-<yyyyMMdd-HHmmss>.txt (a followed run's directory is someone
// else's: its file goes to ~/.cache/ddpdesk/stacks/<run name>/ instead). The run keeps
// going throughout. RunController owns one, feeds its StallWatch and turns what it finds into
// warning(), stalled() and stacksTaken() (run_controller.h).
#pragma once

#include <QDateTime>
#include <QObject>
#include <QString>
#include <vector>

#include "hang/stack_collector.h"
#include "hang/stack_verdict.h"

namespace ddpdesk {

class RunController;

class HangDoctor : public QObject {
  Q_OBJECT
 public:
  explicit HangDoctor(RunController& run);

  // Takes the run's stacks now; `why` says what led here (a stall's line, or empty: asked for).
  // False when stacks are already being taken.
  bool examine(const QString& why);
  bool busy() const { return collector_.busy(); }
  StackCollector& collector() { return collector_; }

  // The stacks file's text: header, verdict, each rank's reading, then each rank's stacks.
  static QString fileText(const QString& runDir, const QString& why, const QString& verdict,
                          const QString& tool, const QString& note,
                          const std::vector<RankStacks>& stacks);
  // Where this run's stacks file of `when` goes (see above): a name not yet taken.
  QString filePath(const QDateTime& when) const;

 Q_SIGNALS:
  // The stacks were taken and read: the verdict line (with a note when a tool is missing), the
  // file they were written to (empty if it could not be written) and `why` as given.
  void examined(const QString& why, const QString& verdict, const QString& path);

 private:
  std::vector<StackTarget> targets() const;
  void onCollected(const std::vector<RankStacks>& stacks, const QString& note);

  RunController& run_;
  StackCollector collector_;
  QString why_;
};

}  // namespace ddpdesk
