#include "slurm/slurm_job.h"

#include <QFileInfo>

#include "slurm/cluster_command.h"
#include "slurm/slurm_submit_check.h"

namespace ddpdesk {
namespace {

// A job neither squeue, scontrol nor sacct knows for this many polls in a row is given up on.
constexpr int kLostPolls = 5;
}  // namespace

SlurmJob::SlurmJob(QObject* parent) : QObject(parent), commands_(new ClusterCommand(this)) {
  poll_.setInterval(1000);
  connect(&poll_, &QTimer::timeout, this, &SlurmJob::poll);
}

SlurmJob::~SlurmJob() = default;

void SlurmJob::submit(const QString& scriptPath) {
  const QFileInfo script(scriptPath);
  // --chdir: the run directory, so relative paths in extra options mean what they say there.
  commands_->run({QStringLiteral("sbatch"), QStringLiteral("--parsable"),
                  QStringLiteral("--chdir=") + script.absolutePath(), script.absoluteFilePath()},
                 [this](const ClusterCommand::Result& r) {
                   // --parsable: "ID" or "ID;cluster".
                   const QString id =
                       QString::fromLocal8Bit(r.out).trimmed().section(QLatin1Char(';'), 0, 0);
                   bool numeric = false;
                   id.toLongLong(&numeric);
                   if (!r.ok() || !numeric) {
                     Q_EMIT submitFailed(r.ok() ? QStringLiteral("sbatch printed no job id: '%1'")
                                                      .arg(QString::fromLocal8Bit(r.out).trimmed())
                                                : sbatchFailure(r));
                     return;
                   }
                   Q_EMIT submitted(id);
                   track(id);
                 });
}

void SlurmJob::track(const QString& jobId) {
  id_ = jobId;
  ended_ = false;
  known_ = false;
  lost_polls_ = 0;
  status_ = SlurmJobStatus();
  ran_restarts_ = -1;
  poll();
  poll_.start();
}

void SlurmJob::poll() {
  if (querying_ || ended_ || id_.isEmpty()) return;
  querying_ = true;
  // RestartCnt: a requeue whose pending moment fell between two polls is still seen.
  commands_->run(
      {QStringLiteral("squeue"), QStringLiteral("-h"), QStringLiteral("-j"), id_,
       QStringLiteral("-O"), QStringLiteral("State:0|,Reason:0|,NodeList:0|,RestartCnt:0")},
      [this](const ClusterCommand::Result& r) {
        const auto s = parseSqueue(QString::fromLocal8Bit(r.out));
        // Listed and not ended: that is all. Ended or not listed (squeue says
        // "Invalid job id" for a job slurmctld forgot): ask what became of it.
        if (r.ok() && s && !s->ended()) {
          querying_ = false;
          lost_polls_ = 0;
          update(*s, QStringLiteral("squeue"));
          return;
        }
        if (!r.started || r.timedOut) {
          querying_ = false;
          Q_EMIT warning(r.problem());
          return;
        }
        askAfterQueue();
      });
}

void SlurmJob::askAfterQueue() {
  commands_->run({QStringLiteral("scontrol"), QStringLiteral("show"), QStringLiteral("job"), id_},
                 [this](const ClusterCommand::Result& r) {
                   const auto s =
                       r.ok() ? parseScontrolJob(QString::fromLocal8Bit(r.out)) : std::nullopt;
                   if (!s) {
                     askSacct();
                     return;
                   }
                   querying_ = false;
                   update(*s, QStringLiteral("scontrol"));
                 });
}

void SlurmJob::askSacct() {
  commands_->run(
      {QStringLiteral("sacct"), QStringLiteral("-n"), QStringLiteral("-X"), QStringLiteral("-P"),
       QStringLiteral("-j"), id_, QStringLiteral("-o"), QStringLiteral("State,ExitCode,NodeList")},
      [this](const ClusterCommand::Result& r) {
        querying_ = false;
        const auto s = r.ok() ? parseSacct(QString::fromLocal8Bit(r.out)) : std::nullopt;
        if (s) {
          update(*s, QStringLiteral("sacct"));
          return;
        }
        // Not yet visible (just submitted) or forgotten everywhere.
        if (++lost_polls_ < kLostPolls) return;
        SlurmJobStatus lost;
        lost.state = SlurmJobStatus::State::Failed;
        lost.slurmState = QStringLiteral("UNKNOWN");
        lost.reason = QStringLiteral(
                          "job %1 left the queue and neither scontrol nor sacct "
                          "knows how it ended (sacct: %2)")
                          .arg(id_, r.problem());
        update(lost, QStringLiteral("none"));
      });
}

// Slurm never reports a job on its way back to the queue as ended (22.05, `scontrol requeue`,
// loaded or not): the killed attempt is COMPLETING with its restart count already grown (for
// seconds on a loaded machine), then the job is PENDING (BeginTime, or held), and a requeue's own
// state words (REQUEUED, REQUEUE_HOLD, SPECIAL_EXIT) are pending. So that COMPLETING is pending
// again (REQUEUED, with Slurm's reason), and a report of an ended job is its end, with its count
// grown too: a requeued job that fails again (between two polls, or refused at its new start) is
// failed at once.
void SlurmJob::update(const SlurmJobStatus& given, const QString& source) {
  SlurmJobStatus s = given;
  if (s.slurmState == QLatin1String("COMPLETING") && ran_restarts_ >= 0 &&
      s.restarts > ran_restarts_) {
    s.state = SlurmJobStatus::State::Pending;
    s.slurmState = QStringLiteral("REQUEUED");
  }
  if (s.slurmState == QLatin1String("RUNNING")) ran_restarts_ = s.restarts;
  const bool changed = !known_ || s.state != status_.state || s.reason != status_.reason ||
                       s.nodes != status_.nodes || s.slurmState != status_.slurmState ||
                       s.restarts != status_.restarts;
  known_ = true;
  status_ = s;
  if (changed) Q_EMIT statusChanged(status_);
  if (s.ended() && !ended_) {
    ended_ = true;
    end_source_ = source;
    poll_.stop();
    Q_EMIT ended(status_);
  }
}

void SlurmJob::stop() {
  if (id_.isEmpty() || ended_) return;
  stopRound(0);
}

// The state seen last may be stale (a poll up to a second old, later under load), so each scancel
// asks slurmctld itself with --state: a running job's steps get the signal (its ranks vote,
// checkpoint and exit 0), never a cancel that would kill them without a checkpoint; a pending job
// is cancelled, and only while it still is. Signalling a pending job is no way to find out:
// scancel retries Slurm's "Job is pending execution" for about 30 s before it gives up. A job that
// starts between the two questions matches neither: the signal is asked once more (its ranks also
// find the stop file as they start). -v makes scancel say what it did ("Signal 15 to job N",
// "Terminating job N"); a filter that matches nothing is an error line with exit status 0.
void SlurmJob::stopRound(int round) {
  const auto said = [this](const ClusterCommand::Result& r, const QString& what) {
    return r.ok() && QString::fromUtf8(r.err + r.out).contains(what + id_);
  };
  commands_->run({QStringLiteral("scancel"), QStringLiteral("-v"),
                  QStringLiteral("--state=RUNNING"), QStringLiteral("--signal=TERM"), id_},
                 [this, round, said](const ClusterCommand::Result& r) {
                   if (ended_) return;
                   if (said(r, QStringLiteral("Signal 15 to job "))) {
                     Q_EMIT stopSent(false);
                     return;
                   }
                   if (!r.ok()) {
                     Q_EMIT warning(QStringLiteral("scancel: ") + r.problem());
                     return;
                   }
                   if (round > 0)
                     return;  // neither pending nor running now: it is ending on its own
                   commands_->run({QStringLiteral("scancel"), QStringLiteral("-v"),
                                   QStringLiteral("--state=PENDING"), id_},
                                  [this, said](const ClusterCommand::Result& c) {
                                    if (ended_) return;
                                    if (said(c, QStringLiteral("Terminating job ")))
                                      Q_EMIT stopSent(true);
                                    else if (!c.ok())
                                      Q_EMIT warning(QStringLiteral("scancel: ") + c.problem());
                                    else
                                      stopRound(1);
                                  });
                 });
}

void SlurmJob::cancel() {
  if (id_.isEmpty() || ended_) return;
  commands_->run({QStringLiteral("scancel"), id_}, [this](const ClusterCommand::Result& r) {
    if (!r.ok()) Q_EMIT warning(QStringLiteral("scancel: ") + r.problem());
  });
}

}  // namespace ddpdesk
