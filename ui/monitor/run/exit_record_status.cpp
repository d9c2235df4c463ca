#include "run/exit_record_status.h"

#include <QFileInfo>
#include <QStringList>
#include <cmath>
#include <vector>

#include "exit_record.h"

namespace ddpdesk {

std::optional<RunStatus> statusFromExitRecords(const QString& dir, int world) {
  std::vector<std::optional<ExitRecord>> records;
  bool monitorGone = false;
  QDateTime ended;
  for (int rank = 0; rank < world; ++rank) {
    const std::string path = exit_record_path(dir.toStdString(), rank);
    records.push_back(read_exit_record(path));
    if (!records.back()) continue;
    monitorGone |= records.back()->monitor_gone;
    const QDateTime when = QFileInfo(QString::fromStdString(path)).lastModified();
    if (!ended.isValid() || when > ended) ended = when;
  }
  if (!monitorGone) return std::nullopt;

  RunStatus s;
  s.endedAt = ended;
  s.lastLoss = std::nan("");
  QStringList missing, failures;
  bool allFinished = true;
  QString checkpoint;
  for (int rank = 0; rank < world; ++rank) {
    const auto& r = records[std::size_t(rank)];
    s.exitCodes << (r ? r->exit_code : -1);
    s.termSignals << 0;
    if (!r) {
      missing << QString::number(rank);
      allFinished = false;
      continue;
    }
    s.lastStep = std::max<qint64>(s.lastStep, r->step);
    if (!r->checkpoint.empty()) checkpoint = QString::fromStdString(r->checkpoint);
    if (r->outcome == "failed")
      failures << QStringLiteral("rank %1: %2").arg(rank).arg(QString::fromStdString(r->reason));
    allFinished &= r->outcome == "finished";
  }

  const QString died = QStringLiteral("the monitor died during the run");
  if (!failures.isEmpty() || !missing.isEmpty()) {
    s.state = QStringLiteral("Failed");
    QStringList lines{died};
    if (!missing.isEmpty())
      lines << QStringLiteral("rank(s) %1 left no exit record (killed outright)")
                   .arg(missing.join(QStringLiteral(", ")));
    lines += failures;
    s.reason = lines.join(QLatin1Char('\n'));
  } else if (allFinished) {
    s.state = QStringLiteral("Finished");
    s.reason = died + QStringLiteral("; the ranks still finished at step %1").arg(s.lastStep);
  } else {
    s.state = QStringLiteral("Stopped");
    s.reason = died + QStringLiteral("; every rank stopped at step %1").arg(s.lastStep) +
               (checkpoint.isEmpty() ? QStringLiteral(" (no checkpoint was written)")
                                     : QStringLiteral(" and rank 0 checkpointed to ") + checkpoint);
  }
  return s;
}

}  // namespace ddpdesk
