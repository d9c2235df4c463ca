// LocalBackend (local_backend.h): starting the ranks on this machine, stopping and killing them,
// and how a local run ends: a rank's exit judged as the run's failure or as what the controller
// did to it, the wait for the last messages on the ranks' sockets, then the final state. Restarts
// after a failure: local_backend_restart.cpp.
#include "local/local_backend.h"

#include <QDateTime>
#include <QFileInfo>
#include <algorithm>
#include <csignal>

#include "exit_record.h"
#include "local/local_rank_launcher.h"
#include "local/rank_command.h"
#include "local/rank_process.h"
#include "local/script_rank.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "metrics/script_metrics.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {

// After the last rank exits its socket may still hold its final messages; wait this long at
// most for every connection to close before deciding how the run ended.
constexpr int kDrainMs = 3000;

}  // namespace

LocalBackend::LocalBackend(RunController& run)
    : RunBackend(run), launcher_(new LocalRankLauncher(this)) {
  connect(launcher_, &LocalRankLauncher::line, &run, &RunController::logLine);
  connect(launcher_, &LocalRankLauncher::rankStarted, &run, &RunController::rankStarted);
  connect(launcher_, &LocalRankLauncher::rankFinished, this, &LocalBackend::onRankFinished);
  drain_timer_.setSingleShot(true);
  connect(&drain_timer_, &QTimer::timeout, this, &LocalBackend::finalize);
  lone_timer_.setSingleShot(true);
  connect(&lone_timer_, &QTimer::timeout, this, &LocalBackend::loneRanksTimedOut);
  restart_timer_.setSingleShot(true);
  connect(&restart_timer_, &QTimer::timeout, this, &LocalBackend::restartNow);
}

LocalBackend::~LocalBackend() = default;

bool LocalBackend::start(const RunSpec& given, const QString& program, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  RunSpec spec = given;
  makeScriptPathsAbsolute(spec);
  auto dir = std::make_unique<RunDirectory>();
  QString err;
  if (!dir->create(spec, &err)) return fail(err);
  spec.run_dir = dir->path().toStdString();
  const qint64 history = QFileInfo(RunDirectory::metricsPath(dir->path())).size();
  if (!dir->writeSpec(spec, &err)) return fail(err);
  dir->forgetEnding();
  if (!launcher_->prepare(&err)) return fail(err);
  if (!server()->listen(launcher_->token(), spec.nproc, &err)) return fail(err);
  connect(server(), &MetricsServer::allDisconnected, this, [this] {
    if (draining_) finalize();
  });

  const TaskInfo* task = find_task(spec.task);
  spec_is_script_ = task && task->python_script;
  program_ = program;
  beginRun(spec, std::move(dir), history, spec.nproc);
  setState(State::Starting);

  launcher_->setExtraEnvironment(run().extraEnvironment());
  if (spec_is_script_) measureScript(spec);
  launchRanks(spec);
  return true;
}

void LocalBackend::launchRanks(const RunSpec& spec) {
  const int world = spec.nproc;
  launcher_->create(world);
  const QProcessEnvironment inherited = launcher_->rankEnvironment(0, world, QString());
  std::vector<RankCommand> commands;
  for (int r = 0; r < world; ++r) {
    commands.push_back(rankCommandFor(spec, program_, r, world, inherited));
    // As torchrun counts its restarts for the script (the worker needs no telling).
    if (spec_is_script_)
      commands.back().environment.insert(QStringLiteral("TORCHELASTIC_RESTART_COUNT"),
                                         QString::number(run().restarts()));
  }
  // Launched after every object exists: a rank failing to start stops the others at once.
  const QString verb = run().restarts() > 0  ? QStringLiteral("restarting")
                       : spec.resume.empty() ? QStringLiteral("starting")
                                             : QStringLiteral("resuming");
  dir()->logEvent(
      QStringLiteral("%1 %2 rank(s): %3").arg(verb).arg(world).arg(commands.front().text()));
  for (int r = 0; r < world && run().isActive(); ++r)
    launcher_->startRank(r, commands[r], server()->socketPath(),
                         RunDirectory::logPath(runDir(), r));
}

