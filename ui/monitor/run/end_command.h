// The spec's on_end command (`--on-end CMD`): what the monitor runs once a run it started has
// ended, for a webhook or a mail. RunController::endRun() hands every ending of a run with one to
// EndCommands; the command runs through `/bin/sh -c` in the run directory, in a process group of
// its own, with the monitor's environment plus
//   DDPDESK_RUN_DIR    the run directory
//   DDPDESK_RUN_NAME   the spec's name, else the run directory's name
//   DDPDESK_STATUS     Finished, Stopped or Failed
//   DDPDESK_EXIT_CODE  what `ddpdesk --headless` exits with for this ending (runExitCode())
//   DDPDESK_REASON     the first line of why it stopped or failed (empty when it finished)
// Its stdout and stderr go to on-end.log in the run directory. It never blocks the monitor: it is
// started and left to the event loop; one that outlives the timeout (DDPDESK_ON_END_TIMEOUT_S,
// 30 s by default) is killed with its process group. Its start, its end, a failure to start, a
// non-zero exit or a kill are lines in the run's monitor.log, and all but the first two are
// warning()s too; none of them changes how the run ended.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <vector>

namespace ddpdesk {

// What an on_end command is told about the run that ended.
struct RunEnding {
  QString runDir;
  QString runName;
  QString status;  // Finished, Stopped, Failed (RunController::stateName)
  int exitCode = 0;
  QString reason;  // may span lines; the command gets the first
};

// The exit code `ddpdesk --headless` gives a run that ended in `status` (RunController's state
// names): 0 finished, 1 failed, 2 when the launcher refused the run as bad input (Slurm), and
// 128 + the stop signal when stopped (`stopSignal` 0: SIGINT's 130, what a stop from the window
// or the ranks themselves reads as).
int runExitCode(const QString& status, bool rejected, int stopSignal);

class EndCommands : public QObject {
  Q_OBJECT
 public:
  explicit EndCommands(QObject* parent = nullptr);
  // Waits for commands still running at most kExitWaitMs in all, then kills their groups (the
  // kill is logged in their runs' monitor.log).
  ~EndCommands() override;

  // How long the destructor waits for commands still running: the window's close. Headless waits
  // for them (waitForAll) up to their timeout before it exits, so a mail is not cut off.
  static constexpr int kExitWaitMs = 2000;

  // A command running longer than this is killed (default: DDPDESK_ON_END_TIMEOUT_S).
  void setTimeout(int ms) { timeout_ms_ = ms; }
  int timeout() const { return timeout_ms_; }

  // Starts `command` for `ending` and returns at once.
  void start(const QString& command, const RunEnding& ending);
  // Commands started and not yet ended.
  int running() const { return int(commands_.size()); }
  // Runs the event loop until no command runs or `ms` have passed; true when none runs.
  bool waitForAll(int ms);

 Q_SIGNALS:
  // A command could not start, exited non-zero, died of a signal or was killed for its time.
  void warning(const QString& text);
  // A command ended (however), for `runDir`; exitCode -1 when it did not exit normally.
  void ended(const QString& runDir, int exitCode);

 private:
  struct Command;
  void finish(Command* c, int exitCode, const QString& why);

  int timeout_ms_;
  std::vector<std::unique_ptr<Command>> commands_;
  std::vector<std::unique_ptr<Command>> done_;  // ended, deleted from the event loop
};

}  // namespace ddpdesk
