// RunController: turns a RunSpec into a run (N ddpdesk-worker processes on this machine, or a
// Slurm job), or follows one started elsewhere, and manages it from start to a clean end.
//
//   Idle -> Starting -> Running -> Finished
//              |           |
//              +-----------+--> Stopping -> Stopped (user stop, or the ranks stopped gracefully)
//                                   |
//                                   +-----> Failed  (a rank exited non-zero, crashed, or could
//                                                    not start; the others were stopped)
// Starting: processes launched, not every rank has said hello yet. Stopping: SIGTERM sent (or a
// rank failed and the rest are being stopped); SIGKILL follows after the grace period. A terminal
// state is entered only when every process of the run is gone. The object may be reused: start()
// again from any terminal state. Destroying it mid-run kills and reaps every rank.
//
// What differs between kinds of run is a RunBackend's (run_backend.h); this class keeps what
// every run has: the metrics socket and store, the run directory, the state machine above, the
// failure and its reason, status.json, the grace timer and the signals to the GUI.
//
// start() of a local spec: LocalBackend (local/local_backend.h) starts the ranks on this machine
// (torchrun's environment, DDPDESK_MONITOR, DDPDESK_TOKEN and the command the spec names,
// local/rank_command.h) and applies the failure policy.
//
// attach() follows a run it did not start (ranks started by hand, torchrun, srun or another
// ddpdesk, on this machine or any that writes the directory): FollowedBackend
// (follow/followed_backend.h) reads the ranks' metrics/rank-N.jsonl files into the same store,
// states and rank table; stop()/kill() signal the ranks that run on this host.
// attach("ssh://[user@]host[:port]/dir"): SshFollowedBackend (ssh/ssh_followed_backend.h), the
// same through a local mirror of a directory on another host; a host that cannot be followed
// emits attachFailed() and ends in Failed.
//
// A local run with max_restarts restarts by itself when a rank fails after training started
// (restart_policy.h): Failed is then not entered; restarting() is emitted, the ranks are started
// again after the backoff from the latest checkpoint, in the same directory, store and socket,
// and the state goes Stopping -> Starting -> Running again. restarts() counts them; status.json
// and the chart marks (an event "restart" in the record) keep them. A Slurm job requeued after
// it ran (slurm_requeue) is a restart of the same run as well, Starting again until the ranks of
// its new attempt say hello.
//
// A spec with launcher "slurm", or attach() of a directory whose slurm.json names a job:
// SlurmBackend (slurm/slurm_backend.h), a batch job submitted with sbatch here or through a login
// node, followed through its ranks' files and ended by the job's end. stop() signals the job's
// steps (graceful), kill() cancels it; a refused submission fails the run with
// failure().rejected set. Destroying the controller leaves a submitted job running.
//
// The hang doctor (hang/hang_doctor.h): a StallWatch (hang/stall_watch.h) follows the ranks'
// messages; when the run stops stepping (no optimizer step from any rank for half the
// collective timeout, or a rank silent while the others step) it says so in a warning(), every
// rank's stack on this machine is taken without stopping the run, written with a verdict to
// <run_dir>/stacks-<time>.txt and logged, and stalled() says the verdict. takeStacks() does the
// same at any moment of a run (the window's Stacks button). stacksTaken() follows either.
//
// A run this controller started whose spec has an on_end command gets it run when it ends, by
// endCommands() (run/end_command.h), after status.json is written; a followed run never does (its
// spec.json is someone else's to have written).
#pragma once

#include <QDateTime>
#include <QObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <functional>
#include <memory>
#include <vector>

#include "run/run_directory.h"
#include "run_spec.h"
#include "wire.h"

namespace ddpdesk {

class EndCommands;
class HangDoctor;
class StallWatch;
class MetricsServer;
class MetricsStore;
class RunBackend;
class RunFollower;
class SlurmJob;

class RunController : public QObject {
  Q_OBJECT
 public:
  enum class State { Idle, Starting, Running, Stopping, Finished, Stopped, Failed };
  Q_ENUM(State)