void LocalBackend::measureScript(const RunSpec& spec) {
  script_metrics_ = new ScriptMetrics(
      spec, runDir(),
      [this](int rank) { return rank < int(connected().size()) && connected()[rank]; },
      [this](int rank) { return std::int64_t(store()->rankInfo(rank).step); },
      [this](const std::vector<wire::Message>& messages) { ingestMeasured(messages); }, this);
  connect(launcher_, &LocalRankLauncher::line, script_metrics_,
          [m = script_metrics_](int rank, bool, const QString& text) { m->line(rank, text); });
  connect(launcher_, &LocalRankLauncher::rankStarted, script_metrics_, &ScriptMetrics::rankStarted);
  // For whoever follows the run from its directory, with no pid of its own to sample.
  QString error;
  if (!script_metrics_->recordSystemMetrics(RunDirectory::systemMetricsPath(runDir()), &error))
    Q_EMIT run().warning(error);
}

void LocalBackend::stop() {
  if (dir()) dir()->logEvent(QStringLiteral("stop requested"));
  if (cancelRestart(QStringLiteral("stopped by the user"))) return;
  beginStopping();
}

void LocalBackend::kill() {
  if (dir()) dir()->logEvent(QStringLiteral("kill requested"));
  if (cancelRestart(QStringLiteral("killed by the user"))) return;
  if (state() != State::Stopping) setState(State::Stopping);
  launcher_->killAll();
}

void LocalBackend::beginStopping() {
  if (state() == State::Starting || state() == State::Running) setState(State::Stopping);
  if (term_sent_) return;
  term_sent_ = true;
  launcher_->terminateAll();
  startGrace();
}

void LocalBackend::graceExpired() {
  for (RankProcess* p : launcher_->ranks())
    if (p->isRunning()) {
      Q_EMIT run().warning(QStringLiteral("rank %1 did not stop within %2 s; killing it")
                               .arg(p->rank())
                               .arg(run().gracePeriod() / 1000.0));
      p->kill();
    }
}

void LocalBackend::closing() {
  // No process of the run outlives the controller.
  launcher_->disconnect(this);
  launcher_->killAndReapAll();
  if (!dir() || !dir()->isOpen()) return;
  RunStatus s;
  s.state = RunController::stateName(State::Failed);
  s.reason =
      QStringLiteral("the monitor was closed while the run was active; its ranks were killed");
  for (RankProcess* p : launcher_->ranks()) {
    s.exitCodes.append(p->exitInfo().crashed ? -1 : p->exitInfo().exitCode);
    s.termSignals.append(p->exitInfo().signal);
  }
  s.startedAt = run().startedAt();
  s.endedAt = QDateTime::currentDateTime();
  dir()->writeStatus(s);
}

void LocalBackend::retire() {
  drain_timer_.stop();
  restart_timer_.stop();
  delete script_metrics_;
  script_metrics_ = nullptr;
  launcher_->clear();
}

int LocalBackend::worldSize() const {
  return launcher_->size();
}

std::vector<RunBackend::RankState> LocalBackend::ranks() const {
  std::vector<RankState> out;
  for (const RankProcess* p : launcher_->ranks()) {
    RankState r;
    r.rank = p->rank();
    r.pid = p->pid();
    r.running = p->isRunning();
    r.connected = connected()[p->rank()];
    r.exited = p->exitInfo().exited;
    r.crashed = p->exitInfo().crashed;
    r.exitCode = p->exitInfo().exitCode;
    r.signal = p->exitInfo().signal;
    r.exitText = p->describeExit();
    out.push_back(r);
  }
  return out;
}

void LocalBackend::recordFailure(const RankProcess& p) {
  hasFailure() = true;
  const auto& x = p.exitInfo();
  RunController::Failure& f = failure();
  f.rank = p.rank();
  f.exitCode = x.crashed || x.startFailed ? -1 : x.exitCode;
  f.signal = x.crashed ? x.signal : 0;
  f.what = QStringLiteral("rank %1 %2").arg(p.rank()).arg(p.describeExit());
  f.errorMessage = QString::fromStdString(rankErrors()[p.rank()].message);
  f.peerLost = rankErrors()[p.rank()].peer;
  f.stderrTail = p.stderrTail();
}

