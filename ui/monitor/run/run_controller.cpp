#include "run/run_controller.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMetaEnum>
#include <algorithm>
#include <csignal>

#include "checks/local_start_check.h"
#include "follow/run_follower.h"
#include "local/local_rank_launcher.h"
#include "local/rank_process.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/monitor_settings.h"
#include "run/run_directory.h"
#include "slurm/slurm_job.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {

RunController::RunController(QObject* parent)
    : QObject(parent),
      server_(new MetricsServer(this)),
      store_(new MetricsStore(this)),
      local_(new LocalRankLauncher(this)) {
  connect(local_, &LocalRankLauncher::line, this, &RunController::logLine);
  connect(local_, &LocalRankLauncher::rankStarted, this, &RunController::rankStarted);
  connect(local_, &LocalRankLauncher::rankFinished, this, &RunController::onRankFinished);
  grace_timer_.setSingleShot(true);
  connect(&grace_timer_, &QTimer::timeout, this, &RunController::onGraceExpired);
  drain_timer_.setSingleShot(true);
  connect(&drain_timer_, &QTimer::timeout, this, &RunController::finalize);

  connect(server_, &MetricsServer::peerAuthenticated, this, [this](const wire::Hello& h) {
    if (h.rank >= int(connected_.size())) return;
    connected_[h.rank] = true;
    Q_EMIT rankConnected(h.rank);
    const bool all = std::all_of(connected_.begin(), connected_.end(), [](bool b) { return b; });
    if (all && state_ == State::Starting) setState(State::Running);
  });
  connect(server_, &MetricsServer::messagesReceived, this, &RunController::onMessages);
  connect(server_, &MetricsServer::connectionDropped, this, [this](int rank, const QString& why) {
    Q_EMIT warning(
        rank < 0 ? QStringLiteral("refused a metrics connection: %1").arg(why)
                 : QStringLiteral("dropped rank %1's metrics connection: %2").arg(rank).arg(why));
  });
  connect(
      server_, &MetricsServer::malformedLines, this,
      [this](int rank, int count, const QString& why) {
        Q_EMIT warning(
            QStringLiteral("rank %1 sent %2 malformed line(s): %3").arg(rank).arg(count).arg(why));
      });
  // A newer worker's additions: worth a line in monitor.log, not a warning (nothing is wrong).
  connect(server_, &MetricsServer::ignoredInput, this, [this](int rank, const QString& what) {
    if (dir_)
      dir_->logEvent(QStringLiteral("rank %1 sent input this monitor ignores (counted in "
                                    "status.json): %2")
                         .arg(rank)
                         .arg(what));
  });
  connect(server_, &MetricsServer::allDisconnected, this, [this] {
    if (draining_) finalize();
  });
  // A resumed run's history loaded in the background carries the old run's world size.
  connect(store_, &MetricsStore::loaded, this, [this] { store_->setWorld(spec_.nproc); });
  // Everything worth a warning is also kept in the run's monitor.log.
  connect(this, &RunController::warning, this, [this](const QString& w) {
    if (dir_) dir_->logEvent(QStringLiteral("warning: ") + w);
  });
}

RunController::~RunController() {
  grace_timer_.stop();
  drain_timer_.stop();
  server_->disconnect(this);
  // A submitted Slurm job runs on without us (its directory can be followed again).
  const bool active = isActive() && !slurm_;
  if (slurm_ && isActive() && dir_)
    dir_->logEvent(QStringLiteral("the monitor was closed; job %1 goes on").arg(slurm_->jobId()));
  // No process of the run outlives this object.
  local_->disconnect(this);
  local_->killAndReapAll();
  if (active && dir_ && dir_->isOpen()) {
    RunStatus s;
    s.state = stateName(State::Failed);
    s.reason =
        QStringLiteral("the monitor was closed while the run was active; its ranks were killed");
    for (RankProcess* p : local_->ranks()) {
      s.exitCodes.append(p->exitInfo().crashed ? -1 : p->exitInfo().exitCode);
      s.termSignals.append(p->exitInfo().signal);
    }
    s.startedAt = started_at_;
    s.endedAt = QDateTime::currentDateTime();
    dir_->writeStatus(s);
  }
  server_->close();
}

QString RunController::defaultWorkerProgram() {
  const QString env = monitorSettings().worker;
  if (!env.isEmpty()) return env;
  return QCoreApplication::applicationDirPath() + QStringLiteral("/ddpdesk-worker");
}

QString RunController::workerProgram() const {
  return program_.isEmpty() ? defaultWorkerProgram() : program_;
}