  // Why a run failed: the first rank that went wrong.
  struct Failure {
    int rank = -1;
    int exitCode = -1;       // when it exited normally with a non-zero code
    int signal = 0;          // when it was killed by a signal
    QString what;            // "rank 1 exited with code 3"
    QString errorMessage;    // the rank's last `error` wire message, if any
    int peerLost = -1;       // that message's `peer`: the rank whose loss made this one fail
    QStringList stderrTail;  // its last stderr lines
    QString node;            // the host it ran on (Slurm runs)
    bool rejected = false;   // Slurm refused the job (bad input: nothing ran)
  };

  // One rank, as the rank table shows it.
  struct RankState {
    int rank = 0;
    qint64 pid = 0;
    bool running = false;
    bool connected = false;  // passed the metrics hello check
    bool exited = false;
    bool crashed = false;
    int exitCode = -1;
    int signal = 0;
    QString exitText;  // RankProcess::describeExit()
    QString silence;   // a followed rank that has gone quiet: "silent for N s"; else empty
  };

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  // Worker executable. Empty (the default) = $DDPDESK_WORKER if set, else
  // <applicationDirPath>/ddpdesk-worker-cuda where scripts/build.sh built one, else
  // <applicationDirPath>/ddpdesk-worker.
  void setWorkerProgram(const QString& path) { program_ = path; }
  QString workerProgram() const;
  static QString defaultWorkerProgram();
  // Time between SIGTERM and SIGKILL, for user stops and for the survivors of a failure.
  void setGracePeriod(int ms) { grace_ms_ = ms; }
  // A resumed run's earlier metrics.jsonl larger than this is loaded on a worker thread while the
  // ranks start (MetricsStore::loadJsonlAsync; live messages are applied after the file's), so
  // a huge run does not freeze the GUI; smaller ones load at once, before the ranks start.
  void setAsyncLoadThreshold(qint64 bytes) { async_load_bytes_ = bytes; }
  int gracePeriod() const { return grace_ms_; }
  // Added to every rank's environment (after the system environment, before the run's own).
  void setExtraEnvironment(const QProcessEnvironment& env) { extra_env_ = env; }
  QProcessEnvironment extraEnvironment() const { return extra_env_; }

  // Validates, creates the run directory (spec.run_dir, or a new one), writes spec.json, opens
  // the metrics socket and launches every rank. False with *error (one line) when nothing was
  // launched. Resuming from a run directory without a run_dir of its own continues in that
  // directory: metrics.jsonl is appended to and loaded into the store first.
  bool start(const RunSpec& spec, QString* error = nullptr);
  // Follows the run in `runDir` (see above). False with *error (one line) when it is not a
  // directory or a run is active.
  // An ssh:// URL follows a directory on another host (see above); *error then covers only the
  // URL itself, and attachFailed() reports the rest.
  bool attach(const QString& runDir, QString* error = nullptr);
  bool isRemote() const;
  // Following a run this controller did not start (a directory, ssh://, a submitted Slurm job).
  bool isAttached() const { return attached_; }
  bool isSlurm() const { return slurmJob() != nullptr; }
  SlurmJob* slurmJob() const;
  // "job 42 pending (Resources)", "job 42 running on node[1-2]"; empty for other launchers.
  QString launcherStatus() const { return launcher_status_; }
  RunFollower* follower() const;
  // Graceful stop: SIGTERM to every rank (they agree on a step boundary, checkpoint and exit 0);
  // SIGKILL to whatever is left after the grace period.
  void stop();
  // SIGKILL every rank now (a second Ctrl+C).
  void kill();
  // The signal that made the front end stop this run (headless: Ctrl+C's SIGINT or SIGTERM),
  // so the on_end command's DDPDESK_EXIT_CODE is what headless exits with: 128 + it. Unset
  // (a stop from the window, or by the ranks themselves): SIGINT. Forgotten when a run begins.
  void noteStopSignal(int signo) { stop_signal_ = signo; }
  // The spec's on_end commands of ended runs, still running or not (warning() for their
  // troubles; headless waits for them before it exits).
  EndCommands* endCommands() const { return end_commands_; }
  // Takes every rank's stack now (see above); false when the run is not active or stacks are
  // already being taken. stacksTaken() follows.
  bool takeStacks();
  bool takingStacks() const;
  HangDoctor* hangDoctor() const { return doctor_; }
  StallWatch* stallWatch() const { return stall_watch_; }

