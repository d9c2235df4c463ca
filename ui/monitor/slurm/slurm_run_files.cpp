#include "slurm/slurm_run_files.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include "follow/run_follower.h"
#include "run/atomic_file.h"

namespace ddpdesk {
namespace {

QStringList rankLogs(const QString& runDir) {
  static const QRegularExpression name(QStringLiteral("^rank-\\d{1,7}\\.log$"));
  QStringList out;
  for (const QString& f : QDir(runDir).entryList({QStringLiteral("rank-*.log")}, QDir::Files))
    if (name.match(f).hasMatch()) out << f;
  return out;
}

QJsonObject readObject(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object()
                                     : QJsonObject();
}

}  // namespace

QString slurmRecordPath(const QString& runDir) {
  return runDir + QStringLiteral("/slurm.json");
}

std::optional<SlurmRecord> readSlurmRecord(const QString& runDir) {
  const QJsonObject o = readObject(slurmRecordPath(runDir));
  SlurmRecord r;
  r.jobId = o.value(QStringLiteral("job_id")).toString();
  bool numeric = false;
  r.jobId.toLongLong(&numeric);
  if (!numeric) return std::nullopt;
  for (const QJsonValue& v : o.value(QStringLiteral("earlier_jobs")).toArray())
    r.earlierJobs << v.toString();
  r.login = o.value(QStringLiteral("login")).toString();
  r.remoteDir = o.value(QStringLiteral("remote_dir")).toString();
  return r;
}

bool writeSlurmRecord(const QString& runDir, const QString& jobId, const QString& login,
                      const QString& remoteDir, QString* error) {
  const QJsonObject old = readObject(slurmRecordPath(runDir));
  QJsonArray earlier = old.value(QStringLiteral("earlier_jobs")).toArray();
  if (old.contains(QStringLiteral("job_id"))) earlier.append(old.value(QStringLiteral("job_id")));
  QJsonObject record{
      {QStringLiteral("job_id"), jobId},
      {QStringLiteral("submitted_at"), QDateTime::currentDateTime().toString(Qt::ISODateWithMs)},
      {QStringLiteral("script"), QStringLiteral("job.sbatch")},
      {QStringLiteral("earlier_jobs"), earlier}};
  if (!login.isEmpty()) {  // the job's directory is on the cluster
    record[QStringLiteral("login")] = login;
    record[QStringLiteral("remote_dir")] = remoteDir;
  }
  return writeFileAtomically(slurmRecordPath(runDir), QJsonDocument(record).toJson(), error);
}

bool moveEarlierJobAside(const QString& runDir, const QString& stamp, EarlierJobFiles* moved,
                         QString* error) {
  *moved = EarlierJobFiles();
  QDir dir(runDir);
  auto fail = [&](const QString& what) {
    putEarlierJobBack(runDir, *moved);
    *moved = EarlierJobFiles();
    if (error) *error = QStringLiteral("cannot move %1 aside for the new job").arg(what);
    return false;
  };
  const QString metrics = RunFollower::metricsDir(runDir);
  if (QFileInfo(metrics).isDir()) {
    const QString aside = QStringLiteral("metrics-before-") + stamp;
    if (!dir.rename(QStringLiteral("metrics"), aside)) return fail(metrics);
    moved->metrics = aside;
  }
  const QStringList logs = rankLogs(runDir);
  if (logs.isEmpty()) return true;
  const QString aside = QStringLiteral("logs-before-") + stamp;
  if (!dir.mkdir(aside)) return fail(dir.filePath(aside));
  moved->logs = aside;
  for (const QString& f : logs)
    if (!dir.rename(f, aside + QLatin1Char('/') + f)) return fail(dir.filePath(f));
  return true;
}

void putEarlierJobBack(const QString& runDir, const EarlierJobFiles& moved) {
  QDir dir(runDir);
  if (!moved.metrics.isEmpty()) dir.rename(moved.metrics, QStringLiteral("metrics"));
  if (moved.logs.isEmpty()) return;
  for (const QString& f : rankLogs(dir.filePath(moved.logs)))
    dir.rename(moved.logs + QLatin1Char('/') + f, f);
  dir.rmdir(moved.logs);
}

}  // namespace ddpdesk
