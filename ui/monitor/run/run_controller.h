// RunController: turns a RunSpec into N ddpdesk-worker processes on this machine and manages the
// run from start to a clean end.
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
// A LocalRankLauncher (local_rank_launcher.h) starts the ranks: torchrun's environment (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, a free MASTER_PORT) plus
// DDPDESK_MONITOR (the metrics socket) and DDPDESK_TOKEN, and
// `<worker> --config <rundir>/spec.json --run-dir <rundir> [--resume X]`; this class is the state
// machine above it: the failure policy, stopping, and the run's status.
//
// attach() follows a run it did not start instead (ranks started by hand, torchrun, srun or
// another ddpdesk, on this machine or any that writes the directory): a RunFollower reads the
// ranks' metrics/rank-N.jsonl files and feeds the same store, states and rank table. Starting
// lasts until every rank's hello was read; the run ends when every rank's file ends in
// finished/stopped/error or, on this host, its pid is gone (run_follower.h). Nothing is written
// into a followed directory. stop()/kill() signal the ranks that run on this host.
//
// attach("ssh://[user@]host[:port]/dir") follows a run directory on another host the same way,
// through a local mirror kept by an SshRunMirror (one ssh process, run_controller_remote.cpp):
// ranks on that host that die without a word are seen through its pid checks, and stop()/kill()
// reach them with `ssh host kill -TERM/-KILL <pids>`. Until the host answers the state is
// Starting; a host that cannot be followed emits attachFailed() and ends in Failed.
//
// A spec with launcher "slurm" is submitted as a batch job instead (slurm_job.h, slurm_script.h;
// run_controller_slurm.cpp): the run directory gets spec.json and job.sbatch, `sbatch
// --parsable` gives the job id (kept in slurm.json), and the ranks' metrics files are followed
// as for attach(). Starting lasts while the job is pending and until every rank said hello; the
// run ends when Slurm says the job has ended (launcherStatus() on the way: pending with its
// reason, running on its nodes). stop() signals the job's steps with SIGTERM (graceful:
// checkpoint, exit 0), kill() cancels the job. A refused submission (sbatch's own line) fails the
// run with failure().rejected set and leaves no new run directory behind. Destroying the
// controller leaves a submitted job running.
//
// With spec.slurm_login the same happens through a login node over ssh
// (run_controller_slurm_login.cpp): the run directory is spec.slurm_remote_dir on the cluster,
// spec.run_dir is the local record (runDirectory()), the metrics come through an SshRunMirror,
// and a graceful stop writes the stop file there over ssh before the signal. A spec whose resume
// is an ssh:// URL (login_resume.h) continues the run in that directory on the cluster.
//
// attach() of a directory whose slurm.json names a job (a Slurm run ddpdesk submitted, here or
// through a login node) follows that job as the submitting controller does
// (run_controller_slurm_attach.cpp): its state through squeue/scontrol/sacct, the end of the run
// when the job ends, a failed rank named with its node and output tail; stop()/kill() act on the
// job (scancel --signal=TERM and the stop file / scancel), since its ranks are the job's. Nothing
// else is written. Without Slurm's tools here, or once Slurm has forgotten the job, the files
// alone are followed as for any directory.
#pragma once

#include <QDateTime>
#include <QObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <memory>
#include <vector>

#include "run_spec.h"
#include "slurm/slurm_run_files.h"
#include "wire.h"

namespace ddpdesk {

class LocalRankLauncher;
class MetricsServer;
class MetricsStore;
class RankProcess;
class RunDirectory;
class RunFollower;
class SlurmJob;
struct SlurmJobStatus;
class SshRunMirror;

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
  bool isRemote() const { return mirror_ != nullptr; }
  // Following a run this controller did not start (a directory, ssh://, a submitted Slurm job).
  bool isAttached() const { return attached_; }
  bool isSlurm() const { return slurm_ != nullptr; }
  SlurmJob* slurmJob() const { return slurm_; }
  // "job 42 pending (Resources)", "job 42 running on node[1-2]"; empty for other launchers.
  QString launcherStatus() const { return launcher_status_; }
  RunFollower* follower() const { return follower_; }
  // Graceful stop: SIGTERM to every rank (they agree on a step boundary, checkpoint and exit 0);
  // SIGKILL to whatever is left after the grace period.
  void stop();
  // SIGKILL every rank now (a second Ctrl+C).
  void kill();

  State state() const { return state_; }
  bool isActive() const;  // Starting, Running or Stopping
  static bool isTerminal(State s);
  static QString stateName(State s);
  // Why the run is Stopped or Failed (may span lines: summary, then stderr tail). Empty otherwise.
  QString reason() const { return reason_; }
  const Failure& failure() const { return failure_; }
  bool stopRequested() const { return stop_requested_; }

