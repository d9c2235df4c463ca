#include "run/run_controller.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMetaEnum>
#include <algorithm>

#include "checks/local_start_check.h"
#include "follow/followed_backend.h"
#include "hang/stall_watch.h"
#include "local/local_backend.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/end_command.h"
#include "run/monitor_settings.h"
#include "run/run_backend.h"
#include "run/run_directory.h"
#include "slurm/slurm_backend.h"
#include "slurm/slurm_run_files.h"
#include "ssh/ssh_followed_backend.h"
#include "ssh/ssh_target.h"

namespace ddpdesk {

RunController::RunController(QObject* parent)
    : QObject(parent),
      server_(new MetricsServer(this)),
      store_(new MetricsStore(this)),
      end_commands_(new EndCommands(this)),
      stall_watch_(new StallWatch(this)),
      doctor_(nullptr),
      backend_(std::make_unique<LocalBackend>(*this)) {
  setUpHangDoctor();
  grace_timer_.setSingleShot(true);
  connect(&grace_timer_, &QTimer::timeout, this, [this] { backend_->graceExpired(); });

  connect(server_, &MetricsServer::peerAuthenticated, this,
          [this](const wire::Hello& h) { rankConnectedNow(h.rank); });
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
  connect(store_, &MetricsStore::nonFiniteLoss, this, [this](int rank, qint64 step) {
    Q_EMIT warning(QStringLiteral("rank %1 reported a non-finite loss (NaN or infinity) at step "
                                  "%2")
                       .arg(rank)
                       .arg(step));
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
  server_->disconnect(this);
  // A local run's ranks are killed and reaped; a submitted Slurm job runs on.
  if (isActive()) backend_->closing();
  server_->close();
}

QString RunController::defaultWorkerProgram() {
  const QString env = monitorSettings().worker;
  if (!env.isEmpty()) return env;
  // scripts/build.sh puts a worker built against a CUDA LibTorch beside the CPU one: it trains
  // on the CPU as well, so it runs every run (docs/gpu.md).
  const QString dir = QCoreApplication::applicationDirPath();
  const QFileInfo cuda(dir + QStringLiteral("/ddpdesk-worker-cuda"));
  if (cuda.isFile() && cuda.isExecutable()) return cuda.filePath();
  return dir + QStringLiteral("/ddpdesk-worker");
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

QString RunController::runName() const {
  const QString name = QString::fromStdString(spec_.name);
  return name.isEmpty() ? QFileInfo(run_dir_path_).fileName() : name;
}

QString RunController::socketPath() const {
  return server_->socketPath();
}

int RunController::worldSize() const {
  return backend_->worldSize();
}

QList<qint64> RunController::pids() const {
  return backend_->pids();
}

std::vector<RunController::RankState> RunController::ranks() const {
  return backend_->ranks();
}

bool RunController::isRemote() const {
  return backend_->isRemote();
}

SlurmJob* RunController::slurmJob() const {
  return backend_->slurmJob();
}

RunFollower* RunController::follower() const {
  return backend_->follower();
}

bool RunController::begin(std::unique_ptr<RunBackend> backend,
                          const std::function<bool(RunBackend&)>& how) {
  RunBackend& b = *backend;
  incoming_ = std::move(backend);
  const bool began = how(b);
  incoming_.reset();  // not taken by beginRun()/beginFollowing(): the previous run's stays
  return began;
}

// Forgets the previous run, and its backend (whose objects may still be delivering the signal
// that led here).
void RunController::resetRun(int world) {
  if (incoming_) {
    RunBackend* old = backend_.release();
    old->retire();
    old->disconnect(this);
    server_->disconnect(old);
    store_->disconnect(old);
    disconnect(old);
    old->deleteLater();
    backend_ = std::move(incoming_);
  }
  grace_timer_.stop();
  launcher_status_.clear();
  connected_.assign(world, false);
  rank_errors_.assign(world, wire::Error{-1, {}, -1});
  rank_stopped_.assign(world, false);
  rank_finished_.assign(world, false);
  stop_requested_ = false;
  stop_signal_ = 0;
  has_failure_ = false;
  trained_ = false;
  restarts_ = 0;
  failure_ = Failure();
  reason_.clear();
  metrics_incomplete_.clear();
  started_at_ = QDateTime::currentDateTime();
  ended_at_ = QDateTime();
  store_->clear();
  store_->setWorld(world);
  stall_watch_->begin(world, spec_.collective_timeout);
}

void RunController::beginRun(const RunSpec& spec, std::unique_ptr<RunDirectory> dir, qint64 history,
                             int world) {
  spec_ = spec;
  dir_ = std::move(dir);
  run_dir_path_ = dir_->path();
  resetRun(world);
  // A continued run: its earlier messages first (large ones on a worker thread).
  if (history > async_load_bytes_) {
    store_->loadJsonlAsync(RunDirectory::metricsPath(run_dir_path_));
  } else if (history > 0) {
    store_->loadJsonl(RunDirectory::metricsPath(run_dir_path_));
    store_->setWorld(world);
  }
}

void RunController::beginFollowing(const QString& where, const RunSpec& spec) {
  dir_.reset();  // nothing is written into a followed directory
  run_dir_path_ = where;
  spec_ = spec;
  spec_.run_dir = where.toStdString();
  spec_.on_end.clear();  // a command from a spec.json this monitor did not write never runs
  resetRun(0);
  spec_.nproc = 0;
}

void RunController::beginRestart() {
  const int world = int(connected_.size());
  connected_.assign(world, false);
  rank_errors_.assign(world, wire::Error{-1, {}, -1});
  rank_stopped_.assign(world, false);
  rank_finished_.assign(world, false);
  has_failure_ = false;
  failure_ = Failure();
  ++restarts_;
  stall_watch_->begin(world, spec_.collective_timeout);
  setState(State::Starting);
}

void RunController::growWorld(int world) {
  if (world <= int(connected_.size())) return;
  connected_.resize(world, false);
  rank_errors_.resize(world, wire::Error{-1, {}, -1});
  rank_stopped_.resize(world, false);
  rank_finished_.resize(world, false);
  spec_.nproc = world;
  store_->setWorld(world);
}

void RunController::rankConnectedNow(int rank) {
  if (rank < 0 || rank >= int(connected_.size())) return;
  connected_[rank] = true;
  Q_EMIT rankConnected(rank);
  const bool all = std::all_of(connected_.begin(), connected_.end(), [](bool b) { return b; });
  if (all && state_ == State::Starting) setState(State::Running);
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
  RunSpec spec = with_restart_checkpoints(given);
  // Resuming a run directory continues it in place: one history entry, one curve.
  spec.run_dir = RunDirectory::continuedPath(spec).toStdString();
  QProcessEnvironment rankEnv = QProcessEnvironment::systemEnvironment();
  rankEnv.insert(extra_env_);
  if (const QString problem = localStartProblem(spec, rankEnv); !problem.isEmpty())
    return fail(problem);
  std::unique_ptr<RunBackend> backend;
  if (spec.is_slurm())
    backend = std::make_unique<SlurmBackend>(*this);
  else
    backend = std::make_unique<LocalBackend>(*this);
  return begin(std::move(backend), [&](RunBackend& b) { return b.start(spec, program, error); });
}

bool RunController::attach(const QString& where, QString* error) {
  if (isActive()) {
    if (error) *error = QStringLiteral("a run is already active");
    return false;
  }
  std::unique_ptr<RunBackend> backend;
  if (SshTarget::looksLikeUrl(where)) {
    backend = std::make_unique<SshFollowedBackend>(*this);
  } else if (!QFileInfo(where).isDir()) {
    if (error) *error = QStringLiteral("invalid --attach '%1': not a directory").arg(where);
    return false;
  } else if (readSlurmRecord(QFileInfo(where).absoluteFilePath())) {
    backend = std::make_unique<SlurmBackend>(*this);
  } else {
    backend = std::make_unique<FollowedBackend>(*this);
  }
  if (!begin(std::move(backend), [&](RunBackend& b) { return b.attach(where, error); }))
    return false;
  attached_ = true;
  return true;
}

void RunController::stop() {
  if (!isActive() || stop_requested_) return;
  stop_requested_ = true;
  backend_->stop();
}

void RunController::kill() {
  if (!isActive()) return;
  stop_requested_ = true;
  backend_->kill();
}

void RunController::startGrace() {
  grace_timer_.start(grace_ms_);
}

void RunController::stopGrace() {
  grace_timer_.stop();
}

void RunController::onMessages(const std::vector<wire::Message>& messages,
                               const QByteArray& lines) {
  // A full disk: one warning, the file cut back to whole lines, and the end summary says so.
  if (dir_ && !dir_->appendMetrics(lines) && metrics_incomplete_.isEmpty() &&
      !dir_->metricsError().isEmpty()) {
    metrics_incomplete_ = dir_->metricsError();
    Q_EMIT warning(metrics_incomplete_ +
                   QStringLiteral("; the run's later messages are not kept in it"));
  }
  store_->ingest(messages);
  for (const auto& m : messages) {
    const int rank = wire::rank_of(m);
    if (rank >= int(rank_errors_.size())) continue;
    if (!std::holds_alternative<wire::Gauge>(m) && !std::holds_alternative<wire::Hello>(m))
      stall_watch_->heard(rank, std::holds_alternative<wire::Step>(m));
    if (const auto* ev = std::get_if<wire::Event>(&m)) {
      // A rank announcing a stop we did not ask for (SIGTERM from elsewhere): show it.
      if (ev->event == "stopping" && (state_ == State::Running || state_ == State::Starting))
        setState(State::Stopping);
      if (ev->event == "stopped") rank_stopped_[rank] = true;
      if (ev->event == "finished") rank_finished_[rank] = true;
    } else if (const auto* er = std::get_if<wire::Error>(&m)) {
      rank_errors_[rank] = *er;
    } else if (std::holds_alternative<wire::Step>(m)) {
      trained_ = true;
      if (state_ == State::Starting) setState(State::Running);
    }
  }
}

void RunController::setState(State s) {
  if (s == state_) return;
  const State previous = state_;
  state_ = s;
  if (s == State::Stopping || isTerminal(s)) stall_watch_->end();
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