void LocalBackend::blameThePeerThatDiedFirst() {
  const RunController::Failure& f = failure();
  if (f.peerLost < 0) return;
  const RankProcess* peer = launcher_->rank(f.peerLost);
  if (!peer || peer->rank() == f.rank) return;
  const auto& x = peer->exitInfo();
  if (!x.exited || x.killedByUs || x.startFailed || (!x.crashed && x.exitCode == 0)) return;
  recordFailure(*peer);
}

void LocalBackend::blameARankThatEndedUnsaid() {
  // A script without the client never connects, and says nothing of its end: exit 0 is its word
  // (python-scripts.md). A stop we sent may reach a rank before it connected.
  if (spec_is_script_ || term_sent_) return;
  for (const RankProcess* p : launcher_->ranks()) {
    const int rank = p->rank();
    const auto& x = p->exitInfo();
    if (!x.exited || x.crashed || x.startFailed || x.killedByUs || x.exitCode != 0) continue;
    if (rankFinished()[rank] || rankStopped()[rank]) continue;
    // Its socket lines may have been dropped (a monitor that did not read): its exit record says.
    const auto record = read_exit_record(exit_record_path(runDir().toStdString(), rank));
    if (record && (record->outcome == "finished" || record->outcome == "stopped")) continue;
    recordFailure(*p);
    failure().what += connected()[rank]
                          ? QStringLiteral(" without a finished event (its training did not end)")
                          : QStringLiteral(" without ever connecting to the monitor");
    return;
  }
}

void LocalBackend::onRankFinished(int rank) {
  RankProcess* p = launcher_->rank(rank);
  const auto& x = p->exitInfo();
  Q_EMIT run().rankExited(rank, p->describeExit());
  if (script_metrics_) script_metrics_->rankEnded(rank);
  if (dir())
    dir()->logEvent(
        QStringLiteral("rank %1 (pid %2) %3").arg(rank).arg(p->pid()).arg(p->describeExit()));
  // What we did to it ourselves is not its failure: SIGKILL after the grace period, a worker
  // dying of the SIGTERM we sent before its handler was installed, or one exiting 128+SIGTERM
  // because another signal reached it too (the worker's "second signal: exit now").
  const bool ourSignal =
      (x.crashed && (x.killedByUs || (term_sent_ && x.signal == SIGTERM))) ||
      (!x.crashed && term_sent_ && (x.exitCode == 128 + SIGTERM || x.exitCode == 128 + SIGINT));
  // A stop signal nobody here sent (a user's `kill`, scancel, an agent) is someone stopping
  // the run, not a failure: a Python script without the client dies of it, Python's default.
  // The other ranks are stopped too: they would wait for this one in their next collective.
  const bool stopSignal = x.crashed ? (x.signal == SIGTERM || x.signal == SIGINT)
                                    : (x.exitCode == 128 + SIGTERM || x.exitCode == 128 + SIGINT);
  if (!ourSignal && stopSignal && !x.startFailed) {
    stopped_from_outside_ = true;
    beginStopping();
    maybeFinish();
    return;
  }
  const bool bad = !ourSignal && (x.startFailed || x.crashed || x.exitCode != 0);
  if (bad && !hasFailure()) {
    recordFailure(*p);
    beginStopping();
  } else if (bad && x.crashed && failure().signal == 0 && failure().exitCode > 0) {
    // Ranks fail together: when one is killed (the OOM killer, a crash), its peers see it vanish
    // and exit with an error of their own, and the monitor may reap one of them first. A death
    // by a signal nobody here sent is the cause, never the consequence: it takes the blame from
    // a rank that only exited with an error code.
    recordFailure(*p);
  }
  if (!bad && !ourSignal) watchLoneRanks(rank);
  maybeFinish();
}

void LocalBackend::watchLoneRanks(int rank) {
  if (!spec_is_script_ || term_sent_ || hasFailure() || launcher_->allExited() ||
      lone_timer_.isActive())
    return;
  first_done_ = rank;
  lone_warned_ = false;
  // Ranks that end together end within moments of each other: say nothing for those.
  const int timeoutMs = int(spec().collective_timeout * 1000);
  lone_timer_.start(std::min(5000, timeoutMs / 2));
}

QString LocalBackend::runningRanks() const {
  QStringList running;
  for (const RankProcess* p : launcher_->ranks())
    if (p->isRunning()) running << QString::number(p->rank());
  return running.join(QLatin1Char(' '));
}

