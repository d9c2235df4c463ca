// RunDirectory: where one run lives on disk, and the list of past runs for the history view. Its
// files' names are run_layout.h's (shared with the worker).
//   <XDG data>/ddpdesk/runs/<yyyyMMdd-HHmmss>-<name or task>/   (or the spec's run_dir)
//     spec.json      the RunSpec the ranks were started with (written atomically)
//     metrics.jsonl  every wire message the monitor accepted, one per line (token removed)
//     rank-N.log     rank N's stdout and stderr, line by line
//     status.json    how the run ended: state, reason, exit codes (written atomically at the end)
//     monitor.log    what the monitor saw and did: start, stop requests, rank exits, refused
//                    connections, malformed lines, the ending (one timestamped line each)
//     rank-N.exit.json  how rank N ended, written by the rank itself (see exit_record.h)
//     on-end.log     the output of the spec's on_end command (run/end_command.h), if it has one
//     checkpoints/step-NNNNNNNN.pt   written by the engine's rank 0
//     monitor.lock   held (flock, file_lock.h) by the monitor that has the directory open, from
//                    open() to close(): a second monitor cannot start or resume a run there
//                    while the first is alive; empty when no one holds it
#pragma once

#include <QDateTime>
#include <QFile>
#include <QList>
#include <QString>
#include <memory>
#include <optional>
#include <vector>

#include "run/file_lock.h"
#include "run_spec.h"

namespace ddpdesk {

// What status.json says about a finished run.
struct RunStatus {
  QString state;           // Finished, Stopped or Failed (as RunController names them)
  QString reason;          // why it stopped or failed; may span lines
  QList<int> exitCodes;    // per rank; -1 when the rank did not exit normally
  QList<int> termSignals;  // per rank; 0 unless killed by a signal
  QDateTime startedAt;
  QDateTime endedAt;
  qint64 lastStep = 0;
  qint64 totalSteps = 0;
  double lastLoss = 0;            // global loss of the last step (NaN is written as null)
  qint64 malformedLines = 0;      // metrics lines the monitor rejected
  qint64 ignoredLines = 0;        // metrics lines of a message type it does not know (ignored)
  qint64 unknownFields = 0;       // fields it does not know in the lines it accepted (ignored)
  qint64 droppedConnections = 0;  // metrics connections refused or dropped (bad token, ...)
  int restarts = 0;               // automatic restarts from a checkpoint (spec max_restarts)
  // Why metrics.jsonl lacks the run's later messages ("cannot write …: No space left on
  // device"); empty when it holds every one.
  QString metricsIncomplete;
};

// One entry of the history.
struct RunRecord {
  QString path;
  QString id;  // the directory's name
  RunSpec spec;
  bool specValid = false;
  // From status.json or, when the monitor died, from the ranks' exit records (rank-N.exit.json);
  // absent: the run is active, or it ended without either.
  std::optional<RunStatus> status;
  QDateTime created;
  QStringList checkpoints;  // checkpoints/step-*.pt, highest step first
  // The monitor alive in the directory ("ddpdesk pid 4711 on host"); empty when none is.
  QString monitor;
};

class RunDirectory {
 public:
  RunDirectory();
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  // <GenericDataLocation>/ddpdesk/runs
  static QString runsRoot();
  // The directory a new run would get (not created): root/<yyyyMMdd-HHmmss>-<name or task>,
  // with -2, -3, ... appended when taken.
  static QString newRunPath(const RunSpec& spec, const QDateTime& now,
                            const QString& root = runsRoot());

  // The directory a spec continues in: its run_dir, else the run directory its resume names
  // (resuming a run continues it in place: one history entry, one curve); empty for a new one.
  static QString continuedPath(const RunSpec& spec);
  // Uses spec.run_dir when set, else a new path; creates it and opens metrics.jsonl for append.
  bool create(const RunSpec& spec, QString* error = nullptr);
  // Opens an existing or new directory at `path` (creating it), taking its monitor.lock; false
  // with one line when another monitor holds it (nothing is written then). *error names the
  // directory and why ("cannot create run directory D: Not a directory"). A half line at the end
  // of its metrics.jsonl (a monitor killed mid-write) is ended first (jsonl_append.h) and counted
  // in endedHalfLines().
  bool open(const QString& path, QString* error = nullptr);
  // Why a run directory could not be made or written at `path` ("cannot create it: Not a
  // directory", "cannot write in it: Read-only file system"), found without creating anything;
  // empty when nothing stands in the way. The pre-start check's (checks/local_start_check.h).
  static QString unusableReason(const QString& path);
  void close();
  bool isOpen() const { return !path_.isEmpty(); }
  QString path() const { return path_; }

  bool writeSpec(const RunSpec& spec, QString* error = nullptr);
  // Appends complete lines (each ending in '\n') to metrics.jsonl. When a write fails (a full
  // disk), what it wrote of them is cut off again, so the file still ends in a whole line, and
  // nothing more is appended: false, and metricsError() says why from then on.
  bool appendMetrics(const QByteArray& lines);
  // "cannot write <path>: <reason>" once an append failed; empty while metrics.jsonl is whole.
  QString metricsError() const { return metrics_error_; }
  // 1 when open() ended a half line at the end of metrics.jsonl, else 0.
  int endedHalfLines() const { return ended_half_lines_; }
  bool writeStatus(const RunStatus& status, QString* error = nullptr);
  // Appends one timestamped line to monitor.log (written through at once: a killed monitor
  // leaves every line it logged).
  void logEvent(const QString& text);
  // The same for a directory that no RunDirectory holds open (what happens after a run ended:
  // its on_end command); nothing when `dir` is empty or gone.
  static void appendEvent(const QString& dir, const QString& text);
  // A run (re)starts here: removes status.json and the ranks' exit records of the previous run in
  // this directory, so until this one ends nothing claims it has.
  void forgetEnding();

  static QString specPath(const QString& dir);
  static QString metricsPath(const QString& dir);
  static QString statusPath(const QString& dir);
  static QString logPath(const QString& dir, int rank);
  static QString monitorLogPath(const QString& dir);
  static QString rankMetricsDir(const QString& dir);             // metrics/
  static QString rankMetricsPath(const QString& dir, int rank);  // metrics/rank-N.jsonl
  static QString systemMetricsPath(const QString& dir);          // metrics/system.jsonl
  static QString monitorLockPath(const QString& dir);            // monitor.lock
  // The monitor that has `dir` open now, in this process or another, here or on another machine
  // that shares the directory ("ddpdesk pid 4711 on host"); empty when none.
  static QString liveMonitor(const QString& dir);

  static std::optional<RunStatus> readStatus(const QString& dir);
  // Whether the engine wrote a checkpoint there (run_layout.h's names).
  static bool hasCheckpoint(const QString& dir);
  // A run directory (any directory holding spec.json), read for the history.
  static std::optional<RunRecord> readRecord(const QString& dir);
  // Every run under `root`, newest first.
  static std::vector<RunRecord> listRuns(const QString& root = runsRoot());

 private:
  QString path_;
  std::unique_ptr<QFile> metrics_;
  std::unique_ptr<QFile> log_;
  FileLock lock_;
  QString metrics_error_;
  int ended_half_lines_ = 0;
};

}  // namespace ddpdesk