  State state() const { return state_; }
  bool isActive() const;  // Starting, Running or Stopping
  static bool isTerminal(State s);
  static QString stateName(State s);
  // Why the run is Stopped or Failed (may span lines: summary, then stderr tail). Empty otherwise.
  QString reason() const { return reason_; }
  // Why the run's metrics.jsonl lacks its later messages ("cannot write …: No space left on
  // device", warned once as it happened); empty while it holds every one.
  QString metricsIncomplete() const { return metrics_incomplete_; }
  const Failure& failure() const { return failure_; }
  bool stopRequested() const { return stop_requested_; }
  // Automatic restarts of this run so far (spec max_restarts).
  int restarts() const { return restarts_; }

  RunSpec spec() const { return spec_; }  // as given to the workers (run_dir filled in)
  QString runDirectory() const { return run_dir_path_; }
  // What a person calls the run: the spec's name, else its directory's name.
  QString runName() const;
  QString socketPath() const;
  int worldSize() const;
  std::vector<RankState> ranks() const;
  QList<qint64> pids() const;  // every rank's pid, kept after the run (0: never started)
  QDateTime startedAt() const { return started_at_; }
  QDateTime endedAt() const { return ended_at_; }

  MetricsStore* store() const { return store_; }
  MetricsServer* server() const { return server_; }

 Q_SIGNALS:
  void stateChanged(ddpdesk::RunController::State state, ddpdesk::RunController::State previous);
  // One signal per state entered, for convenience.
  void starting();
  void running();
  void stopping();
  void finished();
  void stopped(const QString& reason);
  void failed(const QString& reason);
  // Every line a rank writes to stdout or stderr.
  void logLine(int rank, bool isStderr, const QString& line);
  void rankStarted(int rank, qint64 pid);
  void rankConnected(int rank);
  void rankExited(int rank, const QString& how);
  // A rank failed and the run restarts from its checkpoint in `delayMs` (restart `attempt` of
  // `maxRestarts`); `cause` is the failure, as reason() would have said it. A Slurm job that
  // Slurm requeued (spec slurm_requeue) restarts too: maxRestarts and delayMs 0, Slurm's to say.
  void restarting(int attempt, int maxRestarts, const QString& cause, int delayMs);
  // Protocol trouble worth showing (dropped connection, malformed lines).
  void warning(const QString& text);
  // sbatch took the Slurm job (slurmJob()->jobId()).
  void jobSubmitted(const QString& jobId);
  // The Slurm job's state changed, or a followed run's ssh connection was lost or came back:
  // `text` is the line to print, launcherStatus() what the run strip shows meanwhile.
  void launcherStatusChanged(const QString& text);
  // A remote attach: the host answered and the directory is there (the spec, if any, is read).
  void remoteConnected();
  // A remote attach could not begin (one line: no ssh, host unreachable, key refused, no such
  // directory); the state goes Failed right after.
  void attachFailed(const QString& why);
  // The run looks stalled (one line why: a followed rank silent past DDPDESK_SILENT_S); also a
  // warning(). Said again only after the run was heard from again.
  void stalled(const QString& why);
  // The ranks' stacks were taken (takeStacks(), or a stall): `why` (empty: asked for), the
  // verdict (one line: "rank 1 is in its data loading; rank 0 waits for it in an allreduce")
  // and the stacks file (empty when it could not be written).
  void stacksTaken(const QString& why, const QString& verdict, const QString& path);