void LocalBackend::loneRanksTimedOut() {
  if (term_sent_ || hasFailure() || launcher_->allExited()) return;
  const int timeoutMs = int(spec().collective_timeout * 1000);
  if (!lone_warned_) {
    lone_warned_ = true;
    Q_EMIT run().warning(QStringLiteral("rank %1 ended while rank(s) %2 still run; they are "
                                        "stopped if they have not ended %3 s after it "
                                        "(collective_timeout)")
                             .arg(first_done_)
                             .arg(runningRanks())
                             .arg(spec().collective_timeout));
    lone_timer_.start(std::max(0, timeoutMs - lone_timer_.interval()));
    return;
  }
  const QString running = runningRanks();
  hasFailure() = true;
  RunController::Failure& f = failure();
  f.rank = running.section(QLatin1Char(' '), 0, 0).toInt();
  f.exitCode = -1;
  f.signal = 0;
  f.what = QStringLiteral(
               "rank(s) %1 still ran %2 s after rank %3 ended (waiting for it in a "
               "collective?)")
               .arg(running)
               .arg(spec().collective_timeout)
               .arg(first_done_);
  f.errorMessage.clear();
  f.stderrTail.clear();
  beginStopping();
}

void LocalBackend::maybeFinish() {
  if (!launcher_->allExited()) return;
  lone_timer_.stop();
  if (script_metrics_) script_metrics_->finish();
  stopGrace();
  if (draining_) return;
  draining_ = true;
  if (server()->connectionCount() == 0)
    finalize();
  else
    drain_timer_.start(kDrainMs);
}

void LocalBackend::finalize() {
  if (!draining_) return;
  draining_ = false;
  drain_timer_.stop();
  store()->flush();
  // The rank's last words may have arrived on its socket after its exit was seen.
  RunController::Failure& f = failure();
  if (hasFailure() && f.errorMessage.isEmpty()) {
    f.errorMessage = QString::fromStdString(rankErrors()[f.rank].message);
    f.peerLost = rankErrors()[f.rank].peer;
  }
  if (hasFailure()) blameThePeerThatDiedFirst();
  if (!hasFailure()) blameARankThatEndedUnsaid();
  if (hasFailure() && restartIfDue()) return;

  QStringList killed;
  bool anyStopped = false;
  for (const RankProcess* p : launcher_->ranks()) {
    if (p->exitInfo().killedByUs) killed << QString::number(p->rank());
    if (rankStopped()[p->rank()]) anyStopped = true;
  }
  State final = State::Finished;
  QString why;
  if (hasFailure()) {
    final = State::Failed;
    why = failureText(restart_note_);
  } else if (stopRequested() || anyStopped || stopped_from_outside_ || !killed.isEmpty()) {
    final = State::Stopped;
    const RunProgress progress = store()->progress();
    why = stopRequested()
              ? QStringLiteral("stopped by the user at step %1").arg(progress.step)
              : QStringLiteral("the ranks stopped at step %1 (signalled from outside the monitor)")
                    .arg(progress.step);
    if (!killed.isEmpty())
      why += QStringLiteral("; rank(s) %1 had to be killed").arg(killed.join(QStringLiteral(", ")));
  }
  endRun(final, why, endingStatus());
}

QString LocalBackend::failureText(const QString& note) const {
  const RunController::Failure& f = failure();
  QString why = f.what;
  if (!f.errorMessage.isEmpty()) why += QStringLiteral(": ") + f.errorMessage;
  if (!note.isEmpty()) why += QStringLiteral(" (%1)").arg(note);
  if (!f.stderrTail.isEmpty())
    why += QStringLiteral("\nlast stderr lines of rank %1:\n  ").arg(f.rank) +
           f.stderrTail.join(QStringLiteral("\n  "));
  return why;
}

RunStatus LocalBackend::endingStatus() const {
  RunStatus s;
  for (const RankProcess* p : launcher_->ranks()) {
    const auto& x = p->exitInfo();
    s.exitCodes.append(x.crashed || x.startFailed ? -1 : x.exitCode);
    s.termSignals.append(x.crashed ? x.signal : 0);
  }
  s.malformedLines = server()->counters().malformed;
  s.ignoredLines = server()->counters().ignored;
  s.unknownFields = server()->counters().unknownFields;
  s.droppedConnections = server()->counters().dropped;
  return s;
}

}  // namespace ddpdesk
