// LocalBackend's restarts (local_backend.h; spec max_restarts, docs/recovery.md): after a failure
// that its restart policy allows, the ranks start again from the run's newest checkpoint, after a
// delay during which a stop cancels the restart and ends the run.
#include "local/local_backend.h"

#include "local/local_rank_launcher.h"
#include "metrics/metrics_store.h"
#include "metrics/script_metrics.h"
#include "run/restart_policy.h"
#include "run/run_directory.h"

namespace ddpdesk {

bool LocalBackend::restartIfDue() {
  const RestartPlan plan =
      planRestart(spec(), run().restarts(), failure(), trained(), stopRequested());
  restart_note_ = plan.note;
  if (!plan.restart) return false;
  const QString cause = failureText(QString()).section(QLatin1Char('\n'), 0, 0);
  dir()->logEvent(restartLine(plan.attempt, spec().max_restarts, plan.delayMs,
                              store()->progress().step, cause));
  announceRestart(plan.attempt, spec().max_restarts, cause, plan.delayMs);
  restart_timer_.start(plan.delayMs);
  return true;
}

void LocalBackend::restartNow() {
  if (!run().isActive()) return;
  beginRestart();
  term_sent_ = false;
  stopped_from_outside_ = false;
  first_done_ = -1;
  lone_warned_ = false;
  restart_note_.clear();
  QString err;
  if (!launcher_->choosePort(&err)) {
    hasFailure() = true;
    failure().what = QStringLiteral("could not restart: %1").arg(err);
    endRun(State::Failed, failure().what, endingStatus());
    return;
  }
  // From the newest checkpoint this run wrote; before its first one, from where it began (a
  // resume's source, or nothing: the same seed gives the same steps). A script is told the run
  // directory and finds its own.
  RunSpec s = spec();
  const auto record = RunDirectory::readRecord(runDir());
  if (spec_is_script_ || (record && !record->checkpoints.isEmpty()))
    s.resume = runDir().toStdString();
  if (script_metrics_) script_metrics_->restart();
  launchRanks(s);
}

bool LocalBackend::cancelRestart(const QString& how) {
  if (!restart_timer_.isActive()) return false;
  restart_timer_.stop();
  const QString why = QStringLiteral("%1 while waiting to restart after: %2")
                          .arg(how, failureText(QString()).section(QLatin1Char('\n'), 0, 0));
  hasFailure() = false;
  endRun(State::Stopped, why, endingStatus());
  return true;
}

}  // namespace ddpdesk