 private:
  friend class RunBackend;
  void setState(State s);
  // Messages read from the ranks' socket or files: into the store, the run's metrics.jsonl and
  // the ranks' last words.
  void onMessages(const std::vector<wire::Message>& messages, const QByteArray& lines);
  void resetRun(int world);
  // The hang doctor's wiring (run_controller_hang.cpp).
  void setUpHangDoctor();
  void onStall(const QString& why);
  void onStacksExamined(const QString& why, const QString& verdict, const QString& path);

 public:
  // Makes `backend` this controller's if `how` begins its run (through RunBackend::beginRun() or
  // beginFollowing()); the previous run's backend goes then. `how`'s result. start() and attach()
  // choose the backend; a test may bring its own (run_backend.h).
  bool begin(std::unique_ptr<RunBackend> backend, const std::function<bool(RunBackend&)>& how);

 private:
  // For the backends (RunBackend's protected forwarders).
  // A run with a directory of its own: takes the spec and the directory, resets the run for
  // `world` ranks and loads `history` bytes of an earlier metrics.jsonl (a continued run) into
  // the store: larger than the async threshold on a worker thread, else at once.
  void beginRun(const RunSpec& spec, std::unique_ptr<RunDirectory> dir, qint64 history, int world);
  // A followed run at `where` (nothing is written there): world 0 until the ranks say hello.
  void beginFollowing(const QString& where, const RunSpec& spec);
  // Rank `rank` said hello (on the socket, or in its followed file); Running once all have.
  void rankConnectedNow(int rank);
  // A followed rank's hello names a world this large.
  void growWorld(int world);
  // A restart begins (the backend starts the ranks again right after): the ranks' connections,
  // last words and the failure are forgotten, restarts() counts one more, the state is Starting.
  // The store, the directory and the socket stay.
  void beginRestart();
  // SIGKILL follows a stop after the grace period: the backend's graceExpired().
  void startGrace();
  void stopGrace();
  // Ends the run in `final` for `reason` (reason()): the store flushed, status.json (`status`'s
  // per-rank fields and counters, with the state, reason, times and progress filled in here)
  // written and the ending logged (after `logPrefix`) when the run has an open directory of its
  // own, the directory closed, the metrics socket closed, then the state. Once per run: a second
  // call, or one after the run ended otherwise, is ignored. The spec's on_end command starts
  // just before the state is entered.
  void endRun(State final, const QString& reason, RunStatus status = RunStatus(),
              const QString& logPrefix = QString());

  State state_ = State::Idle;
  QString program_;
  int grace_ms_ = 30000;
  qint64 async_load_bytes_ = 32 << 20;
  QProcessEnvironment extra_env_;
  RunSpec spec_;
  QString run_dir_path_;
  std::unique_ptr<RunDirectory> dir_;
  MetricsServer* server_;
  MetricsStore* store_;
  EndCommands* end_commands_;
  StallWatch* stall_watch_;
  HangDoctor* doctor_;
  std::unique_ptr<RunBackend> backend_;   // the run's kind: local, followed, Slurm
  std::unique_ptr<RunBackend> incoming_;  // the next run's, while it begins (begin())
  QString launcher_status_;
  bool attached_ = false;  // see isAttached()
  std::vector<bool> connected_;
  std::vector<wire::Error> rank_errors_;  // last error message per rank (rank -1: none)
  std::vector<bool> rank_stopped_;        // the rank reported "stopped"
  std::vector<bool> rank_finished_;       // the rank reported "finished"
  QTimer grace_timer_;
  bool stop_requested_ = false;
  int stop_signal_ = 0;  // noteStopSignal()
  bool has_failure_ = false;
  bool trained_ = false;  // a rank reported an optimizer step in this run
  int restarts_ = 0;
  Failure failure_;
  QString reason_;
  QString metrics_incomplete_;
  QDateTime started_at_;
  QDateTime ended_at_;
};

}  // namespace ddpdesk