  RunSpec spec() const { return spec_; }  // as given to the workers (run_dir filled in)
  QString runDirectory() const { return run_dir_path_; }
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

 private:
  void setState(State s);
  void onMessages(const std::vector<wire::Message>& messages, const QByteArray& lines);
  void onRankFinished(int rank);
  void beginStopping();
  void onGraceExpired();
  void maybeFinish();
  void finalize();
  void recordFailure(const RankProcess& p);
  void resetRun(int world);
  void growWorld(int world);
  void onFollowedHello(const wire::Hello& hello);
  void finalizeAttached();
  std::vector<RankState> followedRanks() const;
  RunFollower* newFollower();
  bool startSlurm(RunSpec spec, const QString& program, QString* error);
  void onSlurmSubmitted(const QString& jobId);
  void onSlurmRejected(const QString& line);
  void onSlurmStatus(const SlurmJobStatus& s);
  void finalizeSlurm(const SlurmJobStatus& s);
  void nameFailedSlurmRank();
  void stopSlurm(bool graceful);
  // Takes the run's spec and directory, resets the run and loads `history` bytes of earlier
  // metrics.jsonl (a continued run) into the store.
  void beginSlurmRun(const RunSpec& spec, std::unique_ptr<RunDirectory> dir, qint64 history);
  SlurmJob* newSlurmJob();
  void rememberForUndo(const QString& path, bool created);
  void onSlurmEnded(const SlurmJobStatus& s);
  // attach() of a submitted Slurm run (run_controller_slurm_attach.cpp).
  void attachSlurm(const SlurmRecord& record);
  // Slurm cannot tell (no squeue here, the job forgotten): the ranks' files end the run.
  void followFilesOnly(const QString& why);
  // Through a login node (run_controller_slurm_login.cpp).
  bool startSlurmViaLogin(RunSpec spec, const QString& program, QString* error);
  void writeRemoteRun(const QString& remoteDir, const QString& worker, const QString& workerResume);
  // After a refused job: removes what was written on the cluster, then onSlurmRejected() again;
  // false when nothing was written there.
  bool undoRemoteRun(const QString& line);
  void followRemoteSlurm();
  // A graceful stop: the stop file in the directory on the cluster over ssh, then the signal.
  void stopRemoteSlurm();
  QString remoteScriptName() const;  // login:/dir/job.sbatch
  // Follows the mirror of a remote directory (mirror_) with `f`: its pid checks on that host,
  // a poll whenever a remote poll is in.
  void followMirror(RunFollower* f);
  bool attachRemote(const QString& url, QString* error);
  void onRemoteConnected();
  void onRemoteFailed(const QString& why);
  // Sends `signo` to the followed ranks that are still running where they can be reached (this
  // host, or the remote host over ssh); false when no rank can be reached.
  bool signalFollowedRanks(int signo);

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
  LocalRankLauncher* local_;         // the ranks of a local run: processes on this machine
  RunFollower* follower_ = nullptr;  // attached or Slurm: the run's files, not processes of ours
  SlurmJob* slurm_ = nullptr;        // the Slurm launcher's job
  QString launcher_status_;
  // What a refused submission puts back: the directory it created, or an earlier run's
  // status.json and metrics/ (moved aside so its rank files are not read again).
  bool slurm_created_dir_ = false;
  QByteArray slurm_old_status_;
  EarlierJobFiles slurm_moved_;
  bool attached_ = false;           // see isAttached()
  SshRunMirror* mirror_ = nullptr;  // attached over ssh: the local mirror follower_ reads
  // A Slurm run through a login node: its directory on the cluster (resolved), and what a refused
  // job must undo there (written: spec.json and job.sbatch are there; created: the directory
  // was made; aside: where an earlier job's metrics/ and rank-N.log went).
  QString slurm_remote_dir_;
  bool slurm_remote_written_ = false;
  bool slurm_remote_created_ = false;
  QString slurm_remote_aside_;
  QString slurm_remote_logs_aside_;
  std::vector<bool> connected_;
  std::vector<QString> rank_errors_;  // last error message per rank
  std::vector<bool> rank_stopped_;    // the rank reported "stopped"
  QTimer grace_timer_;
  QTimer drain_timer_;
  bool stop_requested_ = false;
  bool term_sent_ = false;  // SIGTERM went out to every rank (once per run)
  bool draining_ = false;
  bool has_failure_ = false;
  Failure failure_;
  QString reason_;
  QDateTime started_at_;
  QDateTime ended_at_;
};

}  // namespace ddpdesk