bool RunController::isActive() const {
  return state_ == State::Starting || state_ == State::Running || state_ == State::Stopping;
}

bool RunController::isTerminal(State s) {
  return s == State::Finished || s == State::Stopped || s == State::Failed;
}

QString RunController::stateName(State s) {
  return QString::fromLatin1(QMetaEnum::fromType<State>().valueToKey(int(s)));
}

QString RunController::socketPath() const {
  return server_->socketPath();
}

int RunController::worldSize() const {
  return follower_ || slurm_ ? int(connected_.size()) : local_->size();
}

QList<qint64> RunController::pids() const {
  QList<qint64> out;
  if (follower_) {
    for (const RankState& r : followedRanks()) out.append(r.pid);
    return out;
  }
  for (const RankProcess* p : local_->ranks()) out.append(p->pid());
  return out;
}

std::vector<RunController::RankState> RunController::ranks() const {
  if (follower_) return followedRanks();
  std::vector<RankState> out;
  for (const RankProcess* p : local_->ranks()) {
    RankState r;
    r.rank = p->rank();
    r.pid = p->pid();
    r.running = p->isRunning();
    r.connected = connected_[p->rank()];
    r.exited = p->exitInfo().exited;
    r.crashed = p->exitInfo().crashed;
    r.exitCode = p->exitInfo().exitCode;
    r.signal = p->exitInfo().signal;
    r.exitText = p->describeExit();
    out.push_back(r);
  }
  return out;
}

// Forgets the previous run (its objects may still be delivering the signal that led here).
void RunController::resetRun(int world) {
  local_->clear();
  if (slurm_) {
    slurm_->disconnect(this);
    slurm_->deleteLater();
    slurm_ = nullptr;
  }
  launcher_status_.clear();
  if (follower_) {
    follower_->stop();
    follower_->disconnect(this);
    follower_->deleteLater();
    follower_ = nullptr;
  }
  if (mirror_) {
    mirror_->disconnect(this);
    mirror_->stop();
    mirror_->deleteLater();
    mirror_ = nullptr;
  }
  connected_.assign(world, false);
  rank_errors_.assign(world, QString());
  rank_stopped_.assign(world, false);
  stop_requested_ = false;
  term_sent_ = false;
  draining_ = false;
  has_failure_ = false;
  failure_ = Failure();
  reason_.clear();
  started_at_ = QDateTime::currentDateTime();
  ended_at_ = QDateTime();
  store_->clear();
  store_->setWorld(world);
}

void RunController::growWorld(int world) {
  if (world <= int(connected_.size())) return;
  connected_.resize(world, false);
  rank_errors_.resize(world);
  rank_stopped_.resize(world, false);
  spec_.nproc = world;
  store_->setWorld(world);
}

bool RunController::start(const RunSpec& given, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (isActive()) return fail(QStringLiteral("a run is already active"));
  const auto problems = validate(given);
  if (!problems.empty())
    return fail(QString::fromStdString(format_error(problems.front(), Spelling::JsonKey)));
  const QString program = workerProgram();
  const QFileInfo programInfo(program);
  // Through a login node with DDPDESK_REMOTE_WORKER, the worker is the cluster's, not this one.
  const bool workerElsewhere =
      given.is_slurm_via_login() && !monitorSettings().remoteWorker.isEmpty();
  if (!workerElsewhere && (!programInfo.isFile() || !programInfo.isExecutable()))
    return fail(QStringLiteral("worker program %1 not found or not executable").arg(program));

  attached_ = false;
  RunSpec spec = given;
  // Resuming a run directory continues it in place: one history entry, one curve.
  const QString resume = QString::fromStdString(spec.resume);
  if (spec.run_dir.empty() && !resume.isEmpty() && QFileInfo(resume).isDir() &&
      QFileInfo::exists(RunDirectory::specPath(resume)))
    spec.run_dir = QFileInfo(resume).absoluteFilePath().toStdString();
  QProcessEnvironment rankEnv = QProcessEnvironment::systemEnvironment();
  rankEnv.insert(extra_env_);
  if (const QString problem = localStartProblem(spec, rankEnv); !problem.isEmpty())
    return fail(problem);
  if (spec.is_slurm()) return startSlurm(spec, program, error);

  auto dir = std::make_unique<RunDirectory>();
  QString err;
  if (!dir->create(spec, &err)) return fail(err);
  spec.run_dir = dir->path().toStdString();
  const qint64 history = QFileInfo(RunDirectory::metricsPath(dir->path())).size();
  if (!dir->writeSpec(spec, &err)) return fail(err);
  dir->forgetEnding();
  if (!local_->prepare(&err)) return fail(err);
  if (!server_->listen(local_->token(), spec.nproc, &err)) return fail(err);

  spec_ = spec;
  dir_ = std::move(dir);
  run_dir_path_ = dir_->path();
  const int world = spec.nproc;
  resetRun(world);
  if (history > async_load_bytes_) {
    store_->loadJsonlAsync(RunDirectory::metricsPath(run_dir_path_));
  } else if (history > 0) {
    store_->loadJsonl(RunDirectory::metricsPath(run_dir_path_));
    store_->setWorld(world);
  }
  setState(State::Starting);

  const QStringList args = LocalRankLauncher::workerArguments(run_dir_path_, resume);
  local_->setExtraEnvironment(extra_env_);
  local_->create(world);
  // Launched after every object exists: a rank failing to start stops the others at once.
  dir_->logEvent(
      QStringLiteral("%1 %2 rank(s): %3 %4")
          .arg(resume.isEmpty() ? QStringLiteral("starting") : QStringLiteral("resuming"))
          .arg(world)
          .arg(program, args.join(QLatin1Char(' '))));
  for (int r = 0; r < world && isActive(); ++r)
    local_->startRank(r, program, args, server_->socketPath(),
                      RunDirectory::logPath(run_dir_path_, r), RankProcess::StopSignals::Blocked);
  return true;
}

void RunController::stop() {
  if (!isActive() || stop_requested_) return;
  stop_requested_ = true;
  if (slurm_) {
    stopSlurm(/*graceful=*/true);
    return;
  }
  if (follower_) {
    // A graceful stop: the ranks vote, checkpoint and write "stopped".
    if (signalFollowedRanks(SIGTERM) && (state_ == State::Starting || state_ == State::Running))
      setState(State::Stopping);
    return;
  }
  if (dir_) dir_->logEvent(QStringLiteral("stop requested"));
  beginStopping();
}

void RunController::kill() {
  if (!isActive()) return;
  stop_requested_ = true;
  if (slurm_) {
    stopSlurm(/*graceful=*/false);
    return;
  }
  if (follower_) {
    signalFollowedRanks(SIGKILL);  // their pids vanish: the follower ends the run
    return;
  }
  if (dir_) dir_->logEvent(QStringLiteral("kill requested"));
  if (state_ != State::Stopping) setState(State::Stopping);
  local_->killAll();
}

void RunController::beginStopping() {
  if (state_ == State::Starting || state_ == State::Running) setState(State::Stopping);
  if (term_sent_) return;
  term_sent_ = true;
  local_->terminateAll();
  grace_timer_.start(grace_ms_);
}

void RunController::onGraceExpired() {
  for (RankProcess* p : local_->ranks())
    if (p->isRunning()) {
      Q_EMIT warning(QStringLiteral("rank %1 did not stop within %2 s; killing it")
                         .arg(p->rank())
                         .arg(grace_ms_ / 1000.0));
      p->kill();
    }
}

void RunController::onMessages(const std::vector<wire::Message>& messages,
                               const QByteArray& lines) {
  if (dir_) dir_->appendMetrics(lines);
  store_->ingest(messages);
  for (const auto& m : messages) {
    const int rank = wire::rank_of(m);
    if (rank >= int(rank_errors_.size())) continue;
    if (const auto* ev = std::get_if<wire::Event>(&m)) {
      // A rank announcing a stop we did not ask for (SIGTERM from elsewhere): show it.
      if (ev->event == "stopping" && (state_ == State::Running || state_ == State::Starting))
        setState(State::Stopping);
      if (ev->event == "stopped") rank_stopped_[rank] = true;
    } else if (const auto* er = std::get_if<wire::Error>(&m)) {
      rank_errors_[rank] = QString::fromStdString(er->message);
    } else if (std::holds_alternative<wire::Step>(m) && state_ == State::Starting) {
      setState(State::Running);
    }
  }
}

void RunController::setState(State s) {
  if (s == state_) return;
  const State previous = state_;
  state_ = s;
  Q_EMIT stateChanged(s, previous);
  switch (s) {
    case State::Idle:
      break;
    case State::Starting:
      Q_EMIT starting();
      break;
    case State::Running:
      Q_EMIT running();
      break;
    case State::Stopping:
      Q_EMIT stopping();
      break;
    case State::Finished:
      Q_EMIT finished();
      break;
    case State::Stopped:
      Q_EMIT stopped(reason_);
      break;
    case State::Failed:
      Q_EMIT failed(reason_);
      break;
  }
}

}  // namespace ddpdesk
